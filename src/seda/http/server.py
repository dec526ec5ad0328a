"""The HTTP server stage (thesis 5.7): HTTP/1.0 and 1.1 over the socket layer.

The protocol itself is ``protocol.py``, which does no I/O; this stage drives one
``ServerProtocol`` per connection on the event-loop thread: packets in, requests out to the
user's sink, answers (from any thread) back in, bytes out to the socket layer. It also owns
what the protocol leaves to I/O: threads, the clock, and how much may wait for a slow socket.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .._signals import Stopping
from .._sink import SinkError
from .._stage import EventHandler, StageContext
from ..io.events import Closed, Connected, Failed, FileSegment, Packet, WriteDone
from ..io.sockets import Listener, SocketLayer
from . import response as responses
from .answers import ReadyAnswer
from .limits import Limits
from .protocol import (
    ABORT,
    CLOSE,
    HANG_UP,
    PAUSE,
    RESUME,
    Logged,
    Output,
    ServerProtocol,
    ServerStats,
    Switched,
    Unsent,
)
from .request import HttpRequest
from .response import Answer, FileBody, StreamBody, Switch, Tunnel

if TYPE_CHECKING:
    from .._runtime import Runtime
    from .._sink import Sink
    from ..io.sockets import Connection

log = logging.getLogger("seda.http")

_TICK = 1.0                  # seconds between sweeps for timeouts
# Bytes that may wait in memory for a slow client before the connection stops reading requests
# and a streamed body stops being taken from its producer. Below it, both go on.
OUTPUT_LIMIT = 256 * 1024


class _HttpConnection:
    """One connection's I/O: feeds its protocol and carries out the events it returns."""

    __slots__ = ("conn", "gone", "protocol", "reading", "server", "tunnel", "wanted", "watchers")

    def __init__(self, server: _HttpServer, conn: Connection, now: float) -> None:
        self.server, self.conn = server, conn
        self.reading = True                    # the socket is being read
        self.wanted = True                     # the protocol wants it read (PAUSE / RESUME)
        self.gone = False                      # the client has closed or stopped sending
        # requests whose application asked to hear of it (HttpRequest.on_gone): few, made
        # only for them
        self.watchers: dict[HttpRequest, Callable[[], None]] | None = None
        self.tunnel: Tunnel | None = None      # once switched (a WebSocket): all bytes go there
        self.protocol: ServerProtocol | None = ServerProtocol(
            server.limits, self, answers=server.answers, heads=server.heads,
            parsed=server.parsed, log=server.log is not None,
            peer=conn.peer, scheme="http" if conn.tls is None else "https", stats=server.counts,
            wake=self._wake_reading, now=now)

    def feed(self, data: bytes, now: float) -> None:
        if self.tunnel is not None:
            self.tunnel.feed(data)
            return
        if not data:                           # the end of input: the client has gone
            self._gone()
        self._run(self.protocol.receive(data, now))  # type: ignore[union-attr]  # open

    def watch(self, request: HttpRequest, callback: Callable[[], None] | None) -> None:
        """``HttpRequest.on_gone``: call ``callback`` when the client goes; any thread. It may
        be called twice (a watch that races the news), never not at all."""
        # (the loop thread's _gone may take the table meanwhile: this works on the one it read)
        watchers = self.watchers
        if callback is None:
            if watchers is not None:
                watchers.pop(request, None)
            return
        if watchers is None:
            watchers = self.watchers = {}
        watchers[request] = callback
        if self.gone:                          # (set before the watchers are taken: see _gone)
            callback()

    def _gone(self) -> None:
        """The client has closed the connection or stopped sending (loop thread)."""
        self.gone = True
        watchers, self.watchers = self.watchers, None
        if watchers:
            for callback in list(watchers.values()):
                callback()

    def respond(self, request: HttpRequest, response: Answer) -> None:
        """Send ``response`` to ``request``, in request order. Any thread."""
        server = self.server
        if threading.get_ident() != server.loop_ident:
            try:
                server.respond_put((request, response))
            except SinkError:                  # the server has stopped: nobody to send it to
                self._release(response)
        else:
            self.answer(request, response, time.monotonic())

    def answer(self, request: HttpRequest, response: Answer, now: float) -> None:
        """``respond``, on the loop thread; ``now``: ``time.monotonic()``, as the caller read
        it (the server stage, once for a batch of answers)."""
        if self.protocol is not None:
            self._run(self.protocol.respond(request, response, now))

    def _run(self, events: list[Output]) -> None:
        """Carry out what the protocol said, in order."""
        conn = self.conn
        if len(events) == 1 and type(events[0]) is bytes:
            # One answer and nothing else, the usual: to the kernel at once. Several (answers
            # to pipelined requests) go through the write stage, which joins them in one send.
            try:
                if conn.send(events[0]):
                    return                     # all of it went: nothing waits in memory
            except SinkError:                  # closed under us: its Closed event is on its way
                return
        elif events and type(events[0]) is bytes and type(events[1]) is not bytes:
            # one answer with news after it (its close, as a rule): the answer goes at once
            # too, so that a close after it finds nothing left to send (Connection.finish)
            try:
                conn.send(events[0])
            except SinkError:
                return
            self._carry_out(events, 1)
        else:
            self._carry_out(events)
        if conn.pending > OUTPUT_LIMIT:
            self._steer()

    def _carry_out(self, events: list[Output], start: int = 0) -> None:
        """Carry out ``events`` from index ``start`` on."""
        conn = self.conn
        ev: Any                                # told apart by ``kind``, which mypy cannot follow
        try:
            for ev in events[start:] if start else events:
                kind = type(ev)
                if kind is bytes or kind is FileSegment:
                    conn.enqueue(ev)
                elif kind is HttpRequest:
                    self._dispatch(ev)
                elif kind is StreamBody:
                    ev.attach(self._wake_stream)
                elif kind is Logged:
                    self.server.log.enqueue_lossy(ev)  # type: ignore[union-attr]  # only with a log
                elif kind is Unsent:
                    self._release(ev.response)
                elif kind is Switched:
                    self._switched(ev.tunnel)
                elif ev is PAUSE or ev is RESUME:
                    # what the protocol wants now: an answer a Dispatch gave at once while
                    # these events were carried out may have told a later one already
                    protocol = self.protocol
                    self.wanted = ev is RESUME if protocol is None else protocol.wants_input
                    self._steer()
                elif ev is CLOSE or ev is HANG_UP:
                    if conn.finish(linger=ev is CLOSE):   # closed now: no Closed event comes
                        self.server.let_go(conn)
                elif ev is ABORT:
                    conn.abort(RuntimeError("the response could not be completed"))
        except SinkError:                      # closed under us: its Closed event is on its way
            return

    def _switched(self, tunnel: Tunnel) -> None:
        """The connection is the tunnel's now: read for it, whatever HTTP wanted."""
        self.tunnel = tunnel
        self.wanted = True
        if not self.reading:
            self.reading = True
            self.conn.resume_reading()

    # -- for a tunnel, from any thread: in order with the 101 (the HTTP stage's queue) --------

    def write(self, data: bytes, close: bool = False) -> None:
        """Send ``data`` (then close, with ``close``) after everything sent before it."""
        self._on_stage(_Write(self, data, close))

    def when_drained(self, callback: Callable[[], None], low: int = OUTPUT_LIMIT // 2) -> None:
        """Call ``callback`` (loop thread) once what was written so far has left, but for
        ``low`` bytes."""
        self._on_stage(_Write(self, b"", False, (callback, low)))

    def pause_reading(self, pause: bool = True) -> None:
        """Stop (or, ``pause=False``, resume) reading: the tunnel is behind."""
        self._on_stage(_Write(self, b"", False, reading=not pause))

    def _on_stage(self, ev: _Write) -> None:
        if threading.get_ident() == self.server.loop_ident:
            ev.run()
        else:
            with contextlib.suppress(SinkError):   # stopped: the connection goes with the server
                self.server.respond_put(ev)

    def _dispatch(self, request: HttpRequest) -> None:
        """Hand a request to the user's sink; one it refuses is answered 503 at once, one its
        dispatch fails on (a router's error, a predicate's) 500, and the others go on."""
        try:
            self.server.sink.enqueue(request)
        except SinkError:
            self._run(self.protocol.shed(request, time.monotonic()))  # type: ignore[union-attr]  # open
        except Exception:
            log.exception("http: dispatching %s %s raised", request.method, request.target)
            self._run(self.protocol.respond(  # type: ignore[union-attr]  # open
                request, responses.server_error(), time.monotonic()))

    def _steer(self) -> None:
        """Read while the protocol wants more and the socket keeps up with what we send; while
        it does not keep up, be told when it has drained."""
        conn = self.conn
        if conn.closing or self.tunnel is not None:   # (a tunnel steers its own reading)
            return
        behind = conn.pending > OUTPUT_LIMIT
        want = self.wanted and self.protocol is not None and not behind
        if want is not self.reading:
            self.reading = want
            if want:
                conn.resume_reading()
            else:
                conn.pause_reading()
        if behind:
            conn.when_drained(self._drained, OUTPUT_LIMIT // 2)

    def _drained(self) -> None:
        """The socket has taken most of what waited (loop thread): read again, send more."""
        self._steer()
        if self.protocol is not None and self.protocol.streaming is not None:
            self._pump()

    def _wake_reading(self) -> None:
        """From an application thread: a request body's reader has room again."""
        self.server.rt.loop.call_soon_threadsafe(self._reader_drained)

    def _reader_drained(self) -> None:
        if self.protocol is not None:
            self._run(self.protocol.drained(time.monotonic()))

    def _wake_stream(self) -> None:
        """From any thread: the body being streamed out has news."""
        self.server.rt.loop.call_soon_threadsafe(self._pump)

    def _pump(self) -> None:
        protocol, conn = self.protocol, self.conn
        if protocol is None or conn.closing:
            return
        if conn.pending > OUTPUT_LIMIT:        # the socket is behind: wait until it drains
            self._steer()
            return
        self._run(protocol.pump(time.monotonic()))

    def tick(self, now: float) -> None:
        if self.protocol is not None:
            self._run(self.protocol.tick(now))

    def stop(self) -> None:
        if self.tunnel is not None:
            self.tunnel.stopping()
        elif self.protocol is not None:
            self._run(self.protocol.stop(time.monotonic()))

    def lost(self) -> None:
        """The socket is closed: release what unsent answers hold (a file descriptor waiting
        for its WriteDone, a producer blocked on a stream), and let go of the protocol."""
        protocol, self.protocol = self.protocol, None
        self._gone()
        if self.tunnel is not None:
            self.tunnel.lost()
        if protocol is not None:
            if self.conn.unsent and protocol.send_seq == protocol.next_seq:
                self.server.counts.dropped += 1    # the last answer was on its way, not out
            for response in protocol.connection_lost():
                self._release(response)

    def _release(self, response: Answer) -> None:
        if type(response) is Switch:
            response.tunnel.lost()
            return
        body = getattr(response, "body", None)
        if type(body) is StreamBody:
            body.broken()
        elif type(body) is FileBody and body.done is not None:
            body.done.enqueue_lossy(WriteDone(self.conn, body.tag))


class _Write:
    """Event: a tunnel's bytes for its connection (and a close, a wish to hear when they have
    left, or a change of reading), in order with the 101 that switched it."""

    __slots__ = ("close", "connection", "data", "drained", "reading")

    def __init__(self, connection: _HttpConnection, data: bytes, close: bool,
                 drained: tuple[Callable[[], None], int] | None = None,
                 reading: bool | None = None) -> None:
        self.connection, self.data, self.close = connection, data, close
        self.drained, self.reading = drained, reading

    def run(self) -> None:
        """On the loop thread."""
        conn = self.connection.conn
        if conn.closed:
            if self.drained is not None:
                self.drained[0]()              # nothing will drain: let the waiter see why
            return
        if self.data and not conn.closing:
            conn.enqueue(self.data)
        if self.close:
            conn.close()
        if self.reading is not None:
            if self.reading:
                conn.resume_reading()
            else:
                conn.pause_reading()
        if self.drained is not None:
            conn.when_drained(*self.drained)


class Dispatch(Protocol):
    """Where the server sends requests: a stage's ``Sink``, or a router that picks one. Its
    ``enqueue`` runs on the loop thread as each request is read, and may answer the request
    there and then; a ``SinkError`` it raises has the request answered 503 at once, any other
    exception 500 (logged)."""

    def enqueue(self, request: HttpRequest) -> None: ...


class _Tick:
    """Event: time to sweep connections for timeouts."""


class _HttpServer(EventHandler):
    """The server stage. Events: the socket layer's, answers from other threads, ticks."""

    def __init__(self, sink: Dispatch, limits: Limits, log: Sink | None = None,
                 answers: dict[bytes, ReadyAnswer] | None = None) -> None:
        self.sink, self.limits, self.log, self.answers = sink, limits, log, answers
        self.heads: dict[bytes, tuple[bytes, str, bool]] = {}   # (ServerProtocol.heads)
        self.parsed: dict[bytes, Any] = {}                 # (ServerProtocol.parsed)
        self.connections: dict[Connection, _HttpConnection] = {}
        self.counts = ServerStats()
        self.loop_ident = 0
        self._busy = responses.service_unavailable().encode(False, False, False)[0][0]

    def init(self, ctx: StageContext) -> None:
        self.rt, self.own = ctx.runtime, ctx.stage.sink
        self.respond_put = self.own.enqueue
        self.rt.timer.schedule(_TICK, self.own, _Tick())
        self.rt.signals.subscribe(Stopping, self.own)

    def handle_events(self, events: list[Any]) -> None:
        if not self.loop_ident:
            self.loop_ident = threading.get_ident()
        connections = self.connections
        now = time.monotonic()                 # (one reading serves the batch: packets, answers)
        for ev in events:
            kind = type(ev)
            if kind is Packet:
                state = connections.get(ev.conn)
                if state is not None:
                    state.feed(ev.data, now)
            elif kind is tuple:
                request, response = ev
                request.connection.answer(request, response, now)
            elif kind is _Write:
                ev.run()
            elif kind is Connected:
                self._connected(ev.conn, now)
            elif kind is Closed or kind is Failed:
                self.let_go(ev.conn)
            elif kind is _Tick:
                for state in list(connections.values()):
                    state.tick(now)
                self.rt.timer.schedule(_TICK, self.own, ev)
            elif kind is Stopping:
                for state in list(connections.values()):
                    state.stop()

    def let_go(self, conn: Connection) -> None:
        """``conn`` has closed (a Closed event, or its owner's ``finish``): forget its state."""
        state = self.connections.pop(conn, None)
        if state is not None:
            state.lost()

    def _connected(self, conn: Connection, now: float) -> None:
        if len(self.connections) >= self.limits.max_connections:
            self.counts.refused += 1
            self.counts.statuses[503] += 1
            conn.enqueue(self._busy)
            conn.close()
        else:
            self.connections[conn] = _HttpConnection(self, conn, now)

    def stats(self) -> dict[str, Any]:
        """Open connections, responses by status, and requests that went wrong: shed (503 at
        once), timed out, refused at connect (too many connections), dropped (the client went
        before its answer), aborted (the application failed mid-response)."""
        s = self.counts
        return {"connections": len(self.connections),
                "responses": {str(k): v for k, v in sorted(s.statuses.items())},
                "shed": s.shed, "timeouts": s.timeouts, "refused": s.refused,
                "dropped": s.dropped, "aborted": s.aborted}


def serve(rt: Runtime, address: tuple[Any, ...], sink: Dispatch, *, name: str = "http",
          limits: Limits | None = None, log: Sink | None = None,
          answers: dict[bytes, ReadyAnswer] | None = None, **listen_options: Any) -> Listener:
    """Serve HTTP on ``address``; each request becomes an ``HttpRequest`` event on ``sink``
    (a stage's sink, or a router in front of several: ``Dispatch``).
    Returns the listener (``.address`` is the bound address). With ``log``, a ``Logged`` event
    per response goes there, lossily. With ``answers`` (request target -> ``ReadyAnswer``, kept
    by the application on the loop thread), a plain GET with a fresh answer there is answered
    at once and never reaches ``sink``. ``listen_options`` go to ``SocketLayer.listen``
    (``ssl_context``, ``reuse_port``, ``sock``, ``backlog``)."""
    server = _HttpServer(sink, limits or Limits(), log, answers)
    stage = rt.add_stage(name, server, blocking=False, batch=256)
    # the protocol bounds what waits for a slow client itself (OUTPUT_LIMIT, one response
    # streamed at a time, max_pipelined): a response is never refused for its size
    return SocketLayer.of(rt).listen(address, stage.sink, half_close=True, max_pending=None,
                                     **listen_options)
