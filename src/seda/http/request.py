"""The event an HTTP server stage emits for each request."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any


class HttpRequest:
    """One parsed request. ``headers`` keeps the raw (name, value) byte pairs in arrival order;
    ``header(name)`` finds one case-insensitively. ``respond(response)`` may be called from any
    thread; responses go out in request order even when answered out of order. A large or
    chunked body arrives as ``stream`` (a BodyReader) while ``body`` stays empty."""

    __slots__ = ("body", "connection", "headers", "keep_alive", "method", "path", "query", "seq",
                 "stream", "target", "version")

    def __init__(self, method: str, target: str, path: str, query: str,
                 headers: list[tuple[bytes, bytes]], body: bytes, version: str,
                 connection: Any, seq: int, keep_alive: bool) -> None:
        self.method, self.target, self.path, self.query = method, target, path, query
        self.headers, self.body, self.version = headers, body, version
        self.connection, self.seq, self.keep_alive = connection, seq, keep_alive
        self.stream: BodyReader | None = None

    def __repr__(self) -> str:
        return f"<HttpRequest {self.method} {self.target} HTTP/{self.version}>"

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (any case), decoded as latin-1; None if absent."""
        key = name.lower().encode("latin-1")
        for k, v in self.headers:
            if k.lower() == key:
                return v.decode("latin-1")
        return None

    def respond(self, response: Any) -> None:
        self.connection.respond(self, response)


class BodyReader:
    """A request body still arriving, read by the application on its own thread.

    The HTTP stage feeds it on the loop thread; ``read`` blocks until data or the end comes.
    Past ``limit`` unread bytes the connection stops reading (TCP slows the client), and it
    resumes once the reader has taken half of that."""

    def __init__(self, pause: Any, resume: Any, limit: int = 256 * 1024) -> None:
        self._pause, self._resume, self.limit = pause, resume, limit
        self._cond = threading.Condition()
        self._pieces: deque[bytes] = deque()
        self._buffered = 0
        self._done = False
        self._error: BaseException | None = None
        self._paused = False

    # loop thread
    def feed(self, data: bytes) -> None:
        with self._cond:
            self._pieces.append(data)
            self._buffered += len(data)
            pause = self._buffered > self.limit and not self._paused
            if pause:
                self._paused = True
            self._cond.notify_all()
        if pause:
            self._pause()

    def finish(self, error: BaseException | None = None) -> None:
        with self._cond:
            self._done, self._error = True, error
            self._cond.notify_all()

    @property
    def paused(self) -> bool:
        """Reading is held back because the application has not taken what it has."""
        return self._paused

    # application thread
    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all that is left if negative); b"" at the end of the body."""
        out, want = [], size if size >= 0 else float("inf")
        with self._cond:
            while want > 0:
                while not self._pieces and not self._done:
                    self._cond.wait()
                if not self._pieces:
                    if self._error is not None:
                        raise ConnectionError("the request body was cut short") from self._error
                    break
                piece = self._pieces.popleft()
                if len(piece) > want:
                    self._pieces.appendleft(piece[int(want):])
                    piece = piece[:int(want)]
                out.append(piece)
                want -= len(piece)
                self._buffered -= len(piece)
                if size >= 0 and out:
                    break                      # like a socket: what is there, not more
            resume = self._paused and self._buffered <= self.limit // 2
            if resume:
                self._paused = False
        if resume:
            self._resume()
        return b"".join(out)

    def readline(self, size: int = -1) -> bytes:
        line = []
        while size < 0 or sum(map(len, line)) < size:
            ch = self.read(1)
            if not ch:
                break
            line.append(ch)
            if ch == b"\n":
                break
        return b"".join(line)

    def readlines(self, hint: int = -1) -> list[bytes]:
        return list(iter(self.readline, b""))

    def __iter__(self) -> Any:
        return iter(self.readline, b"")
