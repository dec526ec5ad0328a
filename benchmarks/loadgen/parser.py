"""Incremental HTTP/1.x response framing: only what it takes to know where a response ends.

A load generator must not spend its core on parsing, so the body is never kept, only counted, and
headers are looked at just for the status, Content-Length, Transfer-Encoding and Connection.
"""

from __future__ import annotations

import re

HEAD, LENGTH, CHUNK_SIZE, CHUNK_DATA, TRAILER, UNTIL_CLOSE, DONE = range(7)
MAX_HEAD = 65536            # a header block larger than this is taken as garbage, not waited for


class ProtocolError(Exception):
    """The bytes received are not an HTTP/1.x response."""


# The three header fields framing depends on, found in one pass over the header block.
FIELDS = re.compile(rb"\r\n(content-length|connection|transfer-encoding):[ \t]*([^\r]*)", re.I)


class ResponseParser:
    """Feed it the bytes of one connection; ``feed`` says when the current response is complete.

    After completion ``status`` and ``keep_alive`` describe the response; ``reset`` readies the
    parser for the next response on the same connection.
    """

    __slots__ = ("buf", "keep_alive", "mode", "received", "remaining", "status")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.buf = b""
        self.mode = HEAD
        self.status = 0
        self.keep_alive = False
        self.remaining = 0
        self.received = 0           # bytes of this response so far, headers included

    def feed(self, data: bytes) -> bool:
        """Consume ``data``; True once the response is complete. Raises ProtocolError."""
        self.received += len(data)
        if self.buf:
            data = self.buf + data
            self.buf = b""
        pos, n = 0, len(data)
        while True:
            mode = self.mode
            if mode in (LENGTH, CHUNK_DATA):
                take = min(self.remaining, n - pos)
                self.remaining -= take
                pos += take
                if self.remaining:
                    return False
                if mode == LENGTH:
                    return self._done(pos < n)
                self.mode = CHUNK_SIZE
                continue
            if mode == UNTIL_CLOSE:
                return False
            if mode == HEAD:
                end = data.find(b"\r\n\r\n", pos)
                if end < 0:
                    self._keep(data, pos)
                    return False
                self._head(data[pos:end])
                pos = end + 4
                if self.mode == DONE:
                    return self._done(pos < n)
                continue
            nl = data.find(b"\n", pos)
            if nl < 0:
                self._keep(data, pos)
                return False
            line = data[pos:nl].strip()
            pos = nl + 1
            if mode == CHUNK_SIZE:
                try:
                    size = int(line.split(b";", 1)[0], 16)
                except ValueError:
                    raise ProtocolError(f"bad chunk size line {line[:40]!r}") from None
                if size:
                    self.remaining = size + 2          # the data and its CRLF
                    self.mode = CHUNK_DATA
                else:
                    self.mode = TRAILER
            elif not line:                            # TRAILER: the empty line ends the message
                return self._done(pos < n)

    def eof(self) -> bool:
        """The peer closed: True if that completes the response (a body delimited by close)."""
        if self.mode == UNTIL_CLOSE:
            self.mode = DONE
            return True
        return False

    def _keep(self, data: bytes, pos: int) -> None:
        self.buf = data[pos:]
        if len(self.buf) > MAX_HEAD:
            raise ProtocolError("header block or chunk line too long")

    def _done(self, extra: bool) -> bool:
        # Bytes past the end of a response we did not pipeline: never reuse that connection.
        if extra:
            self.keep_alive = False
        self.mode = DONE
        return True

    def _head(self, head: bytes) -> None:
        if head[:7] != b"HTTP/1." or head[8:9] != b" " or not head[9:12].isdigit():
            raise ProtocolError(f"bad status line {head[:40]!r}")
        status = int(head[9:12])
        if status < 200:                              # interim response: the real one follows
            return
        length = connection = None
        chunked = False
        for name, value in FIELDS.findall(head):
            if len(name) == 14:                       # content-length
                length = value
            elif len(name) == 10:                     # connection
                connection = value.lower()
            else:                                     # transfer-encoding
                chunked = b"chunked" in value.lower()
        http11 = head[7] == 0x31
        if connection is None:
            keep = http11                             # HTTP/1.1 keeps the connection by default
        else:
            keep = b"close" not in connection and (http11 or b"keep-alive" in connection)
        self.status = status
        if status == 204 or status == 304:
            self.mode = DONE
        elif chunked:
            self.mode = CHUNK_SIZE
        elif length is not None:
            try:
                self.remaining = int(length)
            except ValueError:
                raise ProtocolError(f"bad Content-Length {length[:40]!r}") from None
            self.mode = LENGTH if self.remaining else DONE
        else:
            self.mode = UNTIL_CLOSE
            keep = False
        self.keep_alive = keep
