"""WebSocket clients for tests that watch pings: what a ``websockets`` client receives and
answers by itself, and a client that answers nothing."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator, Sequence

from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Event, Request
from wsproto.extensions import Extension

from tests.helpers import WAIT


class Frames(logging.Handler):
    """What a ``websockets`` client logs of the frames it receives (<) and sends (>): its
    debug log is the library's public way to watch pings it answers by itself."""

    def __init__(self, pings: int) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.pinged = threading.Event()            # set once ``pings`` pings have come
        self.pings = pings

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if self.count("< PING") >= self.pings:
            self.pinged.set()

    def count(self, prefix: str) -> int:
        return sum(line.startswith(prefix) for line in self.lines)


def client_logger(frames: Frames) -> logging.Logger:
    """A logger for ``connect(..., logger=)`` that tells ``frames`` and nobody else."""
    logger = logging.getLogger(f"tests.wsclient.{id(frames)}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(frames)
    return logger


class RawClient:
    """A WebSocket client (wsproto over a socket) that answers nothing on its own: a peer that
    stopped answering pings without closing its connection. A context manager: the socket
    closes on exit."""

    def __init__(self, url: str, extensions: Sequence[Extension] = ()) -> None:
        port = int(url.rsplit(":", 1)[1])
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.sock.sendall(self.ws.send(Request(host="127.0.0.1", target="/",
                                               extensions=list(extensions))))
        assert isinstance(next(self.events()), AcceptConnection)

    def events(self, timeout: float = WAIT) -> Iterator[Event]:
        """What the server sends, as it comes; TimeoutError if nothing for ``timeout``."""
        self.sock.settimeout(timeout)
        while True:
            yield from self.ws.events()
            data = self.sock.recv(65536)
            self.ws.receive_data(data or None)

    def send(self, event: Event) -> None:
        self.sock.sendall(self.ws.send(event))

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
