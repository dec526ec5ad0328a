"""ASGI 3.0 (HTTP): an application runs in an asyncio stage of its own (``tasks=N``), fed
HttpRequest events by the HTTP server stage as a WSGI application is (wsgi.py).

Each request is a task on the stage's event loop. ``receive()`` gives the body as it arrives:
one ``http.request`` for a body that came with its request, pieces of a large one (or of a
chunked one still coming after its head) with the backpressure ``wsgi.input`` has (past 256 KB
unread the connection stops reading); then ``http.disconnect`` once the response is complete or
the client has gone (closed the connection, or stopped sending, as uvicorn takes it).
``send()`` never waits for the socket: a whole response travels back to the connection through
the HTTP stage's queue, a streamed one through a ``StreamBody``, and ``send`` waits only while
more than 256 KB of it wait for a slow client. Once the connection is lost, a streamed ``send``
raises ``ClientDisconnected``, an OSError (ASGI spec 2.4); a client that only stopped sending
still gets its answer.

The ``http.response.pathsend`` extension is offered: a file the application names goes out
with sendfile (pathsend.py). Trailers are declined politely: the extension is not offered, and
an application that sends them anyway has its response end with its last body, the trailers
dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from .._stage import EventHandler, StageContext
from . import pathsend
from . import response as responses
from .body import BodyError
from .forwarded import Proxies
from .kept import KeptHeads
from .lifespan import Application, Lifespan, Message
from .request import ClientDisconnected, HttpRequest
from .response import (
    NO_HEAD,
    SENDABLE_BYTES,
    AnswerHead,
    Response,
    StreamBody,
    unsendable,
)

if TYPE_CHECKING:
    from .._asyncio import LoopFactory
    from .._runtime import Runtime
    from .._sink import Sink

log = logging.getLogger("seda.asgi")

_ASGI = {"version": "3.0", "spec_version": "2.4"}
_DISCONNECT: Message = {"type": "http.disconnect"}
# Hop-by-hop fields are the server's to send; an application's Connection: close is kept as
# the wish to close (Response.encode reads it). An Upgrade is kept: any response may send one
# to advertise a protocol (RFC 9110 7.8: a 426's must), with "upgrade" in its Connection.
_HOP_BY_HOP = frozenset({b"keep-alive", b"proxy-connection", b"te", b"trailer",
                         b"transfer-encoding"})
_NOTED = _HOP_BY_HOP | {b"content-length", b"connection", b"date", b"upgrade"}   # acted on
_UPGRADE_OPTION = (b"connection", b"upgrade")
_NO_BODY = frozenset({204, 304})
_TARGETS_KEPT = 1024     # request targets whose scope fields are kept (AsgiHandler.targets)
MAX_SIZE = 16 * 2**20            # the largest WebSocket message, as uvicorn's --ws-max-size
PING_INTERVAL = PING_TIMEOUT = 20.0   # seconds, as uvicorn's --ws-ping-interval and -timeout


def is_asgi(app: Any) -> bool:
    """Whether ``app`` looks like an ASGI 3 application, as uvicorn tells: a coroutine function,
    an object whose ``__call__`` is one, or a class whose instances are awaitable (another
    class is taken for an ASGI 2 one: asgi2.py)."""
    if inspect.isclass(app):
        return hasattr(app, "__await__")
    if inspect.iscoroutinefunction(app):
        return True
    return inspect.iscoroutinefunction(getattr(app, "__call__", None))  # noqa: B004 -- its coroutine-ness


def is_websocket(req: HttpRequest) -> bool:
    """Whether ``req`` asks to become a WebSocket (RFC 6455 4.1: a GET with Upgrade)."""
    if not req.upgrade or req.method != "GET":
        return False
    upgrade = req.header("upgrade")
    return upgrade is not None and "websocket" in upgrade.lower()


@functools.cache
def websockets() -> Any:
    """``websocket.WebSocket``, or None without wsproto (``pip install pyseda[asgi]``): an
    upgrade is then served as plain HTTP, as uvicorn does without a WebSocket library."""
    try:
        from .websocket import WebSocket
    except ImportError:
        log.warning("asgi: wsproto is not installed: WebSocket upgrades are served as HTTP")
        return None
    return WebSocket


def _wake(loop: asyncio.AbstractEventLoop, future: asyncio.Future[None]) -> Callable[[], None]:
    """A callback for another thread that resolves ``future`` on ``loop``."""
    def wake() -> None:
        with contextlib.suppress(RuntimeError):    # the loop has closed: nobody waits any more
            loop.call_soon_threadsafe(_resolve, future)
    return wake


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def read_head(fields: tuple[Any, ...]) -> AnswerHead:
    """Check an application's header fields and make their header lines; raises ValueError
    for a field the server cannot send (a line break in it, a Content-Length not a number),
    TypeError for one not bytes-like. The head's fields are bytes, whatever was sent."""
    length, special, dropped, plain, upgrade = None, False, False, True, False
    for name, value in fields:
        if type(name) is not bytes or type(value) is not bytes:
            plain = False
        lower = name.lower() if type(name) is bytes else bytes(memoryview(name)).lower()
        if lower in _NOTED:                    # (usually only the Content-Length)
            if lower == b"content-length":
                digits = value if type(value) is bytes else bytes(memoryview(value))
                if not digits.isdigit():       # (int() would take "-1", " 1" or "1_0")
                    raise ValueError(f"bad Content-Length {digits[:32]!r}")
                if length is not None:         # said twice: once, or a client could misread
                    if int(digits) != length:
                        raise ValueError(f"two Content-Lengths, {length} and {int(digits)}")
                    dropped = True
                length = int(digits)
            elif lower == b"connection" or lower == b"date":
                special = True
            elif lower == b"upgrade":
                upgrade = True
            else:
                dropped = True
    if not plain:                              # memoryviews and the like: bytes, as sent
        fields = tuple((bytes(memoryview(n)), bytes(memoryview(v))) for n, v in fields)
    if dropped:                                # the server's own fields go, and repeats
        fields = responses.fields_to_send(fields, _HOP_BY_HOP)
    if upgrade:                                # its Connection must name it: a line of its
        fields = (*fields, _UPGRADE_OPTION)    # own, beside the server's (a list field)
    # the header lines, joined in C, and checked in one pass (response.SENDABLE_BYTES)
    lines = b"\r\n".join(map(b": ".join, fields)) + b"\r\n" if fields else b""
    if lines.count(b"\n") != len(fields) or not SENDABLE_BYTES.fullmatch(lines):
        raise unsendable(fields)
    return AnswerHead(fields, lines, length, special)


class AsgiHandler(EventHandler):
    """Runs ``app`` for each HttpRequest, each request a task. Use it on an asyncio stage
    (``mount_asgi`` makes one). ``root_path`` is the prefix the application is mounted at:
    ``scope["path"]`` is the whole path, as Starlette and Django expect. ``lifespan``: "auto",
    "on" or "off" (``seda.http.lifespan``); init runs the startup and raises LifespanFailed
    with the application's message if it failed; destroy runs the shutdown. A WebSocket is
    pinged every ``ws_ping_interval`` seconds and closed with 1011 if no Pong comes within
    ``ws_ping_timeout`` (uvicorn's options); 0 or None: no pings, or no deadline. ``proxies``:
    the peers whose X-Forwarded-Proto and -For give the scope's scheme and client (forwarded.py;
    None: nobody's)."""

    def __init__(self, app: Application, *, root_path: str = "", url_scheme: str | None = None,
                 server_name: str = "localhost", server_port: int = 80,
                 lifespan: str = "auto", ws_max_size: int = MAX_SIZE,
                 ws_ping_interval: float | None = PING_INTERVAL,
                 ws_ping_timeout: float | None = PING_TIMEOUT,
                 proxies: Proxies | None = None) -> None:
        self.app, self.root_path, self.url_scheme = app, root_path.rstrip("/"), url_scheme
        self.proxies = proxies
        self.ws_max_size = ws_max_size
        self.ws_ping_interval = ws_ping_interval or 0.0
        self.ws_ping_timeout = ws_ping_timeout or 0.0
        self.server = (server_name, server_port)
        self.lifespan = Lifespan(app, lifespan)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.manager: Any = None
        self.counts = {"disconnects": 0, "errors": 0}
        # (path, query) -> the scope's path, raw_path and query_string, made once: clients ask
        # for the same targets again and again (only the stage's loop thread touches it). By
        # the request's path and query, not its target: a router in front may rewrite them.
        self.targets: dict[tuple[str, str], tuple[str, bytes, bytes]] = {}
        # what reading an application's response fields gave, for the same fields (kept.py;
        # only the stage's loop thread reads it)
        self.heads = KeptHeads(read_head, bytes)
        self.open_websockets = 0               # each a task of its own once accepted

    async def init(self, ctx: StageContext) -> None:
        self.loop = asyncio.get_running_loop()
        self.manager = ctx.stage.manager
        await self.lifespan.startup()

    async def destroy(self) -> None:
        await self.lifespan.shutdown()

    def scope(self, req: HttpRequest) -> Message:
        # (the lookup inlined: made once per path and query, so found for nearly every request)
        path, raw_path, query = self.targets.get((req.path, req.query)) or self.target_fields(req)
        scheme, client = self.origin(req)
        return {
            "type": "http",
            "asgi": _ASGI,
            "http_version": req.version,
            "method": req.method,
            "scheme": scheme,
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "root_path": self.root_path,
            "headers": req.headers,            # (lower-cased as parsed; the request's own)
            "client": client,
            "server": self.server,
            "state": dict(self.lifespan.state),
            "extensions": {pathsend.EXTENSION: {}},
        }

    def origin(self, req: HttpRequest) -> tuple[str, tuple[str, int] | None]:
        """The scope's scheme (``http`` or ``https``) and client: as a proxy believed says
        (uvicorn gives a forwarded client port 0), else as the connection is."""
        peer = req.peer
        scheme = client = None
        if req.proxied and self.proxies is not None:
            scheme, client = self.proxies.forwarded(peer, req.headers)
        if client is not None:
            where: tuple[str, int] | None = (client, 0)
        else:
            where = (peer[0], peer[1]) if isinstance(peer, tuple) and len(peer) > 1 else None
        return scheme or self.url_scheme or req.scheme, where

    def target_fields(self, req: HttpRequest) -> tuple[str, bytes, bytes]:
        """The scope's path (percent-decoded), raw_path and query_string for ``req``'s path
        and query, made once for each (``targets``)."""
        key = (req.path, req.query)
        made = self.targets.get(key)
        if made is None:
            path = req.path
            raw_path = path.encode("latin-1")
            if "%" in path or not path.isascii():
                path = unquote_to_bytes(raw_path).decode("utf-8", "replace")
            if len(self.targets) >= _TARGETS_KEPT:   # (full of targets seen once: start again)
                self.targets.clear()
            made = self.targets[key] = (path, raw_path, req.query.encode("latin-1"))
        return made

    async def handle_event(self, req: HttpRequest) -> None:
        # An ASGI application answers in its own time, as on uvicorn: a long poll or an event
        # stream may wait minutes for its first byte. (It holds no thread while it waits, and
        # one that returns without answering gets its 500 from run.)
        req.patient = True
        # (req.upgrade first: most requests ask for no upgrade, and pay no call to see it)
        if req.upgrade and is_websocket(req) and (websocket := websockets()) is not None:
            await websocket(self, req).serve()
        else:
            await _Exchange(self, req).run()

    def stats(self) -> dict[str, Any]:
        """Requests in flight (tasks), open WebSockets, clients that left before their answer,
        and errors."""
        manager = self.manager
        return {"in_flight": manager.inflight if manager is not None else 0,
                "cap": manager.cap if manager is not None else 0,
                "websockets": self.open_websockets, **self.counts}


class _Exchange:
    """One request through the application: its receive and send, and what they have said."""

    __slots__ = ("answered", "body_error", "body_given", "complete", "counted", "gone", "handler",
                 "head", "head_only", "loop", "naming", "receiving", "req", "status", "stream",
                 "watching")

    def __init__(self, handler: AsgiHandler, req: HttpRequest) -> None:
        self.handler, self.req = handler, req
        self.loop: asyncio.AbstractEventLoop = handler.loop  # type: ignore[assignment]  # init ran
        self.status: int | None = None         # set by http.response.start
        self.head = NO_HEAD                    # the application's fields, once started
        self.head_only = req.method == "HEAD"
        self.counted = 0                       # body bytes the application has sent
        self.answered = False                  # a HEAD's head went before its body's end
        self.stream: StreamBody | None = None  # a streamed body, once its head has gone
        self.complete = False                  # the last body message has been sent
        self.naming = False                    # a pathsend is opening its file
        self.gone = False                      # the client has closed or stopped sending
        self.watching = False                  # the connection tells us if the client goes
        self.body_given = False                # the request body has been given whole
        self.body_error: BodyError | None = None
        # what the receive()s waiting wait for: one each, as two tasks may wait at once (a
        # disconnect listener beside a cancelled receive, as Starlette's is_disconnected is)
        self.receiving: list[asyncio.Future[None]] | None = None

    # -- the connection's news (loop thread of the server, then here) ------------------------

    def _on_gone(self) -> None:
        with contextlib.suppress(RuntimeError):    # our loop has closed
            self.loop.call_soon_threadsafe(self._went)

    def _went(self) -> None:
        if not self.gone:
            self.gone = True
            if not self.complete:
                self.handler.counts["disconnects"] += 1
        self._wake_receivers()                 # (a send waits for the socket, not for this)

    async def _wait_to_receive(self, arm: Callable[[Callable[[], None]], None]) -> None:
        """Until ``arm``'s callback is called from another thread, the client goes or (body
        given) the response is complete."""
        # Only a request that waits here needs the news (a streamed send learns it from its
        # stream): most are answered without, and pay nothing for it.
        self._watch()
        future = self.loop.create_future()
        waiting = self.receiving
        if waiting is None:
            waiting = self.receiving = []
        waiting.append(future)
        arm(self._readable)
        try:
            await future
        finally:
            waiting.remove(future)

    def _watch(self) -> None:
        """Be told when the client goes (at once if it has)."""
        if not self.watching:
            self.watching = True
            self.req.on_gone(self._on_gone)

    def _readable(self) -> None:
        """From the thread that feeds the body: data, its end or its error can be read. The
        reader keeps one callback, so every receive() waiting is woken, not only the last."""
        with contextlib.suppress(RuntimeError):    # our loop has closed
            self.loop.call_soon_threadsafe(self._wake_receivers)

    def _wake_receivers(self) -> None:
        """Every receive() waiting looks again: each returns what it now finds."""
        if self.receiving:
            for future in self.receiving:
                _resolve(future)

    async def _wait_to_send(self, stream: StreamBody) -> None:
        """Until the stream takes more, or the connection is lost."""
        future: asyncio.Future[None] = self.loop.create_future()
        stream.when_writable(_wake(self.loop, future))
        await future

    # -- receive -------------------------------------------------------------------------------

    async def receive(self) -> Message:
        if self.complete or self.gone:
            return _DISCONNECT
        if not self.body_given:
            reader = self.req.stream
            if reader is None:
                self.body_given = True
                return {"type": "http.request", "body": self.req.body, "more_body": False}
            while not self.gone:
                try:
                    data, done = reader.read_nowait()
                except BodyError as exc:       # cut short, too large, too slow: no more comes
                    self.body_error = exc
                    return _DISCONNECT
                if data or done:
                    self.body_given = done
                    return {"type": "http.request", "body": data, "more_body": not done}
                await self._wait_to_receive(reader.when_readable)
            return _DISCONNECT
        # the body has been given: what remains to say is that the client went or the
        # response is complete
        while not (self.complete or self.gone):
            await self._wait_to_receive(lambda wake: None)
        return _DISCONNECT

    # -- send ----------------------------------------------------------------------------------

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if self.status is None:
            if kind != "http.response.start":
                raise RuntimeError(f"expected ASGI message 'http.response.start', got {kind!r}")
            self._start(message)
        elif kind == pathsend.EXTENSION and self.stream is None and not self.complete:
            await self._send_path(message["path"])
        elif kind == pathsend.EXTENSION and not self.counted and not self.complete:
            await self._stream_path(message["path"])   # its head went ahead of it (_head_now)
        elif not self.complete:
            if kind != "http.response.body":
                raise RuntimeError(f"expected ASGI message 'http.response.body', got {kind!r}")
            body, more = message.get("body", b""), message.get("more_body", False)
            if more or self.head_only or self.stream is not None:
                await self._body(body, more)
            else:                              # the usual: the whole body in one message
                self._finish(bytes(body))
        elif kind != "http.response.trailers":  # (trailers: declined, see the module)
            raise RuntimeError(f"unexpected ASGI message {kind!r} after the response")

    def _start(self, message: Message) -> None:
        status = message["status"]
        # the final status of a response (RFC 9110 15): a 1xx sent as one would leave the
        # client waiting for the response it announces, and ASGI has no interim responses
        if not isinstance(status, int) or not 200 <= status <= 599:
            raise ValueError(f"bad ASGI status {status!r}: a response's status is 200 to 599")
        self.head = self.handler.heads.get(tuple(message.get("headers", ())))
        self.status = status
        if status in _NO_BODY:
            self.head_only = True              # no body goes, whatever the application sends
        if self.head.length is None:
            # A body of no declared length is likely a stream (events, a model's tokens): if
            # the application awaits something before its first body message, the head goes
            # then, as uvicorn and hypercorn send it at http.response.start, so that the
            # client sees its answer begin (an EventSource opens) before the first event.
            # One sent at once (a whole body) is answered as ever: this finds it complete.
            self.loop.call_soon(self._head_now)

    def _head_now(self) -> None:
        """The head of a response whose application awaited something after starting it and
        has sent no body yet (see _start): streamed from here, without a length."""
        if self.complete or self.gone or self.stream is not None or self.answered or self.naming:
            return
        if self.head_only:                     # HEAD, 204, 304: as for a streamed body
            self.answered = True
            self._answer_head(None)
            self._watch()
        else:
            self.stream = StreamBody()
            self.req.respond(Response(self.status, self.stream, self.head.headers()))  # type: ignore[arg-type]  # started

    async def _body(self, body: bytes, more: bool) -> None:
        """A body message other than the usual whole body (see send)."""
        if self.head_only:                     # HEAD, 204, 304: none of the body goes
            if self.answered:                  # (its head went with the first piece)
                if self.gone:
                    raise ClientDisconnected("the client has gone")
            elif more:
                # a streamed body (an event stream) may never end: the head goes now, without
                # the length it cannot know, and the client is watched, so that a send after
                # it has gone raises, as a streamed GET's does
                self.answered = True
                self._answer_head(None)
                self._watch()
            else:
                self.counted += len(body)
                self._finish(b"")
                return
            if not more:
                self._completed()
            return
        stream = self.stream
        if stream is None:                     # the first piece of a streamed body
            stream = self.stream = StreamBody()
            self.req.respond(Response(self.status, stream, self.head.headers()))  # type: ignore[arg-type]  # started
        try:
            room = stream.write_nowait(body)
        except ConnectionError:
            self._went()
            raise ClientDisconnected("the client has gone") from None
        self.counted += len(body)
        self._check_length(more)               # (the stream sends no byte past it)
        if not more:
            stream.finish()
            self._completed()
        elif not room:                         # a slow client: wait until the socket drains
            await self._wait_to_send(stream)
            if stream.gone:
                # (known here first: what the application lets out is its client's leaving,
                # counted as a disconnect, not an error logged with its traceback)
                self._went()
                raise ClientDisconnected("the client has gone")

    async def _send_path(self, path: str) -> None:
        """The file at ``path`` is the body (pathsend.py); raises if it cannot be sent, for
        the application to see why (and the client gets a 500, as for any failure)."""
        opened = pathsend.open_cached(path)
        if opened is None:                     # it may wait for the disk: not on this loop
            self.naming = True                 # (the file is the answer: no head before it)
            opened = await self.loop.run_in_executor(None, pathsend.open_regular, path)
        fd, size = opened
        if self.head_only:                     # HEAD, 204, 304: no body (HEAD: its length)
            os.close(fd)
            if self.answered:                  # (its head went ahead of it: _head_now)
                self._completed()
                return
            self.counted += size
            self._finish(b"")
            return
        self.req.respond(pathsend.file_response(self.status, self.head.headers(),  # type: ignore[arg-type]  # started
                                                self.head.length, fd, size))
        self._completed()

    async def _stream_path(self, path: str) -> None:
        """The file at ``path`` as the rest of a streamed body, read in the loop's executor:
        its head went before it was named (_head_now), so sendfile's whole answer cannot."""
        fd, _ = await self.loop.run_in_executor(None, pathsend.open_regular, path)
        with open(fd, "rb") as file:
            while block := await self.loop.run_in_executor(None, file.read, 256 * 1024):
                await self._body(block, True)
        await self._body(b"", False)

    def _finish(self, body: bytes) -> None:
        """The whole response, in one piece."""
        status = self.status
        assert status is not None              # (started)
        if self.head_only:
            self._answer_head(self.counted)
        else:
            if self.head.length not in (None, len(body)):
                self.counted = len(body)
                self._check_length(False)
            self.req.respond(self.head.whole(status, body))
        self._completed()

    def _check_length(self, more: bool) -> None:
        """Raise ValueError, for the application to see, if the body sent so far is longer
        than the Content-Length it declared, or (``more`` False: the last of it) shorter.
        (A whole body then gets a 500 instead; a streamed one is cut at the length or short
        of it, and its connection closes, so that the client never takes it for whole.)"""
        length = self.head.length
        if length is not None and (self.counted > length or (not more and self.counted < length)):
            raise ValueError(f"the response body is {'at least ' if more else ''}"
                             f"{self.counted} bytes, its Content-Length {length}")

    def _answer_head(self, length: int | None) -> None:
        """The head alone (HEAD, 204, 304), saying ``length`` if known (AnswerHead.head_only)."""
        self.req.respond(self.head.head_only(self.status, length))  # type: ignore[arg-type]  # started

    def _completed(self) -> None:
        self.complete = True
        if self.receiving:                     # a receive() waiting for the disconnect
            self._wake_receivers()

    # -- the application -----------------------------------------------------------------------

    async def run(self) -> None:
        req, handler = self.req, self.handler
        try:
            await handler.app(handler.scope(req), self.receive, self.send)
        except asyncio.CancelledError:         # stopping, past the deadline
            self._abort()
            raise
        except Exception:
            if not self.gone and self.body_error is None:
                handler.counts["errors"] += 1
                log.error("asgi: %s %s raised\n%s", req.method, req.target,
                          traceback.format_exc().rstrip())
            if not (self.gone and self.complete):
                self._fail()
        else:
            # An application told that its client went (http.disconnect) may stop there, its
            # answer unfinished (sse-starlette, Django): that is no error, but the answer must
            # still end, or a connection whose client only sent its FIN would wait for it.
            if not self.complete:
                if not self.gone and self.body_error is None:
                    handler.counts["errors"] += 1
                    log.error("asgi: %s %s: the application returned without %s the response",
                              req.method, req.target,
                              "starting" if self.status is None else "completing")
                self._fail()
        finally:
            if self.watching:
                req.on_gone(None)

    def _fail(self) -> None:
        """The application could not answer: 500 (or what a bad body deserves) if nothing has
        gone yet, else the response is cut off."""
        if self.stream is not None:
            self.stream.fail()
        elif not self.complete:
            error = self.body_error
            self.req.respond(responses.server_error() if error is None
                             else responses.error(error.status, str(error)))
        self.complete = True

    def _abort(self) -> None:
        if self.stream is not None and not self.complete:
            self.stream.fail()
        self.complete = True


def mount_asgi(rt: Runtime, app: Application, *, name: str = "asgi", tasks: int = 1000,
               predicate: Any = None, loop_factory: LoopFactory | None = None,
               **options: Any) -> Sink:
    """Add an asyncio stage running ``app``, at most ``tasks`` requests at once (the others
    wait in its queue, where ``predicate`` sees them with those in flight); returns its sink,
    which an HTTP server (or a router in front of several applications) sends HttpRequest
    events to. ``options`` go to ``AsgiHandler``."""
    return rt.add_stage(name, AsgiHandler(app, **options), tasks=tasks,
                        loop_factory=loop_factory, predicate=predicate).sink
