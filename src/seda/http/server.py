"""The HTTP server stage (thesis 5.7): HTTP/1.0 and 1.1 over the socket layer.

Packets from the socket layer are parsed by httptools (llhttp, strict) on the event-loop thread;
each complete request becomes an ``HttpRequest`` event on the user's sink. Responses come back
through ``HttpRequest.respond`` and leave in request order. Every limit answers with its status
and closes the connection; no input can crash the stage.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import httptools

from ..io.events import Closed, Connected, Failed, FileSegment, Packet, WriteDone
from ..io.sockets import SocketLayer
from ..sink import SinkError
from ..stage import EventHandler
from . import response as responses
from .answers import ReadyAnswer
from .request import BodyReader, HttpRequest
from .response import Response, StreamBody, _Chunks

log = logging.getLogger("seda")

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
# Headers the server stage itself looks at; any other role makes a request not plain (its
# answer may depend on more than its target).
_HOST, _LENGTH, _EXPECT, _CONDITION = range(4)
_ROLES = {b"host": _HOST, b"content-length": _LENGTH, b"expect": _EXPECT,
          **dict.fromkeys((b"if-match", b"if-none-match", b"if-modified-since",
                           b"if-unmodified-since", b"if-range", b"range"), _CONDITION)}
_TICK = 1.0                          # seconds between sweeps for timeouts


@dataclass(frozen=True)
class Limits:
    """What a client may send, and how long it may take. Sizes in bytes, times in seconds."""

    max_request_line: int = 8192       # 414 past it
    max_header_bytes: int = 65536      # 431 past it
    max_headers: int = 100             # 431 past it
    max_body: int = 10 * 2**20         # 413 past it
    stream_body_over: int = 65536      # larger bodies go to the application as they arrive
    header_timeout: float = 10.0       # 408: from a request's first byte to its last header
    body_timeout: float = 60.0         # 408: from the last header to the end of the body
    keepalive_timeout: float = 15.0    # an idle keep-alive connection is closed after this
    response_timeout: float = 60.0     # a request the application never answers gets 500
    max_connections: int = 16384       # past it a new connection gets 503 and is closed
    max_pipelined: int = 32            # unanswered requests before reading pauses


class Logged:
    """For an access log: a request, the status it got and the bytes sent (head and body;
    a streamed body counts as its head only)."""

    __slots__ = ("length", "request", "status", "time")

    def __init__(self, request: HttpRequest, status: int, length: int) -> None:
        self.request, self.status, self.length = request, status, length
        self.time = time.time()


def _length(items: list) -> int:
    return sum(item.count if type(item) is FileSegment else len(item) for item in items
               if type(item) is not StreamBody)


class _Refuse(Exception):
    """Raised from a parser callback: answer ``response`` and close."""

    def __init__(self, response: Response) -> None:
        self.response = response


class HttpConnection:
    """Per-connection protocol state; also the httptools callback object."""

    __slots__ = (
        "_body", "_body_size", "_expect", "_header_size", "_headers", "_plain", "_stream", "_url",
        "_version", "conn", "deadline", "dispatched", "idle_since", "next_seq", "parser", "paused",
        "ready", "send_seq", "server", "state", "streaming",
    )

    def __init__(self, server: HttpServer, conn: Any) -> None:
        self.server, self.conn = server, conn
        self.parser: Any = None               # made on the first packet
        self.state = "idle"                   # idle | headers | body | eof | broken
        self.deadline = 0.0                   # for the headers or the body now being read
        self.idle_since = time.monotonic()
        self.next_seq = 0                     # sequence number of the next request parsed
        self.send_seq = 0                     # sequence number of the next response to send
        self.ready: dict[int, tuple[list, bool]] = {}   # answered out of order: waiting
        self.dispatched: dict[int, float] = {}          # unanswered request -> when it was sent
        self.streaming: tuple[StreamBody, bool] | None = None   # a body being sent, and keep
        self.paused = False
        self._url = b""                           # the request target, as it arrives
        self._headers: list[tuple[bytes, bytes]] = []
        self._header_size = 0
        self._body: list[bytes] = []
        self._body_size = 0
        self._expect = False
        self._plain = False                       # a GET that a ready answer may answer
        self._version = "1.1"                     # of the request being read
        self._stream: BodyReader | None = None    # the body of a request dispatched early

    # -- httptools callbacks (loop thread) ---------------------------------------------------------

    def on_message_begin(self) -> None:
        self.state = "headers"
        self.deadline = time.monotonic() + self.server.limits.header_timeout
        self._url = b""
        self._headers, self._body = [], []
        self._header_size = self._body_size = 0
        self._expect = False

    def on_url(self, url: bytes) -> None:
        self._url += url                       # almost always in one piece
        if len(self._url) > self.server.limits.max_request_line:
            raise _Refuse(responses.uri_too_long())

    def on_header(self, name: bytes, value: bytes) -> None:
        limits = self.server.limits
        self._header_size += len(name) + len(value) + 4
        self._headers.append((name, value))
        if len(self._headers) > limits.max_headers or self._header_size > limits.max_header_bytes:
            raise _Refuse(responses.header_fields_too_large())

    def on_headers_complete(self) -> None:
        parser, limits = self.parser, self.server.limits
        # httptools formats the version string on every call: ask once
        self._version = version = parser.get_http_version()
        if version not in ("1.1", "1.0"):
            raise _Refuse(responses.version_not_supported())
        hosts = length = 0
        plain = True
        for k, v in self._headers:             # one pass, one lower() per header
            role = _ROLES.get(k.lower())
            if role is None:
                continue
            if role is _HOST:
                hosts += 1
            elif role is _LENGTH:
                length = int(v)                # llhttp has checked that it is a number
            elif role is _EXPECT:
                if v.lower() != b"100-continue":
                    raise _Refuse(Response(417, b"", None))
                self._expect = version == "1.1"
            else:
                plain = False
        if hosts > 1 or (version == "1.1" and not hosts):
            raise _Refuse(responses.bad_request("HTTP/1.1 needs exactly one Host header"))
        self._plain = plain and self.server.answers is not None and parser.get_method() == b"GET"
        if length > limits.max_body:
            raise _Refuse(responses.payload_too_large())
        self.state = "body"
        self.deadline = time.monotonic() + limits.body_timeout
        if self._expect and self.send_seq == self.next_seq:
            self.conn.enqueue(_CONTINUE)       # nothing earlier is unanswered: in order
        if length > limits.stream_body_over:
            self._start_stream()

    def on_body(self, data: bytes) -> None:
        self._body_size += len(data)
        if self._body_size > self.server.limits.max_body:
            raise _Refuse(responses.payload_too_large())
        if self._stream is not None:
            self._stream.feed(data)
            return
        self._body.append(data)
        if self._body_size > self.server.limits.stream_body_over:   # a chunked body grew large
            self._start_stream()

    def _start_stream(self) -> None:
        """Hand the request over now and its body as it arrives (what came so far first)."""
        conn, loop = self.conn, self.server.rt.loop
        self._stream = BodyReader(conn.pause_reading,
                                  lambda: loop.call_soon_threadsafe(conn.resume_reading))
        for piece in self._body:
            self._stream.feed(piece)
        self._body = []
        request = self._request()
        request.stream = self._stream
        self._dispatch(request)
        self.state = "body"

    def on_message_complete(self) -> None:
        if self._stream is not None:           # dispatched already; the body is complete
            self._stream.finish()
            self._stream = None
            self.state = "idle"
            self.idle_since = time.monotonic()
            return
        if self._plain and self._answer_ready():
            return
        self._dispatch(self._request())

    def _answer_ready(self) -> bool:
        """Answer a plain GET from the server's ready answers, if one is fresh for its target
        (see answers.py); False sends the request the usual way."""
        ready = self.server.answers.get(self._url)
        if ready is None or self._body:
            return False
        now = time.monotonic()
        if now >= ready.fresh_until:
            return False
        ready.hits += 1
        self.server.count(ready.response.status)
        self.state = "idle"
        self.idle_since = now
        server, parser = self.server, self.parser
        if server.log is not None:             # the access log wants the request itself
            self.respond(self._request(), ready.response)
        else:
            seq = self.next_seq
            self.next_seq += 1
            items, keep = ready.response.encode(False, parser.should_keep_alive() and not
                                                server.closing, self._version == "1.0")
            self._deliver(seq, items, keep)
        self._throttle()
        return True

    def _request(self) -> HttpRequest:
        """The request parsed so far, with the next sequence number."""
        parser = self.parser
        url = self._url
        if url[:1] == b"/":
            path, _, query = url.partition(b"?")
        elif url == b"*":
            path, query = url, b""
        else:                                  # absolute-form: http://host/path?query
            try:
                parsed = httptools.parse_url(url)
            except httptools.HttpParserInvalidURLError:
                raise _Refuse(responses.bad_request("bad request target")) from None
            path, query = parsed.path or b"/", parsed.query or b""
        seq = self.next_seq
        self.next_seq += 1
        return HttpRequest(
            parser.get_method().decode("ascii"), url.decode("latin-1"), path.decode("latin-1"),
            query.decode("latin-1"), self._headers,
            self._body[0] if len(self._body) == 1 else b"".join(self._body),
            self._version, self, seq, parser.should_keep_alive())

    def _dispatch(self, request: HttpRequest) -> None:
        """Hand a request to the user's sink; one it refuses is answered 503 at once."""
        self.state = "idle"
        self.idle_since = self.dispatched[request.seq] = time.monotonic()
        try:
            self.server.sink.enqueue(request)
        except SinkError:                      # shed: answer at once, keep the connection
            self.server.shed += 1
            self.respond(request, responses.service_unavailable())
        self._throttle()

    def _throttle(self) -> None:
        """Too many requests parsed and not yet sent: stop reading for now."""
        if self.next_seq - self.send_seq >= self.server.limits.max_pipelined and not self.paused:
            self.paused = True
            self.conn.pause_reading()

    # -- data in (loop thread) ---------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        if not data:                           # the peer has finished sending
            self.end_of_input()
            return
        if self.state == "broken":
            return
        if self.parser is None:
            self.parser = httptools.HttpRequestParser(self)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            # httptools wraps what our callbacks raise; the original is the context
            refusal = exc.__context__
            if isinstance(refusal, _Refuse):
                self.fail(refusal.response)
            else:
                log.error("http: parser callback failed", exc_info=refusal)
                self.fail(responses.server_error())
        except httptools.HttpParserInvalidMethodError:
            # a well-formed method we do not know is 501; bytes that are no method at all, 400
            token = data.split(b" ", 1)[0]
            known_shape = token.isalpha() and token.isupper() and len(token) <= 20
            self.fail(responses.not_implemented() if known_shape else responses.bad_request())
        except httptools.HttpParserUpgrade:
            self.fail(responses.not_implemented())
        except (httptools.HttpParserError, ValueError, UnicodeDecodeError):
            self.fail(responses.bad_request())

    def end_of_input(self) -> None:
        """Answer what was asked before the peer stopped sending, then close."""
        if self.state in ("headers", "body"):      # a request cut short: nothing to answer
            self.state = "broken"
            self.cut_stream()
            self.conn.close()
        elif self.state != "broken":
            self.state = "eof"
            if self.send_seq == self.next_seq:
                self.conn.close()

    def cut_stream(self) -> None:
        """A streamed body will not complete: its reader raises instead of waiting forever."""
        if self._stream is not None:
            self._stream.finish(ConnectionError("the client stopped sending the body"))
            self._stream = None

    def fail(self, response: Response) -> None:
        """Answer the request being read with ``response`` (after those before it), then close.
        A request whose body was streaming is already with the application: drop the
        connection, there is no way to answer it in order."""
        if self._stream is not None:
            self.cut_stream()
            self.state = "broken"
            self.conn.abort()
            return
        self.state = "broken"
        self.server.count(response.status)
        seq = self.next_seq
        self.next_seq += 1
        items, _ = response.encode(False, False, False)
        self._deliver(seq, items, False)

    # -- responses ---------------------------------------------------------------------------------

    def respond(self, request: HttpRequest, response: Response) -> None:
        """Send ``response`` to ``request``, in request order. Any thread."""
        server = self.server
        if threading.get_ident() != server.loop_ident:
            server.respond_put((request, response))
            return
        head_only = request.method == "HEAD"
        keep = request.keep_alive and self.state != "broken" and not server.closing
        try:
            items, keep = response.encode(head_only, keep, request.version == "1.0")
        except Exception:
            server.log_error(request)
            response = responses.server_error()
            items, keep = response.encode(head_only, False, False)
        if len(items) == 2 and type(items[1]) is _Chunks:
            items = self._drain(items)
        server.count(response.status)
        if server.log is not None:             # lossy: logging never holds up a response
            server.log.enqueue_lossy(Logged(request, response.status, _length(items)))
        self._deliver(request.seq, items, keep)

    @staticmethod
    def _drain(items: list) -> list:
        """An iterable body answered on the loop thread: frame all of it now."""
        chunks = items[1]
        try:
            frames = [chunks.frame(bytes(piece)) for piece in chunks.iterator if piece]
        finally:
            close = getattr(chunks.source, "close", None)
            if close is not None:
                close()
        return [items[0], *frames, chunks.end()]

    def _deliver(self, seq: int, items: list, keep: bool) -> None:
        if seq != self.send_seq or self.streaming is not None:
            self.ready[seq] = (items, keep)
            return
        conn = self.conn
        while True:
            if conn.closed:
                self.release(items)
                return
            if type(items[-1]) is StreamBody:  # the rest follows as the producer writes it
                self.streaming = (items[-1], keep)
                conn.enqueue(items[0])
                self.dispatched.pop(self.send_seq, None)
                items[-1].attach(self._wake_stream)
                return
            try:
                if len(items) == 1:            # the usual case: one prepared bytes
                    conn.enqueue(items[0])
                else:
                    conn.enqueue_many(items)
            except SinkError:                  # the peer does not read: drop it
                self.release(items)
                conn.abort()
                return
            self.dispatched.pop(self.send_seq, None)
            nxt = self._sent(keep)
            if nxt is None:
                return
            items, keep = nxt

    def release(self, items: list | None = None) -> None:
        """The connection is gone: free what unsent responses hold (a producer blocked on a
        stream, a file descriptor waiting for its WriteDone). Without ``items``: all of them."""
        batches = [items] if items is not None else [i for i, _ in self.ready.values()]
        self.server.dropped += len(batches) + (self.streaming is not None and items is None)
        if items is None:
            self.parser = None                 # it holds us: freed now, not by the collector
            self.ready.clear()
            self.cut_stream()
            if self.streaming is not None:
                self.streaming[0].broken()
                self.streaming = None
        for batch in batches:
            for item in batch:
                if type(item) is StreamBody:
                    item.broken()
                elif type(item) is FileSegment and item.done is not None:
                    item.done.enqueue_lossy(WriteDone(self.conn, item.tag))

    def _sent(self, keep: bool) -> tuple[list, bool] | None:
        """The response at ``send_seq`` is on its way: move on, and return the next response
        if it is ready already."""
        conn = self.conn
        self.send_seq += 1
        if not keep:
            conn.close()
            self.state = "broken"
            return None
        nxt = self.ready.pop(self.send_seq, None)
        if nxt is not None:
            return nxt
        if self.send_seq == self.next_seq:     # every request answered
            if self.state == "eof":
                conn.close()
                return None
            self.idle_since = time.monotonic()
        if self.paused and self.next_seq - self.send_seq < self.server.limits.max_pipelined:
            self.paused = False
            conn.resume_reading()
        return None

    def _wake_stream(self) -> None:
        """From any thread: the streamed body has news; pump it on the loop thread."""
        self.server.rt.loop.call_soon_threadsafe(self._pump)

    def _pump(self) -> None:
        if self.streaming is None:
            return
        stream, keep = self.streaming
        conn = self.conn
        if conn.closed:
            stream.broken()
            self.streaming = None
            return
        if conn.pending > stream.limit:        # the socket is behind: look again shortly
            self.server.rt.timer.schedule(0.01, self.server.own, _Pump(self))
            return
        pieces, finished = stream.take()
        try:
            conn.enqueue_many(pieces)
        except SinkError:
            stream.broken()
            conn.abort()
            return
        if finished:
            self.streaming = None
            nxt = self._sent(keep)
            if nxt is not None:
                self._deliver(self.send_seq, *nxt)

    # -- timeouts (loop thread) --------------------------------------------------------------------

    def sweep(self, now: float) -> None:
        limits = self.server.limits
        oldest = self.dispatched.get(self.send_seq)
        if oldest is not None and now - oldest > limits.response_timeout:
            self.server.timeouts += 1             # the application never answered: we do
            log.error("http: no response to a request within %.0f s", limits.response_timeout)
            self.state = "broken"
            self.server.count(500)
            items, _ = responses.server_error().encode(False, False, False)
            self._deliver(self.send_seq, items, False)
        elif (self.state in ("headers", "body") and now > self.deadline
              and not (self._stream is not None and self._stream.paused)):
            self.server.timeouts += 1
            self.fail(responses.request_timeout())
        elif (self.state == "idle" and self.send_seq == self.next_seq
              and now - self.idle_since > self.server.limits.keepalive_timeout):
            self.state = "broken"
            self.conn.close()


class _Tick:
    """Event: time to sweep connections for timeouts."""


class _Pump:
    """Event: look again at a streamed body the socket was too slow for."""

    __slots__ = ("state",)

    def __init__(self, state: HttpConnection) -> None:
        self.state = state


class HttpServer(EventHandler):
    """The server stage. Events: the socket layer's, responses from other threads, ticks."""

    def __init__(self, sink: Any, limits: Limits, log: Any = None,
                 answers: dict[bytes, ReadyAnswer] | None = None) -> None:
        self.sink, self.limits, self.log, self.answers = sink, limits, log, answers
        self.connections: dict[Any, HttpConnection] = {}
        self.closing = False
        self.loop_ident = 0
        self.shed = self.timeouts = self.refused = self.dropped = 0
        self.statuses: dict[int, int] = {}     # responses by status code
        self._busy = responses.service_unavailable().encode(False, False, False)[0][0]

    def init(self, ctx: Any) -> None:
        self.rt, self.own = ctx.runtime, ctx.stage.sink
        self.respond_put = self.own.enqueue
        self.rt.timer.schedule(_TICK, self.own, _Tick())

    def handle_events(self, events: list) -> None:
        if not self.loop_ident:
            self.loop_ident = threading.get_ident()
        connections = self.connections
        for ev in events:
            kind = type(ev)
            if kind is Packet:
                state = connections.get(ev.conn)
                if state is not None:
                    state.feed(ev.data)
            elif kind is tuple:
                request, response = ev
                request.connection.respond(request, response)
            elif kind is Connected:
                if len(connections) >= self.limits.max_connections:
                    self.refused += 1
                    self.count(503)
                    ev.conn.enqueue(self._busy)
                    ev.conn.close()
                else:
                    connections[ev.conn] = HttpConnection(self, ev.conn)
            elif kind is Closed or kind is Failed:
                state = connections.pop(ev.conn, None)
                if state is not None:
                    state.release()
            elif kind is _Pump:
                ev.state._pump()
            elif kind is _Tick:
                now = time.monotonic()
                for state in list(connections.values()):
                    state.sweep(now)
                self.rt.timer.schedule(_TICK, self.own, ev)

    def count(self, status: int) -> None:
        self.statuses[status] = self.statuses.get(status, 0) + 1

    def stats(self) -> dict:
        """Open connections, responses by status, and requests that went wrong: shed (503 at
        once), timed out, refused at connect (too many connections), dropped (the connection
        went before the response was sent)."""
        return {"connections": len(self.connections),
                "responses": {str(k): v for k, v in sorted(self.statuses.items())},
                "shed": self.shed, "timeouts": self.timeouts, "refused": self.refused,
                "dropped": self.dropped}

    def log_error(self, request: HttpRequest) -> None:
        log.exception("http: cannot encode the response to %r", request)


def serve(rt: Any, address: tuple, sink: Any, *, name: str = "http", limits: Limits | None = None,
          log: Any = None, answers: dict[bytes, ReadyAnswer] | None = None,
          **listen_options: Any) -> Any:
    """Serve HTTP on ``address``; each request becomes an ``HttpRequest`` event on ``sink``.
    Returns the listener (``.address`` is the bound address). With ``log``, a ``Logged`` event
    per response goes there, lossily. With ``answers`` (request target -> ``ReadyAnswer``, kept
    by the application on the loop thread), a plain GET with a fresh answer there is answered
    at once and never reaches ``sink``. ``listen_options`` go to ``SocketLayer.listen``
    (``ssl_context``, ``reuse_port``, ``sock``, ``backlog``)."""
    server = HttpServer(sink, limits or Limits(), log, answers)
    stage = rt.add_stage(name, server, blocking=False, batch=256)
    return SocketLayer.of(rt).listen(address, stage.sink, half_close=True, **listen_options)
