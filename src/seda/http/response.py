"""HTTP responses: built once into bytes, with a Date header cached per second.

A ``Response`` is what a handler gives back; ``encode`` turns it into what the connection sends:
one ``bytes`` for the head (and the body, when it is bytes), a ``FileSegment`` for a file, or a
stream of chunks for an iterable of unknown length.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from email.utils import formatdate
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias, final

from ..io.events import FileSegment

if TYPE_CHECKING:
    from .._abc import DoneSink
    from ..io.events import WriteDone

# RFC 9110 15's reason phrases where Python 3.11's HTTPStatus has the older ones (RFC 7231's)
_RFC_9110 = {413: "Content Too Large", 414: "URI Too Long", 416: "Range Not Satisfiable",
             422: "Unprocessable Content"}
#: The reason phrase the server sends with each status, unless given another (RFC 9110 15).
PHRASES = {s.value: _RFC_9110.get(s.value, s.phrase) for s in HTTPStatus}
_STATUS = {code: f"{code} {phrase}".encode("latin-1") for code, phrase in PHRASES.items()}
NO_BODY = frozenset({204, 304}) | frozenset(range(100, 200))   # statuses sent without
_WHOLE = (bytes, bytearray, memoryview)

_next_second = 0.0           # when the Date line below goes stale (time.time())
_stale_at = 0.0              # the same moment by time.monotonic(), for Prepared.whole
# This second's Date line, and status -> its HTTP/1.1 status line with that Date: one tuple,
# replaced whole each second, so that no thread pairs one second's Date with another's lines.
_second: tuple[bytes, dict[int, bytes]] = (b"", {})

#: What a response encodes to, for the connection to send: bytes, a file segment (sendfile)
#: or a body still being written.
Piece: TypeAlias = "bytes | FileSegment | StreamBody"
#: What a request is answered with (``HttpRequest.respond``).
Answer: TypeAlias = "Response | Prepared | Switch"
#: A response's header fields: (name, value) pairs, in order.
Headers: TypeAlias = list[tuple[str, str]]


def _renew() -> None:
    global _next_second, _stale_at, _second
    now = time.time()
    second = int(now)
    _second = (b"date: " + formatdate(second, usegmt=True).encode() + b"\r\n", {})
    _next_second = second + 1.0
    _stale_at = time.monotonic() + (_next_second - now)


def _head_start(status: int, reason: str | None = None) -> bytes:
    """The status line and the Date line that begin a response; with the standard phrase,
    made once a second per status."""
    if time.time() >= _next_second:
        _renew()
    date, starts = _second
    if reason is not None:
        return _status_line(status, reason) + date
    return starts.get(status) or _start_line(status, date, starts)


def _start_line(status: int, date: bytes, starts: dict[int, bytes]) -> bytes:
    """The status line with the standard phrase, and ``date``: kept in ``starts``."""
    start = starts[status] = _status_line(status) + date
    return start


def _status_line(status: int, reason: str | None = None) -> bytes:
    """The status line; ``reason`` replaces the standard phrase (or "Unknown" for a code that
    has none). It says HTTP/1.1 to an HTTP/1.0 client too: RFC 9110 2.5 has a server send
    the highest version it conforms to whose major version is the request's (as nginx and
    uvicorn do); what the answer does is still HTTP/1.0's (``Response.encode``)."""
    if reason is None:
        line = _STATUS.get(status)
        if line is not None:
            return b"HTTP/1.1 " + line + b"\r\n"
        reason = "Unknown"
    if not 100 <= status <= 999:
        raise ValueError(f"{status} is not an HTTP status code")
    if "\r" in reason or "\n" in reason or "\0" in reason:
        raise ValueError(f"reason phrase {reason!r} contains a line break")
    return b"HTTP/1.1 %d %s\r\n" % (status, reason.encode("latin-1"))


# Header lines as they may be sent (RFC 9110 5.1, 5.5): each name a token (a space or a colon
# in one would make another field of it), each value free of control characters but HTAB (a
# CR or LF would split the response, and clients refuse a NUL). One pass over the lines joined,
# whose count must be the fields' (a value with a CRLF in it reads as two good lines).
_LINE = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+: [^\x00-\x08\x0a-\x1f\x7f]*\r\n"
_SENDABLE = re.compile(f"(?:{_LINE})*")
SENDABLE_BYTES = re.compile(f"(?:{_LINE})*".encode())


def unsendable(fields: Iterable[tuple[Any, Any]]) -> ValueError:
    """The error for header ``fields`` whose lines are not sendable: it names the first field
    at fault (str or bytes)."""
    for name, value in fields:
        if isinstance(name, str):
            line = f"{name}: {value}\r\n"
            sendable = line.count("\n") == 1 and _SENDABLE.fullmatch(line) is not None
        else:
            bline = b"%s: %s\r\n" % (name, value)
            sendable = bline.count(b"\n") == 1 and SENDABLE_BYTES.fullmatch(bline) is not None
        if not sendable:
            return ValueError(f"header field {name!r}: {value!r} cannot be sent (a name must be "
                              "a token; a value may hold no control character but a tab)")
    return ValueError("header fields cannot be sent")


def _header_bytes(headers: Headers) -> bytes:
    text = "".join([f"{name}: {value}\r\n" for name, value in headers])
    if text.count("\n") != len(headers) or not _SENDABLE.fullmatch(text):
        raise unsendable(headers)
    return text.encode("latin-1")


class Response:
    """Status, headers and a body: ``bytes``, a ``FileBody``, a ``StreamBody`` or an iterable of
    bytes; ``reason`` replaces the standard reason phrase.

    Content-Length is added for bytes and files; an iterable body is sent chunked (HTTP/1.1) or
    delimited by closing the connection (HTTP/1.0) unless a Content-Length header is given.
    A ``Connection: close`` header closes the connection after the response. An HTTP/1.0
    client's answer has an HTTP/1.1 status line (RFC 9110 2.5) and HTTP/1.0's ways: never
    chunked, and ``Connection: keep-alive`` if the connection stays.
    """

    __slots__ = ("body", "headers", "reason", "status")

    def __init__(self, status: int = 200, body: Any = b"",
                 headers: Headers | None = None,
                 content_type: str | None = None, reason: str | None = None) -> None:
        self.status = status
        self.body = body
        self.headers = list(headers or ())
        self.reason = reason
        if content_type is not None:
            self.headers.append(("content-type", content_type))

    def __repr__(self) -> str:
        return f"<Response {self.status}>"

    def header(self, name: str) -> str | None:
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def encode(self, head_only: bool, keep_alive: bool, http10: bool) -> tuple[list[Piece], bool]:
        """What to enqueue on the connection, and whether it may stay open afterwards."""
        status, body = self.status, self.body
        headers, length, connection, dated = self.headers, None, None, False
        for k, v in headers:
            k = k.lower()
            if k == "content-length":
                length = v
            elif k == "connection":
                connection = f"{connection},{v}" if connection else v
            elif k == "date":
                dated = True
        # Date may not repeat (RFC 9110 5.3): one the application gives replaces the server's
        lines = [_status_line(status, self.reason) if dated else _head_start(status, self.reason)]
        dropped: tuple[str, ...] = ()        # (no allocation for the usual answer)
        upgrade = False
        if connection is not None:           # hop-by-hop: the server says it, once
            options = [option.strip() for option in connection.lower().split(",")]
            keep_alive = keep_alive and "close" not in options
            dropped = ("connection",)
            # an Upgrade that advertises a protocol (RFC 9110 7.8): said with its option
            upgrade = "upgrade" in options and any(k.lower() == "upgrade" for k, _ in headers)
        if length is not None and (status == 204 or status < 200):
            length = None                    # none on a 1xx or a 204 (RFC 9110 8.6)
            dropped += ("content-length",)
        if dropped:
            headers = [(k, v) for k, v in headers if k.lower() not in dropped]
        has_length = length is not None
        chunked = False
        whole = isinstance(body, _WHOLE)
        if status in NO_BODY:                # no body, and no length for one (RFC 9110 8.6)
            body, whole = b"", True
        elif whole:
            if not has_length:
                lines.append(b"content-length: %d\r\n" % len(body))
        elif isinstance(body, FileBody):
            if not has_length:
                lines.append(b"content-length: %d\r\n" % body.count)
        elif isinstance(body, StreamBody):
            body.chunked = not has_length and not http10
            if length is not None:
                body.length = int(length)
            elif http10:
                keep_alive = False
            elif body.chunked:
                lines.append(b"transfer-encoding: chunked\r\n")
        elif not has_length:
            if http10:
                keep_alive = False
            else:
                chunked = True
                lines.append(b"transfer-encoding: chunked\r\n")
        if upgrade:
            lines.append(b"connection: upgrade\r\n" if keep_alive and not http10
                         else b"connection: keep-alive, upgrade\r\n" if keep_alive
                         else b"connection: close, upgrade\r\n")
        elif http10 and keep_alive:
            lines.append(b"connection: keep-alive\r\n")
        elif not keep_alive:
            lines.append(b"connection: close\r\n")
        lines += (_header_bytes(headers), b"\r\n")
        if whole:                            # the usual: one bytes, head and body
            if not head_only:
                lines.append(body)
            return [b"".join(lines)], keep_alive
        if head_only:
            return [b"".join(lines)], keep_alive
        if isinstance(body, FileBody):
            segment = FileSegment(body.fd, body.offset, body.count, body.done, body.tag)
            return [b"".join(lines), segment], keep_alive
        if isinstance(body, StreamBody):
            return [b"".join(lines), body], keep_alive
        return [b"".join(lines), *_frames(body, chunked)], keep_alive


class Prepared:
    """A response whose headers were encoded once (a page cache's entry): per request only the
    status line, the Date and, if needed, a Connection header are added."""

    __slots__ = ("_closing", "_closing_date", "_date", "_whole", "body", "head", "status")

    def __init__(self, status: int, head: bytes, body: bytes = b"") -> None:
        self.status, self.head, self.body = status, head, body
        self._date: bytes | None = None       # the Date line ``_whole`` was made with
        self._whole = b""                     # this second's keep-alive HTTP/1.1 answer to GET
        self._closing_date: bytes | None = None   # the same for ``_closing``
        self._closing = b""                   # this second's head of ``closing``

    def encode(self, head_only: bool, keep_alive: bool, http10: bool) -> tuple[list[Piece], bool]:
        if keep_alive and not (http10 or head_only):
            return [self.whole(time.monotonic())], True
        connection = (b"connection: keep-alive\r\n" if http10 and keep_alive
                      else b"" if keep_alive else b"connection: close\r\n")
        body = b"" if head_only else self.body
        start = _head_start(self.status)
        return [b"".join((start, connection, self.head, b"\r\n", body))], keep_alive

    def whole(self, now: float) -> bytes:
        """The answer to a keep-alive HTTP/1.1 GET, the usual request: made once a second.
        ``now``: ``time.monotonic()``, as the caller read it for its batch (a wall clock
        read per request cost as much as the rest of this)."""
        if now >= _stale_at:
            _renew()
        date, starts = _second
        if date is not self._date:             # (each answer of an application: once)
            start = starts.get(self.status) or _start_line(self.status, date, starts)
            self._whole = b"".join((start, self.head, b"\r\n", self.body))
            self._date = date
        return self._whole

    def closing(self, now: float) -> bytes:
        """The answer to an HTTP/1.1 GET that said close (a connection per request), or to an
        HTTP/1.0 one that did not ask to keep it, as ``whole`` makes it, with
        ``connection: close``: its head is made once a second and the body joined to it each
        time (kept once, not twice, for the clients of either kind)."""
        if now >= _stale_at:
            _renew()
        date, starts = _second
        if date is not self._closing_date:
            start = starts.get(self.status) or _start_line(self.status, date, starts)
            self._closing = b"".join((start, b"connection: close\r\n", self.head, b"\r\n"))
            self._closing_date = date
        return self._closing + self.body


class AnswerHead(NamedTuple):
    """An application's response header fields as its stage read them (asgi.py, wsgi.py):
    checked once, kept for equal fields (kept.py), and ready to go out as header lines."""

    fields: tuple[tuple[Any, Any], ...]   # as given (bytes or str), less the hop-by-hop ones
    block: bytes                          # those fields as header lines, each with its CRLF
    length: int | None                    # the declared Content-Length
    special: bool                         # a Connection or Date field: a Response acts on it

    def prepared(self, status: int, body: bytes) -> Prepared | None:
        """The whole answer with ``body``, made from the ready lines (a Content-Length added
        where none was declared); None if the fields need a ``Response``: a Connection or a
        Date field, or a declared Content-Length that is not the body's."""
        length = self.length
        if self.special or length not in (None, len(body)):
            return None
        block = self.block if length is not None else (
            self.block + b"content-length: %d\r\n" % len(body))
        return Prepared(status, block, body)

    def whole(self, status: int, body: bytes, reason: str | None = None) -> Answer:
        """The whole answer with ``body``: from the ready lines where it can be (``prepared``),
        else a Response, which takes a reason phrase, acts on a Connection or Date field and
        sends no body where the status has none. A declared Content-Length is never exceeded:
        a body past it is cut there, and one short of it goes with a close, so that the client
        sees it cut short rather than complete-looking."""
        bodied = status not in NO_BODY
        if reason is None and bodied:
            answer = self.prepared(status, body)
            if answer is not None:
                return answer
        length, headers = self.length, self.headers()
        if length is not None and length != len(body) and bodied:
            body = body[:length]
            if len(body) < length:
                headers.append(("connection", "close"))
        return Response(status, body, headers, reason=reason)

    def head_only(self, status: int, length: int | None, reason: str | None = None) -> Answer:
        """The head alone (a HEAD's answer, or a 204 or 304), with the application's
        Content-Length, else ``length`` if known and not 0 (what the GET's body would have
        been), else no length and no chunked coding either: a HEAD-aware application's empty
        body, or a stream, says nothing of the GET's length (RFC 9110 8.6, RFC 9112 6.1).
        (With a Connection or Date field or a reason phrase, which only a Response takes, a
        length of 0 is said instead; a 204 says none, whatever the application declared.)"""
        bodied = status not in NO_BODY
        if self.special or reason is not None or (status == 204 and self.length is not None):
            headers = self.headers()
            if self.length is None and bodied:
                headers.append(("content-length", str(length or 0)))
            return Response(status, b"", headers, reason=reason)
        block = self.block
        if self.length is None and length and bodied:
            block += b"content-length: %d\r\n" % length
        return Prepared(status, block)

    def headers(self) -> Headers:
        """The fields as a Response takes them (str), in a list of their own."""
        fields = self.fields
        if fields and type(fields[0][0]) is bytes:   # (an ASGI stage's: all bytes)
            return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in fields]
        return list(fields)


NO_HEAD = AnswerHead((), b"", None, False)   # before the application has started its answer


class Tunnel(Protocol):
    """What a connection switched to another protocol (a WebSocket) hands its bytes to, on the
    server's loop thread: ``feed`` (``b""`` once the peer has stopped sending), ``lost`` once
    the connection is gone (or will never be switched), ``stopping`` when the server stops."""

    def feed(self, data: bytes) -> None: ...

    def lost(self) -> None: ...

    def stopping(self) -> None: ...


@final
class Switch:
    """The answer that hands the connection over to another protocol: ``head`` is the whole
    ``101 Switching Protocols`` response, and ``tunnel`` gets every byte the client sends from
    then on. Only the last request read on an HTTP/1.1 connection can be answered so; another
    gets 400 and the tunnel is told it is ``lost``."""

    __slots__ = ("head", "tunnel")
    status = 101

    def __init__(self, head: bytes, tunnel: Tunnel) -> None:
        self.head, self.tunnel = head, tunnel

    def encode(self, head_only: bool, keep_alive: bool, http10: bool) -> tuple[list[Piece], bool]:
        return [self.head], False


_LENGTH_NAMES = frozenset({"content-length", b"content-length"})   # (str: WSGI's; bytes: ASGI's)


def fields_to_send(fields: Iterable[tuple[Any, Any]], hop_by_hop: frozenset[Any],
                   ) -> tuple[tuple[Any, Any], ...]:
    """An application's response fields less those named in ``hop_by_hop`` (the server's own
    to send) and any Content-Length after the first (the caller has checked they agree): a
    field that is not a list may not be sent twice (RFC 9110 5.3)."""
    kept, length_seen = [], False
    for field in fields:
        name = field[0].lower()
        if name in hop_by_hop:
            continue
        if name in _LENGTH_NAMES:
            if length_seen:
                continue
            length_seen = True
        kept.append(field)
    return tuple(kept)


def prepare_head(headers: Iterable[tuple[str, str]]) -> bytes:
    """Header lines for a ``Prepared`` response, checked and encoded once."""
    return _header_bytes(list(headers))


class FileBody:
    """``count`` bytes of an open file from ``offset``, sent with sendfile. The file must stay
    open until the response is sent: ``done`` gets ``WriteDone(conn, tag)`` once it is, or once
    the connection closed without sending it."""

    __slots__ = ("count", "done", "fd", "offset", "tag")

    def __init__(self, fd: int, offset: int, count: int, done: DoneSink | None = None,
                 tag: Any = None) -> None:
        self.fd, self.offset, self.count, self.done, self.tag = fd, offset, count, done, tag


class CloseDescriptor:
    """The ``done`` of a ``FileBody`` whose descriptor was opened for its one response (its
    tag): closed once the response is sent, or abandoned with its connection."""

    @staticmethod
    def enqueue_lossy(ev: WriteDone) -> bool:
        os.close(ev.tag)
        return True


def _frames(body: Iterable[bytes], chunked: bool) -> list[bytes]:
    """An iterable body, all of it (it is answered on the loop thread: it must not block),
    framed as chunks or as it is; the iterable is closed as WSGI's are."""
    try:
        pieces = [bytes(piece) for piece in body if piece]
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    if not chunked:
        return pieces
    return [*(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces), b"0\r\n\r\n"]


@final        # told apart by ``type(item) is StreamBody``: a subclass would not be
class StreamBody:
    """A body written piece by piece from another thread while it is being sent (WSGI).

    The producer calls ``write(piece)`` and finally ``finish()`` (or ``fail()`` if it cannot
    complete the body); ``write`` blocks while more than ``limit`` bytes wait to reach the
    socket, so a slow client slows the producer instead of filling memory, and raises
    ConnectionError once the connection is gone. A producer on an event loop, which must not
    block, calls ``write_nowait`` and, when it says so, waits for ``when_writable``. On the
    loop thread the HTTP connection ``attach``es it when its turn comes and ``take``s what was
    written each time it is woken. With a declared ``length`` (Content-Length), bytes past it
    are dropped and a body that ends short of it counts as failed: the connection must close,
    not wait or desynchronise."""

    def __init__(self, limit: int = 256 * 1024) -> None:
        self.limit = limit
        self.chunked = True
        self.length: int | None = None      # declared by the response: send exactly this
        self.failed = False                 # the producer gave up: the connection must close
        self._cond = threading.Condition()
        self._pieces: deque[bytes] = deque()
        self._queued = 0                    # bytes written, not yet taken
        self._sent = 0                      # bytes taken so far
        self._finished = False
        self._broken = False
        self._signalled = False             # the consumer was woken and has not taken yet
        self._wake: Callable[[], None] | None = None      # asks the loop to take
        self._writable: Callable[[], None] | None = None  # when_writable's callback

    # producer side, any thread
    def write(self, piece: bytes) -> None:
        if not piece:
            return
        with self._cond:
            while self._queued > self.limit and not self._broken:
                self._cond.wait()
            if self._broken:
                raise ConnectionError("the client connection is gone")
            self._pieces.append(bytes(piece))
            self._queued += len(piece)
            wake = self._signal()
        if wake is not None:
            wake()

    def write_nowait(self, piece: bytes) -> bool:
        """``write`` without waiting: False if more than ``limit`` bytes now wait for the
        socket, and the producer should wait for ``when_writable`` before writing more."""
        with self._cond:
            if self._broken:
                raise ConnectionError("the client connection is gone")
            if piece:
                self._pieces.append(bytes(piece))
                self._queued += len(piece)
            room = self._queued <= self.limit
            wake = self._signal() if piece else None
        if wake is not None:
            wake()
        return room

    def when_writable(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once, at once or from the consumer's thread, when the producer
        may write again: the socket has taken what waited, or the connection is gone."""
        with self._cond:
            ready = self._queued <= self.limit or self._broken
            if not ready:
                self._writable = callback
        if ready:
            callback()

    def finish(self) -> None:
        self._end(failed=False)

    def fail(self) -> None:
        """The producer cannot complete the body (the application raised after the head went
        out): what was written goes, then the connection closes."""
        self._end(failed=True)

    def _end(self, failed: bool) -> None:
        with self._cond:
            self._finished = True
            self.failed = self.failed or failed
            wake = self._signal()
        if wake is not None:
            wake()

    def _signal(self) -> Callable[[], None] | None:
        """The wake-up to call (outside the lock), once per take: many small writes cost the
        loop one callback, not one each."""
        if self._signalled or self._wake is None:
            return None
        self._signalled = True
        return self._wake

    # consumer side, loop thread
    def attach(self, wake: Callable[[], None]) -> None:
        with self._cond:
            self._wake = wake
            self._signalled = True
        wake()

    def take(self) -> tuple[list[bytes], bool]:
        """Framed pieces written so far, and whether the body is complete (see ``failed``)."""
        with self._cond:
            pieces, self._pieces = list(self._pieces), deque()
            self._queued = 0
            self._signalled = False
            finished = self._finished
            self._cond.notify_all()
            writable, self._writable = self._writable, None
        if writable is not None:
            writable()
        if self.length is not None:
            pieces = self._within_length(pieces, self.length)
            if finished and self._sent < self.length:
                self.failed = True
        else:
            self._sent += sum(map(len, pieces))
        if self.chunked:
            framed = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces]
            if finished and not self.failed:
                framed.append(b"0\r\n\r\n")
            return framed, finished
        return pieces, finished

    def _within_length(self, pieces: list[bytes], length: int) -> list[bytes]:
        kept, room = [], length - self._sent
        for piece in pieces:
            if room <= 0:
                break
            piece = piece[:room]
            kept.append(piece)
            room -= len(piece)
        self._sent = length - room
        return kept

    @property
    def gone(self) -> bool:
        """The connection went away before the body was sent."""
        return self._broken

    def broken(self) -> None:
        """The connection went away: release a blocked producer."""
        with self._cond:
            self._broken = True
            self._cond.notify_all()
            writable, self._writable = self._writable, None
        if writable is not None:
            writable()

# -- helpers for the statuses a server needs ----------------------------------------------------

def _text(status: int, text: str | None = None, headers: Headers | None = None) -> Response:
    body = (text if text is not None else PHRASES.get(status, "Unknown")).encode() + b"\n"
    return Response(status, body, headers, "text/plain; charset=utf-8")


def error(status: int, text: str | None = None, headers: Headers | None = None) -> Response:
    """A short plain-text answer with ``status`` (its standard phrase unless ``text``)."""
    return _text(status, text, headers)


def ok(body: bytes = b"", content_type: str = "text/plain; charset=utf-8",
       headers: Headers | None = None) -> Response:
    return Response(200, body, headers, content_type)


def redirect(location: str, permanent: bool = False, keep_method: bool = False) -> Response:
    """301/302, or 308/307 when the method must be kept (``keep_method``)."""
    status = (308 if permanent else 307) if keep_method else (301 if permanent else 302)
    return _text(status, f"See {location}", [("location", location)])


def not_modified(headers: Headers | None = None) -> Response:
    return Response(304, b"", headers)


def partial_content(body: Any, start: int, end: int, total: int,
                    content_type: str | None = None, headers: Headers | None = None) -> Response:
    """206 for the inclusive byte range ``start``-``end`` of ``total``."""
    return Response(206, body, [("content-range", f"bytes {start}-{end}/{total}"),
                                *(headers or ())], content_type)


def bad_request(text: str | None = None) -> Response:
    return _text(400, text)


def forbidden() -> Response:
    return _text(403)


def not_found() -> Response:
    return _text(404)


def method_not_allowed(allow: Iterable[str]) -> Response:
    return _text(405, None, [("allow", ", ".join(allow))])


def request_timeout() -> Response:
    return _text(408)


def payload_too_large() -> Response:
    return _text(413)


def uri_too_long() -> Response:
    return _text(414)


def range_not_satisfiable(total: int) -> Response:
    return _text(416, None, [("content-range", f"bytes */{total}")])


def header_fields_too_large() -> Response:
    return _text(431)


def server_error() -> Response:
    return _text(500)


def not_implemented() -> Response:
    return _text(501)


def service_unavailable(retry_after: int = 1) -> Response:
    """503 with Retry-After: the answer to a request the service sheds under load."""
    return _text(503, None, [("retry-after", str(retry_after))])


def version_not_supported() -> Response:
    return _text(505)
