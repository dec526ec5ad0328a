"""SPED, single-process event-driven (the Flash paper's term): one thread runs one epoll loop
over every connection, and reads files inline with blocking calls.

    python -m benchmarks.baselines.sped --root DIR --bind 127.0.0.1:8000

Flash without its helper processes. Connections are accepted as soon as the listening socket
is readable, all that are pending; each is non-blocking, its requests parsed as bytes arrive and
answered in order, and its output written as the socket takes it (reading stops while output is
waiting, so a slow reader cannot make the server buffer without end). A read that has to wait
for the disk stops the whole server, which is the cost AMPED (``amped.py``) pays helpers to
avoid; with the file set in the page cache SPED never waits.
"""

from __future__ import annotations

import argparse
import contextlib
import selectors
import socket
from collections import deque
from collections.abc import Callable

import httptools

from benchmarks.baselines.launch import announce, listen, parse_args
from benchmarks.baselines.static_http import (
    BAD_REQUEST,
    RECV_SIZE,
    Request,
    RequestParser,
    respond,
)

READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


class Connection:
    """One client: its parser, the requests not yet answered, and the output not yet sent."""

    __slots__ = ("closed", "closing", "interest", "out", "parser", "requests", "server", "sock",
                 "waiting")

    def __init__(self, server: EventLoopServer, sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.parser = RequestParser()
        self.requests: deque[Request | None] = deque()     # None: bytes that were not HTTP
        self.out: deque[memoryview] = deque()
        self.interest = READ
        self.waiting = False        # a request is out for its file (AMPED's helpers)
        self.closing = False        # the last response is queued: close once it is sent
        self.closed = False

    def on_event(self, mask: int) -> None:
        if self.closed:             # closed earlier in the same round
            return
        if mask & WRITE:
            self.flush()
        if mask & READ and not self.closed:
            self.read()

    def read(self) -> None:
        try:
            data = self.sock.recv(RECV_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        try:
            self.requests.extend(self.parser.feed(data))
        except httptools.HttpParserError:
            self.requests.append(None)
        self.advance()

    def advance(self) -> None:
        """Answer the requests in order until one has to wait for its file, then write."""
        while self.requests and not self.waiting and not self.closing:
            req = self.requests.popleft()
            if req is None:
                self.send(BAD_REQUEST, keep_alive=False)
                break
            response = self.server.respond(self, req)
            if response is None:
                self.waiting = True
                break
            self.send(response, req.keep_alive)
        self.flush()

    def resume(self, response: bytes, keep_alive: bool) -> None:
        """The answer to the request that was waiting for its file."""
        self.waiting = False
        self.send(response, keep_alive)
        self.advance()

    def send(self, response: bytes, keep_alive: bool) -> None:
        self.out.append(memoryview(response))
        self.closing = not keep_alive

    def flush(self) -> None:
        out = self.out
        while out:
            try:
                n = self.sock.send(out[0])
            except BlockingIOError:
                break
            except OSError:
                self.close()
                return
            if n < len(out[0]):
                out[0] = out[0][n:]
                break
            out.popleft()
        if not out and self.closing:
            self.close()
            return
        interest = WRITE if out else READ
        if interest != self.interest:
            self.interest = interest
            self.server.selector.modify(self.sock, interest, self.on_event)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.server.selector.unregister(self.sock)
            self.sock.close()


class EventLoopServer:
    """The loop: accepts, and dispatches readiness to connections (and, in AMPED, helpers)."""

    def __init__(self, sock: socket.socket, root: str) -> None:
        self.root = root
        self.listener = sock
        sock.setblocking(False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(sock, READ, self.accept)
        self._wake_r, self._wake_w = socket.socketpair()
        self.selector.register(self._wake_r, READ, self._stop)
        self._running = False

    def respond(self, conn: Connection, req: Request) -> bytes | None:
        """The response to ``req``, or None if it will come later through ``conn.resume``."""
        return respond(req, self.root)

    def accept(self, mask: int) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:         # none left (EAGAIN), or out of descriptors: try next round
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(self, sock)
            self.selector.register(sock, READ, conn.on_event)

    def serve_forever(self) -> None:
        """Run the loop until ``stop``."""
        self._running = True
        while self._running:
            for key, mask in self.selector.select():
                key.data(mask)

    def stop(self) -> None:
        """Make ``serve_forever`` return; safe from another thread."""
        self._wake_w.send(b"x")

    def _stop(self, mask: int) -> None:
        self._running = False

    def close(self) -> None:
        """Close every socket the loop holds; after ``serve_forever`` has returned."""
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()
        self.selector.close()
        self._wake_w.close()


Factory = Callable[[socket.socket, argparse.Namespace], EventLoopServer]


def main(argv: list[str] | None = None,
         make: Factory = lambda sock, args: EventLoopServer(sock, args.root),
         doc: str = __doc__, add: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """Run an event-loop server from the command line; AMPED's main passes its own ``make``,
    ``doc`` and options."""
    args = parse_args(doc, add, argv)
    sock = listen(args.bind, args.backlog)
    server = make(sock, args)
    announce(sock)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    finally:
        server.close()


if __name__ == "__main__":
    main()
