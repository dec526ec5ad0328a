"""The least a staged ASGI server can do: the bound on Haboob's design for ASGI (issue 19).

    python -m benchmarks.baselines.staged_asgi benchmarks.asgi_apps:hello --bind 127.0.0.1:8000

Haboob's shape with nothing else: one thread polls the sockets and parses with httptools; each
request's scope goes to an asyncio (uvloop) thread in batches, one call_soon_threadsafe per
batch, where it becomes a task; the answers come back in batches, one wake-up per round of the
asyncio loop, and the socket thread sends them. No limits, timeouts, pipelining order, request
bodies, errors, admission control or statistics: what it serves per second is what the design
itself costs, with every duty a server has left out. Not a server to use.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import select
import socket
import sys
import threading
from collections import deque
from email.utils import formatdate
from typing import Any

import httptools
import uvloop

from benchmarks.baselines.launch import announce, listen

_DONE = {"type": "http.request", "body": b"", "more_body": False}


class Connection:
    """One socket and its parser; a complete request's scope goes to ``out``."""

    __slots__ = ("headers", "out", "parser", "sock", "url")

    def __init__(self, sock: socket.socket, out: list[tuple[Connection, dict[str, Any]]]) -> None:
        self.sock, self.out, self.url = sock, out, b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.parser = httptools.HttpRequestParser(self)

    def on_url(self, url: bytes) -> None:
        self.url = url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_message_complete(self) -> None:
        path, _, query = self.url.partition(b"?")
        self.out.append((self, {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": self.parser.get_method().decode(), "scheme": "http",
            "path": path.decode("latin-1"), "raw_path": path, "query_string": query,
            "root_path": "", "headers": self.headers, "client": None, "server": None}))
        self.headers = []


class Application:
    """The asyncio thread: a task per request; answers handed back once per loop round."""

    def __init__(self, app: Any, wake_fd: int) -> None:
        self.app, self.wake_fd = app, wake_fd
        self.loop = uvloop.new_event_loop()
        self.requests: deque[tuple[Connection, dict[str, Any]]] = deque()
        self.answers: deque[tuple[Connection, bytes]] = deque()
        self.scheduled = self.wake_due = False
        self.head_end = b"date: %s\r\nserver: staged\r\n\r\n" % formatdate(usegmt=True).encode()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def put(self, batch: list[tuple[Connection, dict[str, Any]]]) -> None:
        """From the socket thread."""
        self.requests.extend(batch)
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        self.scheduled = False
        while self.requests:
            self.loop.create_task(self._run(*self.requests.popleft()))

    async def _run(self, conn: Connection, scope: dict[str, Any]) -> None:
        parts: list[bytes] = []

        async def receive() -> dict[str, Any]:
            return _DONE

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                parts.append(b"HTTP/1.1 %d OK\r\n" % message["status"])
                parts.extend(b"%s: %s\r\n" % field for field in message.get("headers", ()))
                parts.append(self.head_end)
            else:
                parts.append(message.get("body", b""))

        await self.app(scope, receive, send)
        self.answers.append((conn, b"".join(parts)))
        if not self.wake_due:
            self.wake_due = True
            self.loop.call_soon(self._wake)

    def _wake(self) -> None:
        self.wake_due = False
        with contextlib.suppress(BlockingIOError):    # woken already
            os.write(self.wake_fd, b"\0")


def serve(listener: socket.socket, app: Any) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    application = Application(app, wake_w)
    listener.setblocking(False)
    poller = select.epoll()
    poller.register(listener.fileno(), select.EPOLLIN)
    poller.register(wake_r, select.EPOLLIN)
    connections: dict[int, Connection] = {}
    complete: list[tuple[Connection, dict[str, Any]]] = []
    while True:
        for fd, _ in poller.poll():
            if fd == listener.fileno():
                _accept(listener, poller, connections, complete)
            elif fd == wake_r:
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_r, 4096):
                        pass
            else:
                conn = connections[fd]
                try:
                    data = conn.sock.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    poller.unregister(fd)
                    conn.sock.close()
                    del connections[fd]
                    continue
                conn.parser.feed_data(data)
        if complete:
            application.put(complete)          # (copied into its queue: the list is free)
            complete.clear()
        answers = application.answers
        while answers:
            conn, data = answers.popleft()
            with contextlib.suppress(OSError):
                conn.sock.send(data)


def _accept(listener: socket.socket, poller: select.epoll, connections: dict[int, Connection],
            complete: list[tuple[Connection, dict[str, Any]]]) -> None:
    while True:
        try:
            sock, _ = listener.accept()
        except BlockingIOError:
            return
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connections[sock.fileno()] = Connection(sock, complete)
        poller.register(sock.fileno(), select.EPOLLIN)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("app", help="module:attribute")
    parser.add_argument("--bind", default="127.0.0.1:8000", metavar="HOST:PORT")
    args = parser.parse_args(argv)
    module, _, name = args.app.partition(":")
    app = getattr(importlib.import_module(module), name)
    sys.setswitchinterval(0.001)               # as Haboob sets it
    listener = listen(args.bind)
    announce(listener)
    serve(listener, app)


if __name__ == "__main__":
    main()
