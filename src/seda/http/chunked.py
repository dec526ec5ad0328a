"""The chunked transfer coding of request bodies (RFC 9112 7.1), decoded without I/O.

llhttp parses request heads; bodies are framed here, so that the protocol knows exactly where a
body ends (for pipelining, discarding and trailers) and so that the chunk extensions RFC 9112
allows, with whitespace around ``;`` and ``=``, are accepted where llhttp refuses them.
"""

from __future__ import annotations

import re

_TCHAR = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
_QUOTED = rb'"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t !-~\x80-\xff])*"'
# chunk-size [ chunk-ext ] CRLF, with BWS where 7.1.1 allows it (and before the CRLF, as h11 and
# nginx accept)
_SIZE_LINE = re.compile(
    rb"([0-9A-Fa-f]{1,16})((?:[ \t]*;[ \t]*%s+(?:[ \t]*=[ \t]*(?:%s+|%s))?)*)[ \t]*"
    % (_TCHAR, _TCHAR, _QUOTED))
_FIELD = re.compile(rb"(%s+):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*" % _TCHAR)
_MAX_LINE = 4096            # a chunk-size line, extensions included

# Fields a trailer must not carry (RFC 9110 6.5.1): framing, routing, request modifiers,
# authentication, and the content's own metadata. A sender that puts them there is refused.
FORBIDDEN_TRAILERS = frozenset({
    b"transfer-encoding", b"content-length", b"host", b"content-type", b"content-encoding",
    b"content-range", b"content-location", b"trailer", b"te", b"expect", b"range", b"if-match",
    b"if-none-match", b"if-modified-since", b"if-unmodified-since", b"if-range",
    b"cache-control", b"max-forwards", b"pragma", b"authorization", b"proxy-authorization",
    b"cookie", b"connection", b"keep-alive", b"upgrade", b"proxy-connection",
})

_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


class ChunkError(ValueError):
    """The body is not valid chunked coding, or trailers break a rule: ``status`` is the
    answer (400)."""

    status = 400


class TrailersTooLarge(ChunkError):
    """The trailer section is past a limit of the header section's: too many fields or too
    many bytes, answered 431 as a header section past it is."""

    status = 431


class Dechunker:
    """Decodes one chunked body: ``feed(data)`` returns the body bytes it completes and the
    bytes after the body's end (the next request's), or None while the body goes on.
    ``trailers`` holds the trailer fields once done; ``max_trailer_bytes`` and
    ``max_trailers`` bound them (the limits of the header section: ``Limits.max_header_bytes``
    and ``Limits.max_headers``)."""

    __slots__ = ("_left", "_line", "_state", "max_trailer_bytes", "max_trailers",
                 "trailer_bytes", "trailers")

    def __init__(self, max_trailer_bytes: int = 8192, max_trailers: int = 100) -> None:
        self._state = _SIZE
        self._left = 0                     # bytes of the current chunk still to come
        self._line = b""                   # a line split across packets
        self.trailers: list[tuple[bytes, bytes]] = []
        self.trailer_bytes = 0
        self.max_trailer_bytes = max_trailer_bytes
        self.max_trailers = max_trailers

    def feed(self, data: bytes) -> tuple[list[bytes], bytes | None]:
        """Body pieces found in ``data``, and what follows the body (None: not ended yet)."""
        pieces: list[bytes] = []
        pos, end = 0, len(data)
        while pos < end or self._state == _DONE:
            state = self._state
            if state == _DATA:
                take = min(self._left, end - pos)
                pieces.append(data[pos:pos + take])
                pos += take
                self._left -= take
                if not self._left:
                    self._state = _DATA_END
                continue
            if state == _DONE:
                return pieces, data[pos:]
            line, pos = self._take_line(data, pos)
            if line is None:
                break
            if state == _SIZE:
                self._size(line)
            elif state == _DATA_END:
                if line:
                    raise ChunkError("chunk data is not followed by CRLF")
                self._state = _SIZE
            else:
                self._trailer(line)
        return pieces, None

    def _take_line(self, data: bytes, pos: int) -> tuple[bytes | None, int]:
        """The next CRLF-terminated line (without it), or None and the rest kept for later."""
        nl = data.find(b"\n", pos)
        limit = self.max_trailer_bytes if self._state == _TRAILER else _MAX_LINE
        if nl < 0:
            self._line += data[pos:]
            if len(self._line) > limit:
                raise self._too_long()
            return None, len(data)
        line = self._line + data[pos:nl + 1]
        self._line = b""
        if len(line) > limit + 2:
            raise self._too_long()
        if not line.endswith(b"\r\n"):
            raise ChunkError("chunk line ends in a bare LF")
        return line[:-2], nl + 1

    def _too_long(self) -> ChunkError:
        if self._state == _TRAILER:
            return TrailersTooLarge("trailer section too large")
        return ChunkError("chunk line too long")

    def _size(self, line: bytes) -> None:
        m = _SIZE_LINE.fullmatch(line)
        if m is None:
            raise ChunkError("bad chunk size line")
        self._left = int(m.group(1), 16)
        self._state = _DATA if self._left else _TRAILER

    def _trailer(self, line: bytes) -> None:
        if not line:
            self._state = _DONE
            return
        self.trailer_bytes += len(line) + 2
        if self.trailer_bytes > self.max_trailer_bytes:
            raise TrailersTooLarge("trailer section too large")
        m = _FIELD.fullmatch(line)
        if m is None:
            raise ChunkError("bad trailer field")
        name = m.group(1).lower()              # as the header fields' names are
        if name in FORBIDDEN_TRAILERS:
            raise ChunkError(f"{name.decode()} is not allowed in a trailer")
        self.trailers.append((name, m.group(2)))
        if len(self.trailers) > self.max_trailers:
            raise TrailersTooLarge("too many trailer fields")
