"""AMPED, asymmetric multi-process event-driven: SPED's loop, plus helper processes that wait
for the disk so the loop never does (the Flash web server).

    python -m benchmarks.baselines.amped --root DIR --bind 127.0.0.1:8000 [--helpers 4]

For a GET the loop first reads the file with ``preadv(RWF_NOWAIT)``, which returns the data if
the page cache holds all of it and fails (or reads short) rather than wait for the disk. On a
miss the request waits while a helper, over a socket pair, reads the file through (bringing it
into the page cache) and answers one byte; the loop then reads it again, from memory, and
sends. Flash's helpers did the same with ``mmap`` and ``mincore``. As in SPED, opening the file
and looking at its metadata stay inline (Flash also sent pathname translation to helpers).
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
from collections import deque

from benchmarks.baselines import sped
from benchmarks.baselines.sped import READ, Connection, EventLoopServer
from benchmarks.baselines.static_http import (
    Reply,
    Request,
    encode,
    error,
    file_reply,
    plan,
    read,
)

HELPERS = 4


def read_nowait(path: str) -> bytearray | None:
    """The whole file if it is all in the page cache, None if reading it would wait for the
    disk; raises OSError if it cannot be opened."""
    fd = os.open(path, os.O_RDONLY)
    try:
        buf = bytearray(os.fstat(fd).st_size)
        try:
            n = os.preadv(fd, [buf], 0, os.RWF_NOWAIT)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EOPNOTSUPP):
                return None
            raise
        return buf if n == len(buf) else None
    finally:
        os.close(fd)


def _page_in(path: bytes) -> None:
    """Read a file through and drop the bytes: what is left is the file in the page cache."""
    try:
        with open(path, "rb", buffering=0) as f:
            while f.read(1 << 20):
                pass
    except OSError:
        pass                    # the loop finds out for itself, and answers 404


def _helper_loop(sock: socket.socket) -> None:
    """A helper's life: paths arrive NUL-terminated; each is answered with one byte once read."""
    pending = b""
    while chunk := sock.recv(65536):
        *paths, pending = (pending + chunk).split(b"\0")
        for path in paths:
            _page_in(path)
            sock.sendall(b"\0")


class Helper:
    """One helper process, and the requests waiting for it in the order it was asked."""

    def __init__(self) -> None:
        mine, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:                    # the helper: never returns into the server's code
            try:
                # Keep only our end: a copy of the listener or of another helper's socket
                # would keep that open after the server closes it. Ctrl-C is the server's.
                fd = theirs.fileno()
                os.closerange(3, fd)
                os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX"))
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                _helper_loop(theirs)
            finally:
                os._exit(0)
        theirs.close()
        self.pid = pid
        self.sock = mine
        self.waiting: deque[tuple[Connection, Request, str]] = deque()

    def ask(self, conn: Connection, req: Request, path: str) -> None:
        # A blocking send of a short line: the socket pair's buffer holds thousands of them.
        self.sock.sendall(os.fsencode(path) + b"\0")
        self.waiting.append((conn, req, path))

    def close(self) -> None:
        self.sock.close()               # the helper sees end of file and exits
        os.waitpid(self.pid, 0)


class AmpedServer(EventLoopServer):
    def __init__(self, sock: socket.socket, root: str, helpers: int = HELPERS) -> None:
        super().__init__(sock, root)
        self.helpers = [Helper() for _ in range(helpers)]
        for h in self.helpers:
            self.selector.register(h.sock, READ, lambda mask, h=h: self.on_helper(h))

    def respond(self, conn: Connection, req: Request) -> bytes | None:
        step = plan(req.method, req.target, self.root)
        if isinstance(step, str):
            try:
                body = read_nowait(step)
            except OSError:
                step = error(404)
            else:
                if body is None:
                    min(self.helpers, key=lambda h: len(h.waiting)).ask(conn, req, step)
                    return None
                step = file_reply(step, body)
        return self._encode(req, step)

    def on_helper(self, helper: Helper) -> None:
        done = len(helper.sock.recv(4096))
        if not done:
            raise RuntimeError(f"AMPED helper {helper.pid} died")
        for _ in range(done):
            conn, req, path = helper.waiting.popleft()
            if not conn.closed:
                body = read(path)
                reply = error(404) if body is None else file_reply(path, body)
                conn.resume(self._encode(req, reply), req.keep_alive)

    @staticmethod
    def _encode(req: Request, reply: Reply) -> bytes:
        return encode(reply, head=req.method == b"HEAD", keep_alive=req.keep_alive)

    def close(self) -> None:
        for h in self.helpers:
            self.selector.unregister(h.sock)
            h.close()
        super().close()


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--helpers", type=int, default=HELPERS,
                        help=f"helper processes (default {HELPERS})")


def main(argv: list[str] | None = None) -> None:
    sped.main(argv, lambda sock, args: AmpedServer(sock, args.root, args.helpers), __doc__,
              _options)


if __name__ == "__main__":
    main()
