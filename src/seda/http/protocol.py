"""HTTP/1.x, server side, as a state machine without I/O (h11's shape): bytes in, events out.

``ServerProtocol`` is one connection's protocol state. The socket side (``server.py``) hands it
what arrived (``receive``), the answers the application gave (``respond``), news from a body
being streamed out (``pump``) and the passing of time (``tick``); each call returns the events
that follow, in order: ``HttpRequest`` for the application, ``bytes`` / ``FileSegment`` /
``StreamBody`` to send, ``Logged`` for an access log, ``PAUSE`` or ``RESUME`` reading, and
``CLOSE`` or ``ABORT``. The clock is an argument (``now``: ``time.monotonic()``'s reading, by
which ready answers are fresh and a cached answer's Date is renewed); nothing here reads the
time, touches a socket or starts a thread, so every case is tested in memory.

Each half of the connection has a state, and every change of state goes through one table,
``TRANSITIONS``, so the order of requests, answers, failure and close is decided in one place:

    client (what it sends)                    server (what we send)
    IDLE --begin--> HEAD --head--> BODY        IDLE --owe--> WAITING --stream--> STREAMING
    BODY --end--> IDLE                         WAITING, STREAMING --sent--> WAITING
    BODY --abandon--> DISCARD --end--> IDLE    WAITING, STREAMING --caught_up--> IDLE
    any --stop--> DONE                         any --close--> CLOSED

llhttp (through httptools) parses each request head and nothing else: bodies are framed here
(Content-Length, or chunked by ``chunked.py``), so the protocol always knows where a request
ends. Requests pipelined before a failure or a ``Connection: close`` are answered, in order,
before the connection closes; nothing received after one runs.
"""

from __future__ import annotations

import logging
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

import httptools

from ..io.events import FileSegment
from . import response as responses
from .answers import ReadyAnswer
from .body import BodyError, BodyReader
from .chunked import ChunkError, Dechunker
from .limits import Limits
from .request import HttpRequest
from .response import Answer, Piece, Response, StreamBody, Switch, Tunnel

log = logging.getLogger("seda")

# -- the states and the one table of their transitions ------------------------------------------

IDLE, HEAD, BODY, DISCARD, DONE = "IDLE", "HEAD", "BODY", "DISCARD", "DONE"
WAITING, STREAMING, CLOSED = "WAITING", "STREAMING", "CLOSED"

TRANSITIONS: dict[str, dict[str, dict[str, str]]] = {
    "client": {
        IDLE: {"begin": HEAD, "stop": DONE},
        HEAD: {"head": BODY, "stop": DONE},
        BODY: {"end": IDLE, "abandon": DISCARD, "stop": DONE},
        DISCARD: {"end": IDLE, "stop": DONE},
        DONE: {"stop": DONE},
    },
    "server": {
        IDLE: {"owe": WAITING, "close": CLOSED},
        WAITING: {"owe": WAITING, "stream": STREAMING, "sent": WAITING, "caught_up": IDLE,
                  "close": CLOSED},
        STREAMING: {"owe": STREAMING, "sent": WAITING, "caught_up": IDLE, "close": CLOSED},
        CLOSED: {"owe": CLOSED, "close": CLOSED},
    },
}
_CLIENT, _SERVER = TRANSITIONS["client"], TRANSITIONS["server"]


class ProtocolError(RuntimeError):
    """A transition the table does not allow: a bug in this module, never the client's doing."""


class _Signal:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


CLOSE = _Signal("CLOSE")      # close the connection once what was sent before it is out
# CLOSE, when the client has said it sends nothing more (its last request said close and came
# whole): nothing to wait for, so the socket side closes without lingering, as nginx does
HANG_UP = _Signal("HANG_UP")
ABORT = _Signal("ABORT")      # drop the connection now: a response cannot be completed
PAUSE = _Signal("PAUSE")      # stop reading: nothing more is wanted for now
RESUME = _Signal("RESUME")    # read again

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_EMPTY_LINE = b"\r\n"
# Header fields the protocol itself reads; any other role makes a request not plain (its answer
# may depend on more than its target, so no ready answer may serve it).
_OTHER, _HOST, _LENGTH, _CODING, _EXPECT, _CONNECTION, _UPGRADE, _CONDITION = range(8)
_ROLES = {b"host": _HOST, b"content-length": _LENGTH, b"transfer-encoding": _CODING,
          b"expect": _EXPECT, b"connection": _CONNECTION, b"upgrade": _UPGRADE,
          **dict.fromkeys((b"if-match", b"if-none-match", b"if-modified-since",
                           b"if-unmodified-since", b"if-range", b"range"), _CONDITION)}
# RFC 9112 3.2 / RFC 3986 3.2.2: uri-host [ ":" port ]
_VALID_HOST = re.compile(rb"(?:\[[0-9A-Za-z:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]*)(?::[0-9]*)?")
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
# Heads answered from a ready answer, kept whole (ServerProtocol.heads): at most so many, each
# at most so long (8 MiB in all). A client sends the same head for the same file on every
# request (a browser's differ with the target, or a cookie), so the table wants about a head
# per file in use: on a SPECweb99 mix of 14,760 files, 512 heads were emptied as soon as
# filled and most requests were parsed (a third more CPU per request than with 4096).
_HEADS_KEPT = 4096
_HEAD_KEPT_MAX = 2048
# Heads parsed, kept whole (ServerProtocol.parsed) for the requests no ready answer serves (an
# application's): fewer, as they carry more (a browser's cookies, an API client's token).
_PARSED_KEPT = 1024


class _Head:
    """What the protocol took from a request head that came whole: taken again, without
    llhttp or the loop over its fields, when the same bytes come again (as a client's do on
    every request of a keep-alive connection). ``framing`` is None for a chunked body."""

    __slots__ = ("expect", "framing", "headers", "keep", "method", "parts", "plain", "url",
                 "version")

    def __init__(self, protocol: ServerProtocol) -> None:
        framing = protocol._framing
        self.method, self.url, self.version = protocol._method, protocol._url, protocol._version
        self.headers = tuple(protocol._headers)
        self.keep, self.plain, self.expect = protocol._keep, protocol._plain, protocol._expect
        self.framing = framing if type(framing) is int else None
        self.parts: _Parts | None = None       # for an HttpRequest: made by the first


#: What an HttpRequest takes from its head: method, target, path, query, header fields and
#: whether any is a proxy's X-Forwarded-*.
_Parts: TypeAlias = "tuple[str, str, str, str, tuple[tuple[bytes, bytes], ...], bool]"


def _request_parts(method: bytes, url: bytes, headers: Iterable[tuple[bytes, bytes]]) -> _Parts:
    """The target split into path and query (``#fragment`` dropped); an absolute-form target's
    host replaces the Host field (RFC 9112 3.2.2). Whether a proxy's fields are there is
    looked at here, once for a head that comes again, rather than for every request by those
    who may believe them (forwarded.py)."""
    target = url.decode("latin-1")
    if "#" in target:                          # a fragment is the client's business
        target = target.partition("#")[0]
    if target[:1] == "/":
        path, _, query = target.partition("?")
    elif target == "*":
        path, query = target, ""
    else:                                      # absolute-form: http://host/path?query
        try:
            parsed = httptools.parse_url(target.encode("latin-1"))
        except httptools.HttpParserInvalidURLError:
            raise _Refuse(responses.bad_request("bad request target")) from None
        path = (parsed.path or b"/").decode("latin-1")
        query = (parsed.query or b"").decode("latin-1")
        if parsed.host:                        # the target's host, not the Host field
            host = parsed.host if parsed.port is None else b"%s:%d" % (parsed.host,
                                                                        parsed.port)
            headers = [(k, host if k == b"host" else v) for k, v in headers]
    fields = tuple(headers)
    proxied = any(k[:12] == b"x-forwarded-" for k, _ in fields)
    return method.decode("ascii"), target, path, query, fields, proxied


class Logged:
    """For an access log: a request, the status it got and the bytes sent (head and body;
    a streamed body counts as its head only)."""

    __slots__ = ("length", "request", "status", "time")

    def __init__(self, request: HttpRequest, status: int, length: int) -> None:
        self.request, self.status, self.length = request, status, length
        self.time = time.time()


class Switched:
    """The connection now belongs to ``tunnel`` (a ``Switch`` answer went out): every byte that
    comes from now on is the tunnel's."""

    __slots__ = ("tunnel",)

    def __init__(self, tunnel: Tunnel) -> None:
        self.tunnel = tunnel


class Unsent:
    """A response that will never be sent: whatever its body holds (a file descriptor, a
    producer, a tunnel) must be let go."""

    __slots__ = ("response",)

    def __init__(self, response: Answer) -> None:
        self.response = response


class ServerStats:
    """What every connection of one server counts, for ``rt.stats()`` and the status page."""

    __slots__ = ("aborted", "dropped", "refused", "shed", "statuses", "timeouts")

    def __init__(self) -> None:
        self.statuses: defaultdict[int, int] = defaultdict(int)   # responses sent, by status
        self.shed = 0                          # requests the application's stage refused (503)
        self.timeouts = 0                      # 408s and 500s for answers that never came
        self.refused = 0                       # connections over max_connections
        self.dropped = 0                       # requests whose answer never went: the client left
        self.aborted = 0                       # responses cut off: the application failed


class _Refuse(Exception):
    """A request the protocol must refuse with ``response``, then close."""

    def __init__(self, response: Response) -> None:
        self.response = response


#: What the protocol's calls return, in order (see the module's docstring).
Output: TypeAlias = "HttpRequest | Piece | Logged | Unsent | Switched | _Signal"
#: An answer waiting for its turn: (response, request or None, head only, keep-alive, HTTP/1.0).
_Entry: TypeAlias = tuple[Answer, HttpRequest | None, bool, bool, bool]


def _length(items: list[Piece]) -> int:
    return sum(item.count if type(item) is FileSegment else len(item) for item in items
               if type(item) is not StreamBody)


class ServerProtocol:
    """One connection's HTTP/1.0 and 1.1, server side. ``connection`` is what requests carry
    back to the socket side (``request.respond``); ``answers`` are the ready answers for plain
    GETs (see answers.py); with ``log`` every response also yields a ``Logged`` event."""

    __slots__ = (
        "_body", "_body_size", "_discarded", "_expect", "_framing", "_hang_up", "_head_bytes",
        "_head_limit", "_headers", "_host", "_keep", "_method", "_now", "_pipelined", "_plain",
        "_read_mark", "_reader", "_request", "_start", "_tail", "_taken", "_upgrade", "_url",
        "_version", "answers", "client", "connection", "continue_seq", "deadline", "heads",
        "idle_since", "last_seq", "limits", "log", "next_seq", "out", "owed", "parsed",
        "parser", "peer", "ready", "scheme", "send_seq", "server", "stats", "stopping",
        "streaming", "wake", "wants_input",
    )

    def __init__(self, limits: Limits | None = None, connection: Any = None, *,
                 answers: dict[bytes, ReadyAnswer] | None = None,
                 heads: dict[bytes, tuple[bytes, str, bool]] | None = None,
                 parsed: dict[bytes, _Head] | None = None, log: bool = False,
                 peer: Any = None, scheme: str = "http", stats: ServerStats | None = None,
                 wake: Callable[[], None] = lambda: None, now: float = 0.0) -> None:
        self.limits = limits or Limits()
        self.connection, self.answers, self.log = connection, answers, log
        # Heads that got a ready answer, whole, as they came (-> target, version, keep-alive),
        # shared by every connection of a server with the same ``answers`` and limits: the
        # same bytes parse to the same request, so a head seen before skips llhttp and the
        # fields and goes straight to its answer, while that answer is fresh.
        self.heads = {} if heads is None else heads
        # Every other head that came whole, as they came (-> what was taken from it), shared
        # the same way: the same bytes parse to the same request.
        self.parsed = {} if parsed is None else parsed
        self.wake = wake                      # from an application thread: a body reader has
        #                                       room again (the socket side calls ``drained``)
        self.wants_input = True               # as last told with PAUSE / RESUME
        self.peer, self.scheme = peer, scheme
        self.stats = stats or ServerStats()
        # made for the first head, and after a body
        self.parser: httptools.HttpRequestParser | None = None
        self.client = self.server = IDLE
        self.next_seq = 0                     # number of the next request read
        self.send_seq = 0                     # number of the next response to send
        self.last_seq: int | None = None      # the response after which we close
        self.owed: dict[int, HttpRequest] = {}   # requests with the application, by seq
        self.ready: dict[int, _Entry] = {}    # answers waiting for those before them
        self.streaming: tuple[StreamBody, bool] | None = None   # a body going out, and keep
        self.continue_seq = -1                # the request owed a 100 Continue
        self._read_mark = 0                   # what the body's reader had given at the last tick
        self.stopping = False                 # the server is shutting down
        self.deadline = 0.0                   # for the head or the body now being read
        self.idle_since = self._now = now
        self.out: list[Output] = []
        self._tail = b""                      # the end of what was fed of an unfinished head
        self._head_bytes = 0                  # bytes fed of the head being read
        self._start = b""                     # what arrived as the head began: its request line
        self._head_limit = self.limits.max_request_line + self.limits.max_header_bytes + 4
        self._pipelined = self.limits.max_pipelined
        self._host = b""                      # the last Host value found valid
        # the request being read: set as its head is parsed (_head, on_url,
        # on_header, on_headers_complete) and its body read (_start_body)
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._taken: _Head | None = None       # the head kept in ``parsed``, if it was
        self._expect = self._plain = self._upgrade = False
        self._keep = True
        self._hang_up = False                  # the client said close: see HANG_UP
        self._method = b"GET"
        self._version = "1.1"
        self._framing: int | Dechunker = 0     # bytes of body still to come, or chunked
        self._body: list[bytes] = []
        self._body_size = self._discarded = 0
        self._reader: BodyReader | None = None    # the body of a request dispatched early
        self._request: HttpRequest | None = None  # that request

    # -- transitions --------------------------------------------------------------------------

    def _client(self, event: str) -> None:
        try:
            self.client = _CLIENT[self.client][event]
        except KeyError:
            raise ProtocolError(f"client side: no {event!r} from {self.client}") from None

    def _server(self, event: str) -> None:
        try:
            self.server = _SERVER[self.server][event]
        except KeyError:
            raise ProtocolError(f"server side: no {event!r} from {self.server}") from None

    def _reconsider(self) -> None:
        """Tell the socket side (PAUSE / RESUME) if whether it should read has changed: not
        once the client side is done, not while ``max_pipelined`` requests wait for answers,
        not while a body's reader is full. Called where one of those can change, so that the
        common request costs no question at all."""
        want = (self.client is not DONE and self.next_seq - self.send_seq < self._pipelined
                and (self._reader is None or not self._reader.paused))
        if want is not self.wants_input:
            self.wants_input = want
            self.out.append(RESUME if want else PAUSE)

    def drained(self, now: float) -> list[Output]:
        """A body's reader has room again (the application read from it)."""
        out = self.out = []
        self._now = now
        self._reconsider()
        return out

    # -- bytes in -----------------------------------------------------------------------------

    def receive(self, data: bytes, now: float) -> list[Output]:
        """Bytes from the client; ``b""`` when it has finished sending."""
        out = self.out = []
        self._now = now
        if not data:
            self._end_of_input()
            return out
        if self.client is IDLE and len(data) <= _HEAD_KEPT_MAX and self.heads:
            seen = self.heads.get(data)        # the usual: the packet is one head seen before
            if seen is not None and self._answer_at_once(*seen):
                if not seen[2]:
                    self._said_close()
                return out
        try:
            while data:
                client = self.client
                if client is IDLE or client is HEAD:
                    data = self._head(data)
                elif client is BODY or client is DISCARD:
                    data = self._body_data(data)
                else:                          # DONE: nothing after it runs
                    if self._hang_up:          # but it sends more: let its input end first
                        self._linger()
                    break
        except _Refuse as refusal:
            self._refuse(refusal.response)
        return out

    def _head(self, data: bytes) -> bytes:
        """Feed llhttp up to the end of a head (CRLF CRLF); return what follows it."""
        # a request begins (seen here, where heads are framed: no callback from llhttp needed);
        # the empty lines a client may send before a request begin none (RFC 9112 2.2), and
        # are dropped here rather than fed to llhttp, which would begin the request unseen
        began = self.client is IDLE
        if began:
            if data[0] in _EMPTY_LINE:
                data = data.lstrip(_EMPTY_LINE)
                if not data:
                    return b""
            end = data.find(b"\r\n\r\n")
            whole = data[:end + 4] if 0 <= end <= _HEAD_KEPT_MAX - 4 else None
            if whole is not None:
                # a head seen before: with a ready answer (one of several pipelined in a
                # packet, see receive), or parsed before
                seen = self.heads.get(whole) if self.heads else None
                if seen is not None and self._answer_at_once(*seen):
                    if not seen[2]:
                        self._said_close()
                    return data[end + 4:]
                known = self.parsed.get(whole)
                if known is not None:          # (whole: no head deadline; a body sets its own)
                    self._take(known)
                    return self._head_complete(whole, True, data[end + 4:])
            self.client = _CLIENT[IDLE]["begin"]
            self._taken = None
            self._start = data
            self.deadline = self._now + self.limits.header_timeout
            self._url = b""
            self._headers = []
            self._expect = False
            if end < 0:
                line = data.find(b"\r\n")
                if line >= 0 and data.count(b" ", 0, line) < 2:
                    # HTTP/0.9's request line names no version ("GET /"), and its client
                    # sends no empty line after it: llhttp would wait for one until the
                    # header timeout. Refused at once, as it is with the empty line.
                    raise _Refuse(responses.version_not_supported())
        else:
            end = data.find(b"\r\n\r\n")
            whole = None
        cut = end + 4 if end >= 0 and not self._tail else self._cut(data)
        if cut == len(data):                   # (usually the whole packet is one head)
            chunk, rest = data, b""
        else:
            chunk, rest = data[:cut], data[cut:]
        self._head_bytes += len(chunk)
        if self._head_bytes > self._head_limit:
            raise _Refuse(responses.header_fields_too_large())
        parser = self.parser
        if parser is None:
            parser = self.parser = httptools.HttpRequestParser(self)
            # HTTP/1.2 is served as 1.1 and 2.0 or 3.0 get 505 (RFC 9110 2.5), not a 400
            parser.set_dangerous_leniencies(lenient_version=True)
        try:
            parser.feed_data(chunk)
        except httptools.HttpParserUpgrade:
            self.parser = None                 # the head was fine; an Upgrade is ignored
        except (httptools.HttpParserError, ValueError, UnicodeDecodeError) as exc:
            from_start = self._head_bytes == len(chunk)
            raise self._refusal(exc, chunk if from_start else b"") from None
        if self.client is not BODY:            # the head goes on in the next packet
            if self._head_bytes - len(self._url) > self.limits.max_header_bytes:
                # its fields are past the limit already (as on_headers_complete counts them:
                # llhttp has given the target so far): 431 now, not 408 at the deadline
                raise _Refuse(responses.header_fields_too_large())
            return rest
        self._head_bytes = 0
        # (a head read while stopping is not kept: it says close because we stop)
        if whole is not None and not (self._upgrade or self.stopping):
            parsed = self.parsed
            if len(parsed) >= _PARSED_KEPT:    # (full of heads seen once: start again)
                parsed.clear()
            self._taken = parsed[whole] = _Head(self)
        return self._head_complete(chunk, began, rest)

    def _head_complete(self, head: bytes, whole: bool, rest: bytes) -> bytes:
        """The head has been read (``whole``: in one piece, ``head``): on to its body, or to
        its answer; returns what follows it in ``rest`` (a chunked body may be read from it)."""
        if self._framing:
            return self._start_body(rest)
        self._body = ()  # type: ignore[assignment]  # no body: a constant, no list per request
        self._complete(head if whole else b"")
        return rest

    def _take(self, head: _Head) -> None:
        """The request is ``head``'s, as on_url, on_header and on_headers_complete would have
        found it."""
        self.client = BODY
        self._taken = head
        self._url, self._headers = head.url, head.headers  # type: ignore[assignment]  # read only
        self._method, self._version, self._expect = head.method, head.version, head.expect
        self._keep, self._plain, self._upgrade = head.keep, head.plain, False
        framing = head.framing
        self._framing = self._dechunker() if framing is None else framing

    def _dechunker(self) -> Dechunker:
        """The decoder of a chunked body, its trailers held to the header section's limits."""
        limits = self.limits
        return Dechunker(limits.max_header_bytes, limits.max_headers)

    def _cut(self, data: bytes) -> int:
        """Where the head ends in ``data`` (``len(data)`` if it goes on), for a head in pieces:
        its CRLF CRLF may straddle two of them."""
        tail = self._tail
        if tail:
            probe = tail + data
            end = probe.find(b"\r\n\r\n")
            if end >= 0:
                self._tail = b""
                return end + 4 - len(tail)
            self._tail = probe[-3:]
        else:
            self._tail = data[-3:]
        return len(data)

    @staticmethod
    def _refusal(exc: Exception, start: bytes) -> _Refuse:
        """What to answer a head llhttp (or a callback of ours) could not accept; ``start``:
        the bytes fed from the start of the request, if known."""
        if isinstance(exc, httptools.HttpParserCallbackError):
            # httptools wraps what our callbacks raise; the original is the context
            refusal = exc.__context__
            if isinstance(refusal, _Refuse):
                return refusal
            log.error("http: parser callback failed", exc_info=refusal)
            return _Refuse(responses.server_error())
        if isinstance(exc, httptools.HttpParserInvalidMethodError):
            # a method that is a token but unknown to llhttp is 501; anything else, 400
            token = start.lstrip(b"\r\n").split(b" ", 1)[0]
            if _TOKEN.fullmatch(token) is not None:
                return _Refuse(responses.not_implemented())
        return _Refuse(responses.bad_request())

    # -- llhttp's callbacks (heads only) --------------------------------------------------------

    def on_url(self, url: bytes) -> None:
        self._url += url                       # almost always in one piece
        if len(self._url) > self.limits.max_request_line:
            raise _Refuse(responses.uri_too_long())

    def on_header(self, name: bytes, value: bytes) -> None:
        # Names in lower case, once, as h11 and ASGI have them (RFC 9110 5.1: case does not
        # matter). llhttp drops the whitespace before a value; what trails it is not part of
        # it either (RFC 9110 5.5).
        self._headers.append((name.lower(), value.rstrip(b" \t")))

    def on_headers_complete(self) -> None:
        self.client = _CLIENT[self.client]["head"]
        parser: httptools.HttpRequestParser
        parser, limits = self.parser, self.limits  # type: ignore[assignment]  # it calls us: set
        headers = self._headers
        # the head's bytes so far, less the request line's: its fields
        if (len(headers) > limits.max_headers
                or self._head_bytes - len(self._url) > limits.max_header_bytes):
            raise _Refuse(responses.header_fields_too_large())
        self._method = method = parser.get_method()
        # The version as the request line spells it, after the method and the target that
        # llhttp found there: httptools' get_http_version() formats a new string on every
        # call, the dearest line of a cached file's request. A head that came in pieces may
        # not have its request line in the first: then ask.
        at = len(method) + len(self._url) + 2
        spelled, self._start = self._start[at:at + 8], b""
        if spelled == b"HTTP/1.1":
            version = "1.1"
        elif spelled == b"HTTP/1.0":
            version = "1.0"
        else:
            version = parser.get_http_version()
            if version != "1.1" and version != "1.0":
                if version[:2] != "1.":
                    raise _Refuse(responses.version_not_supported())
                version = "1.1"                # a later 1.x is served as the 1.1 it includes
        self._version = version
        if method == b"CONNECT":               # not a proxy
            raise _Refuse(responses.not_implemented())
        host: bytes | None = None
        length = 0
        plain = True
        chunked = upgrade = close = keep_alive = switch = False
        for k, v in headers:                   # one pass; a field's role looked up once
            role = _ROLES.get(k, _OTHER)
            if role is _OTHER:
                continue
            if role is _HOST:
                if host is not None:
                    raise _Refuse(responses.bad_request("HTTP/1.1 needs exactly one Host header"))
                host = v
                if v != self._host:            # the same client sends the same Host
                    if _VALID_HOST.fullmatch(v) is None:
                        raise _Refuse(responses.bad_request("invalid Host header"))
                    self._host = v
            elif role is _LENGTH:
                length = int(v)                # llhttp has checked that it is a number
            elif role is _CODING:
                codings = [c.strip() for c in v.lower().split(b",")]
                if codings[-1] != b"chunked":      # no way to tell where it ends (9112 6.3)
                    raise _Refuse(responses.bad_request("chunked must be the last coding"))
                if len(codings) > 1:               # gzip, chunked: a coding we cannot undo
                    raise _Refuse(responses.not_implemented())
                chunked = True
            elif role is _EXPECT:
                if v.lower() != b"100-continue":
                    raise _Refuse(Response(417, b"", None))
                self._expect = version == "1.1"
            elif role is _CONNECTION:
                options = [c.strip() for c in v.lower().split(b",")]
                close = close or b"close" in options       # in any field (RFC 9112 9.6)
                keep_alive = keep_alive or b"keep-alive" in options
                switch = switch or b"upgrade" in options
            elif role is _UPGRADE:             # (a ready answer may ignore it: RFC 9110 7.8)
                upgrade = True
            else:
                plain = False
        if host is None and version == "1.1":
            raise _Refuse(responses.bad_request("HTTP/1.1 needs exactly one Host header"))
        if length > limits.max_body:
            raise _Refuse(responses.payload_too_large())
        self._plain = plain and self.answers is not None and method == b"GET"
        # HTTP/1.1 keeps the connection unless it says close (RFC 9112 9.3). HTTP/1.0 with
        # Transfer-Encoding: the framing is suspect; close after it (9112 6.1).
        keep = not close and (version == "1.1" or keep_alive)
        self._keep = keep and not self.stopping and not (chunked and version == "1.0")
        if self._keep and not parser.should_keep_alive():
            # llhttp would close (a Proxy-Connection: close, which we ignore as nginx does)
            # and refuse whatever came next on this parser: the next head gets a fresh one,
            # as it does when taken from ``parsed``
            self.parser = None
        self._framing = self._dechunker() if chunked else length
        # RFC 9110 7.8: an Upgrade is ignored in HTTP/1.0, and is not for this hop unless
        # Connection names it; then the request is an ordinary one
        self._upgrade = upgrade and switch and version == "1.1"

    # -- bodies ----------------------------------------------------------------------------------

    def _start_body(self, rest: bytes) -> bytes:
        """The head is complete and a body follows (``rest``: what came after the head in its
        packet): read it, buffered, or streamed to the application. A body with a length
        streams if it is large; a chunked one unless it ends in ``rest`` (the usual small
        upload, sent with its head), or once it grows large. Returns what follows the body
        in ``rest``."""
        framing = self._framing
        self.parser = None                     # llhttp saw the head only: a new one for the next
        self._body = []
        self._body_size = self._discarded = 0
        self.deadline = self._now + self.limits.body_timeout
        if self._expect:
            self.continue_seq = self.next_seq
            if self.send_seq == self.next_seq and self.server is not STREAMING:
                self._continue()
        if type(framing) is int:
            if framing > self.limits.stream_body_over:
                self._stream_body()
            return rest
        # Chunked: a body still arriving once its head's packet is read may be a stream (events
        # sent as they happen, a full-duplex exchange): the application gets each piece as it
        # comes, not all of them at the end. (With Expect, the 100 Continue went first.)
        if rest:
            rest = self._body_data(rest)       # (it may end the body, or stream it if large)
        if self.client is BODY and self._reader is None:
            self._stream_body()
        return rest

    def _continue(self) -> None:
        self.out.append(_CONTINUE)
        self.continue_seq = -1
        self.deadline = self._now + self.limits.body_timeout

    def _stream_body(self) -> None:
        """Hand the request over now and its body as it arrives (what came so far first)."""
        self._reader = reader = BodyReader(self.wake)
        self._feed_reader(reader, self._body)
        self._body = []
        self._request = self._make_request(b"")
        self._request.stream = self._reader
        self._dispatch(self._request)

    def _feed_reader(self, reader: BodyReader, pieces: list[bytes]) -> None:
        for piece in pieces:
            reader.feed(piece)
        if reader.paused and self.wants_input:   # it holds enough unread: stop reading
            self._reconsider()

    def _body_data(self, data: bytes) -> bytes:
        """Body bytes of the request being read; returns what follows its end."""
        framing = self._framing
        if type(framing) is int:
            if len(data) > framing:
                pieces, rest = [data[:framing]], data[framing:]
            else:
                pieces, rest = [data], b""
            self._framing = framing - len(pieces[0])
            done = not self._framing
        else:
            try:
                pieces, after = framing.feed(data)  # type: ignore[union-attr]  # not int: a Dechunker
            except ChunkError as exc:            # (431 for trailers past a limit, else 400)
                raise _Refuse(responses.error(exc.status, str(exc))) from None
            done, rest = after is not None, after or b""
        size = sum(map(len, pieces))
        self.deadline = self._now + self.limits.body_timeout
        if self.client is DISCARD:
            self._discarded += size
            if self._discarded > self.limits.max_discard:
                self._close()
                return b""
        else:
            self._body_size += size
            if self._body_size > self.limits.max_body:
                raise _Refuse(responses.payload_too_large())
            reader = self._reader
            if reader is not None:
                self._feed_reader(reader, pieces)
            else:
                self._body += pieces
                if self._body_size > self.limits.stream_body_over and not done:
                    self._stream_body()        # a chunked body grew large
        if done:
            self._complete()
        return rest

    def _complete(self, head: bytes = b"") -> None:
        """The request's message has ended: answer or dispatch it (unless it went already).
        ``head``: the request's whole head, if it came in one piece and no body followed."""
        if self.client is DISCARD:             # the body of a request answered already
            if self.stopping:                  # its answer was the last (see stop)
                self._stop(self.next_seq - 1)
            else:
                self._client("end")
            return
        framing = self._framing
        request, reader = self._request, self._reader
        self.continue_seq = -1                 # the body is here: no 100 Continue needed
        if reader is not None:                 # dispatched early: its body is complete now
            assert request is not None         # (set with the reader)
            if type(framing) is Dechunker:
                request.trailers = framing.trailers
            reader.finish()
            request.owed_since = self._now     # (the response timeout counts from here)
            self._reader = self._request = None
            seq = request.seq
            if not self.wants_input:
                self._reconsider()
        elif self._plain and self._answer_ready(head):
            seq = self.next_seq - 1
        else:
            # (one piece, or none: joined without a copy)
            request = self._make_request(b"".join(self._body))
            if type(framing) is Dechunker:
                request.trailers = framing.trailers
            seq = request.seq
            self._dispatch(request)
        if self.client is BODY:                # not closed meanwhile
            self.client = _CLIENT[BODY]["end"]  # inline _client(): the hot path
            if not self._keep or self.stopping:   # it said close: nothing after it runs
                # (unless we stop, or its framing was suspect, chunked in HTTP/1.0: then the
                # client may send more, and the close waits for its input to end)
                self._hang_up = not self.stopping and type(framing) is int
                self._stop(seq)

    def _make_request(self, body: bytes) -> HttpRequest:
        """The request read so far, with the next sequence number."""
        head = self._taken
        parts = head.parts if head is not None else None
        if parts is None:
            parts = _request_parts(self._method, self._url, self._headers)
            if head is not None:
                head.parts = parts
        method, target, path, query, headers, proxied = parts
        seq = self.next_seq
        self.next_seq += 1
        return HttpRequest(
            method, target, path, query, list(headers), body, self._version, self.connection,
            seq, self._keep, self.peer, self.scheme, self._upgrade, proxied)

    def _dispatch(self, request: HttpRequest) -> None:
        request.owed_since = self._now
        self.owed[request.seq] = request
        self.server = _SERVER[self.server]["owe"]         # inline _server(): the hot path
        self.out.append(request)
        if self.next_seq - self.send_seq >= self._pipelined:
            self._reconsider()

    def _answer_ready(self, head: bytes) -> bool:
        """Answer a plain GET from the ready answers, if one is fresh for its target (see
        answers.py); False sends the request the usual way. ``head``: its whole head, to be
        kept in ``heads`` if the answer goes at once (else ``b""``)."""
        url, keep = self._url, self._keep
        if self._answer_at_once(url, self._version, keep):
            if head and len(head) <= _HEAD_KEPT_MAX:
                heads = self.heads
                if len(heads) >= _HEADS_KEPT:  # (full of heads seen once: start again)
                    heads.clear()
                heads[head] = (url, self._version, keep)
            return True                        # (if it said close, _complete closes)
        ready = self.answers.get(url)  # type: ignore[union-attr]  # _plain implies answers
        if ready is None or (self._now >= ready.fresh_until and ready.lapsed(self._now)):
            return False
        # fresh, but answers are owed before it (or the access log wants its request)
        ready.hits += 1
        seq = self.next_seq
        request = self._make_request(b"") if self.log else None   # (its seq is ``seq``)
        if request is None:
            self.next_seq += 1
        self._server("owe")
        if self.next_seq - self.send_seq >= self._pipelined:
            self._reconsider()
        self._answer(seq, (ready.response, request, False, keep, self._version == "1.0"))
        return True

    def _said_close(self) -> None:
        """The head just answered at once from ``heads`` said close: as ``_complete`` would
        have it, nothing after it is read, and a client that sends nothing more is hung up on
        (HANG_UP; bytes after it make it wait for the client's input to end, see _linger)."""
        self._hang_up = True
        self._stop(self.send_seq - 1)

    def _answer_at_once(self, target: bytes, version: str, keep: bool = True) -> bool:
        """Send the ready answer for ``target`` to the request just read, if it is fresh and
        nothing is owed before it (nor an access log wants the request): the table's "owe"
        then "caught_up", and _send's work for a prepared answer, in one step. For a head
        kept in ``heads`` (``receive``) as for one just parsed (``_answer_ready``)."""
        ready = self.answers.get(target)  # type: ignore[union-attr]  # only with answers
        # (once the server stops, the client side is DONE: no head is looked up)
        if (ready is None or (self._now >= ready.fresh_until and ready.lapsed(self._now))
                or self.next_seq != self.send_seq or self.server is not IDLE or self.log):
            return False
        self._version = version
        ready.hits += 1
        response = ready.response
        if version == "1.1":
            self.out.append(response.whole(self._now) if keep else response.closing(self._now))
        elif not keep:                         # HTTP/1.0's answer is HTTP/1.1's (RFC 9110 2.5)
            self.out.append(response.closing(self._now))
        else:                                  # (and says keep-alive when it keeps)
            self.out += response.encode(False, True, True)[0]
        self.stats.statuses[response.status] += 1
        self.next_seq = self.send_seq = self.send_seq + 1
        self.idle_since = self._now
        return True

    # -- answers out ----------------------------------------------------------------------------

    def respond(self, request: HttpRequest, response: Answer, now: float) -> list[Output]:
        """The application's answer to ``request``. An answer too late (after a timeout or a
        close) or given twice comes back as ``Unsent``, for its resources to be released."""
        out = self.out = []
        self._now = now
        seq = request.seq
        entry = (response, request, request.method == "HEAD", request.keep_alive,
                 request.version == "1.0")
        if seq == self.send_seq and self.server is WAITING:   # its turn (_answer, inlined)
            if self._send(seq, entry) and self.ready:
                self._send_waiting()
        elif (seq <= self.send_seq or seq in self.ready or self.server is CLOSED):
            out.append(Unsent(response))       # late, twice, or its turn taken by a stream
        else:
            self.ready[seq] = entry            # after those before it
        return out

    def shed(self, request: HttpRequest, now: float) -> list[Output]:
        """The application's stage refused ``request`` (overload): 503 at once."""
        self.stats.shed += 1
        return self.respond(request, responses.service_unavailable(), now)

    def _answer(self, seq: int, entry: _Entry) -> None:
        """Send the answer for ``seq`` now if its turn has come, and those that waited for it;
        else keep it until then."""
        if seq != self.send_seq or self.server is STREAMING:
            self.ready[seq] = entry
        elif self._send(seq, entry) and self.ready:
            self._send_waiting()

    def _send_waiting(self) -> None:
        """Send the answers that waited for the one just sent, while they follow in order."""
        ready = self.ready
        while (entry := ready.pop(self.send_seq, None)) is not None:
            if not self._send(self.send_seq, entry):
                return

    def _send(self, seq: int, entry: _Entry) -> bool:
        """Emit one response; True if it went whole and the connection goes on."""
        response, request, head_only, keep, http10 = entry
        if seq == self.last_seq:
            keep = False
        if self.continue_seq == seq:           # answered before the client sent the body
            self.continue_seq = -1
            keep = False
        elif self._request is not None and self._request.seq == seq and not self._drainable():
            keep = False
        if type(response) is Switch:
            if self._switchable(seq, http10):
                return self._switch(seq, response, request)
            self.out.append(Unsent(response))
            response, keep = responses.bad_request("cannot switch protocols here"), False
        try:
            items, keep = response.encode(head_only, keep, http10)
        except Exception:
            log.exception("http: cannot encode the response to %r", request)
            response = responses.server_error()
            items, keep = response.encode(head_only, False, http10)
        self.stats.statuses[response.status] += 1
        self.owed.pop(seq, None)
        out = self.out
        if self.log and request is not None:   # lossy on the socket side: never holds us up
            out.append(Logged(request, response.status, _length(items)))
        last = items[-1]
        if type(last) is StreamBody:           # the rest follows as the producer writes it
            out.append(items[0])
            out.append(last)
            self.streaming = (last, keep)
            self._server("stream")
            return False
        out += items
        return self._sent(keep)

    def _switchable(self, seq: int, http10: bool) -> bool:
        """Can the answer to ``seq`` hand the connection over? Only if it is the last request
        read, over HTTP/1.1, and nothing more has come (a client must wait for the 101)."""
        return (seq == self.next_seq - 1 and not http10 and self.client is IDLE
                and not self._tail and not self.stopping and seq != self.last_seq)

    def _switch(self, seq: int, switch: Switch, request: HttpRequest | None) -> bool:
        """Send the 101 and hand the connection to the tunnel: no more HTTP on it."""
        self.stats.statuses[101] += 1
        self.owed.pop(seq, None)
        out = self.out
        if self.log and request is not None:
            out.append(Logged(request, 101, len(switch.head)))
        out.append(switch.head)
        out.append(Switched(switch.tunnel))
        self.send_seq = seq + 1
        self._client("stop")
        self._server("close")
        self.parser = None
        return False

    def _drainable(self) -> bool:
        """The body of the request being answered is still arriving: can it be read and
        dropped (up to ``max_discard``) so that the connection stays open?"""
        framing = self._framing
        # (a chunked body's rest is not known: it is drained while under max_discard)
        return type(framing) is not int or framing <= self.limits.max_discard

    def _sent(self, keep: bool) -> bool:
        """The response at ``send_seq`` has gone whole: move on; True if the connection does."""
        seq = self.send_seq
        self.send_seq = seq + 1
        request = self._request
        if request is not None and request.seq == seq:   # answered before its body was read
            self._reader.abandon()  # type: ignore[union-attr]  # set with the request
            self._reader = self._request = None
            if self.client is BODY:
                self._client("abandon")
        if not keep:
            self._close()
            return False
        if self.send_seq == self.next_seq:     # every request read so far is answered
            if self.client is DONE:
                self._close()
                return False
            self.server = _SERVER[self.server]["caught_up"]    # inline _server(): hot path
            self.idle_since = self._now
        else:
            self._server("sent")
        if self.continue_seq == self.send_seq:
            self._continue()
        if not self.wants_input:               # the pipelining window may have reopened
            self._reconsider()
        return True

    def pump(self, now: float) -> list[Output]:
        """The body being streamed out has news (the socket side was woken by its producer)."""
        out = self.out = []
        self._now = now
        if self.streaming is None:
            return out
        stream, keep = self.streaming
        pieces, finished = stream.take()
        out += pieces
        if finished:
            self.streaming = None
            if stream.failed:
                self.stats.aborted += 1
                # What the application wrote goes; then a framed body (chunked, or with a
                # length) visibly ends short of its last chunk or its length when the
                # connection closes, as nginx leaves one its upstream failed. A body framed by
                # the close itself would look complete: that connection is dropped instead.
                self._close(CLOSE if stream.chunked or stream.length is not None else ABORT)
            elif self._sent(keep) and self.ready:
                self._send_waiting()
        return out

    # -- endings ----------------------------------------------------------------------------------

    def _refuse(self, response: Response) -> None:
        """A request that breaks the protocol or a limit: answer it after every request before
        it, then close. If its body was already streaming to the application, the application
        learns it from ``wsgi.input`` and its own answer is the last."""
        status = response.status
        if self._reader is not None:
            self._reader.finish(BodyError(status, response.body.decode("latin-1").strip()))
            seq = self._request.seq  # type: ignore[union-attr]  # set with the reader
            self._reader = self._request = None
            self._stop(seq)
        elif self.client is DISCARD:           # its answer went already
            self._close()
        else:
            seq = self.next_seq
            self.next_seq += 1
            self._stop(seq)
            self._server("owe")
            self._answer(seq, (response, None, False, False, self._version == "1.0"))

    def _stop(self, last: int) -> None:
        """Read nothing more; the answer to ``last`` is the final one."""
        self.client = _CLIENT[self.client]["stop"]   # inline _client(): every connection's end
        self.parser = None
        if self.last_seq is None or last < self.last_seq:
            self.last_seq = last
        if self.send_seq == self.next_seq and self.streaming is None:
            self._close()
        else:
            self._reconsider()                 # (PAUSE: nothing is read while answers wait)

    def _close(self, how: _Signal = CLOSE) -> None:
        """Close the connection after what was emitted (CLOSE) or at once (ABORT)."""
        if self.client is not DONE:
            self._client("stop")
        if self._reader is not None:
            self._reader.finish(BodyError(400, "the connection closed"))
            self._reader = self._request = None
        self.parser = None
        # No PAUSE before the close: the socket side reads on only to drain the client's
        # input while it lingers, and a pause it would undo costs it a system call or two.
        self.wants_input = False
        if self.server is not CLOSED:
            self.server = _SERVER[self.server]["close"]   # inline _server(), as in _stop
            self.out.append(HANG_UP if how is CLOSE and self._hang_up else how)

    def _linger(self) -> None:
        """The client sent more after saying close: the close waits for its input to end, lest
        our last answer be lost to the reset a close over unread input makes (RFC 9112 9.6)."""
        self._hang_up = False
        out = self.out
        if HANG_UP in out:
            out[out.index(HANG_UP)] = CLOSE

    def _end_of_input(self) -> None:
        """The client has finished sending: answer what it asked, then close."""
        if self._reader is not None:           # a streamed body cut short
            self._reader.finish(BodyError(400, "the client stopped sending the body"))
            seq = self._request.seq  # type: ignore[union-attr]  # set with the reader
            self._reader = self._request = None
        else:                                  # a request cut short is not answered
            seq = self.next_seq - 1
        if self.client is not DONE:
            self._stop(seq)
        elif self.send_seq == self.next_seq and self.streaming is None:
            self._close()

    def stop(self, now: float) -> list[Output]:
        """The server is shutting down: finish the request being read and answer every request,
        then close; take no new request."""
        out = self.out = []
        self._now = now
        self.stopping = True
        if self.client is IDLE:
            self._stop(self.next_seq - 1)
        return out

    def tick(self, now: float) -> list[Output]:
        """Time has passed: the head, body, keep-alive and response timeouts."""
        out = self.out = []
        self._now = now
        if self.server is CLOSED:
            return out
        limits, client = self.limits, self.client
        owed = self.owed.get(self.send_seq)
        if (owed is not None and not owed.patient
                and now - self._owed_since(owed, now) > limits.response_timeout):
            self.stats.timeouts += 1            # the application never answered: we do
            log.error("http: no response to a request within %.0f s", limits.response_timeout)
            self._stop(self.send_seq)
            self._answer(self.send_seq, (responses.server_error(), None, False, False,
                                         self._version == "1.0"))
        elif ((client is HEAD or client is BODY or client is DISCARD) and now > self.deadline
              and self.continue_seq == -1
              and not (self._reader is not None and self._reader.paused)):
            self.stats.timeouts += 1
            self._refuse(responses.request_timeout())
        elif (client is IDLE and self.server is IDLE
              and now - self.idle_since > limits.keepalive_timeout):
            self._close()
        return out

    def _owed_since(self, request: HttpRequest, now: float) -> float:
        """Since when the application owes ``request`` its answer: its hand-over, or the end
        of a body it streams. While that body still comes the body timeout counts instead,
        and this starts again (at ``now``) at every look that finds the reader not full, or
        read from since the last look: only an application that stopped reading is owing."""
        reader = self._reader
        if request is self._request and reader is not None and (
                not reader.paused or reader.taken != self._read_mark):
            self._read_mark = reader.taken
            request.owed_since = now
        return request.owed_since

    def connection_lost(self) -> list[Answer]:
        """The socket is gone: the responses that will never be sent (to release what they
        hold, as for ``Unsent``). A body being read or sent is ended with an error."""
        self.stats.dropped += self.next_seq - self.send_seq
        self.client, self.server = DONE, CLOSED
        ready = self.ready
        unsent = [entry[0] for entry in ready.values()] if ready else []
        ready.clear()
        if self.streaming is not None:
            self.streaming[0].broken()
            self.streaming = None
        if self._reader is not None:
            self._reader.finish(BodyError(400, "the client connection is gone"))
            self._reader = self._request = None
        self.parser = None                     # it holds us: freed now, not by the collector
        return unsent
