"""ASGI WebSockets: one connection's handshake, messages and close, framed by wsproto.

The request that asks for the upgrade reaches the application's asyncio stage as any other;
``websocket.accept`` answers it with a ``Switch`` (the 101 that wsproto writes), after which the
HTTP connection hands every byte it reads to this object (a ``Tunnel``), on the server's loop
thread. Those bytes are framed here, on the application's loop: pings are answered as they
come, whether the application reads or not, and whole messages wait for ``receive()``. Past
``READ_LIMIT`` bytes of messages the application has not received (or four times that not yet
framed, if the application's loop is slow to get to them) the connection stops reading, and
TCP slows the client. What ``send()`` writes goes through the HTTP stage's queue, in order
with the 101, and ``send`` waits while more than ``OUTPUT_LIMIT`` bytes wait for a slow
client.

Keep-alive pings, as uvicorn's (``ws_ping_interval``, ``ws_ping_timeout``): every interval
the server pings an open WebSocket, and closes it with 1011 if the Pong does not come within
the timeout, which keeps idle connections through proxies and NATs and finds clients that
vanished without a FIN. One timer per WebSocket on the application's loop, cancelled when it
closes: the next ping, or while a ping waits for its Pong, the deadline.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import os
import traceback
from collections import deque
from typing import TYPE_CHECKING, Any

from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    Pong,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.extensions import PerMessageDeflate
from wsproto.utilities import LocalProtocolError, RemoteProtocolError, normed_header_dict

from . import response as responses
from .request import ClientDisconnected
from .response import Response, Switch
from .server import OUTPUT_LIMIT

if TYPE_CHECKING:
    from .asgi import AsgiHandler
    from .lifespan import Message as AsgiMessage
    from .request import HttpRequest

log = logging.getLogger("seda.asgi")

READ_LIMIT = 256 * 1024          # bytes of messages not yet received before reading pauses
RAW_LIMIT = 4 * READ_LIMIT       # bytes read and not yet framed before reading pauses
# Compressed input is framed this much at a time: wsproto inflates all it is given at once,
# and deflate makes up to about 1032 times its size, so a message over the limit is closed
# with at most about 4 MiB of it inflated past that (a smaller step costs more calls for
# every compressed message).
INFLATE_STEP = 4096
_ASGI = {"version": "3.0", "spec_version": "2.4"}
CONNECTING, OPEN, CLOSED = "CONNECTING", "OPEN", "CLOSED"
GOING_AWAY, TOO_BIG, INTERNAL_ERROR, RESTART, ABNORMAL = 1001, 1009, 1011, 1012, 1006


class WebSocket:
    """One ASGI WebSocket: its scope, ``receive`` and ``send``, and the tunnel its HTTP
    connection feeds once switched."""

    def __init__(self, handler: AsgiHandler, req: HttpRequest) -> None:
        self.handler, self.req, self.max_size = handler, req, handler.ws_max_size
        self.interval, self.timeout = handler.ws_ping_interval, handler.ws_ping_timeout
        self.loop: asyncio.AbstractEventLoop = handler.loop  # type: ignore[assignment]  # init ran
        self.ws = WSConnection(ConnectionType.SERVER)
        self.state = CONNECTING
        self.connected = False                 # websocket.connect has been received
        self.close = (ABNORMAL, "")            # how it closed: code and reason
        self.handshake: Request | None = None
        self.subprotocols: list[str] = []      # those the client offered, none of them empty
        self.step = 0                          # bytes framed at a time; 0: all at once
        # from the loop thread: bytes read, and whether the client stopped sending
        self.inbox: deque[bytes] = deque()
        self.eof = False
        self.signalled = False                 # _arrived is on its way to our loop
        self.fed = 0                           # bytes fed (loop thread only)
        self.framed = 0                        # of those, framed (our loop only)
        self.paused = False                    # reading is paused for us
        self.backlog = 0                       # bytes of messages not yet received
        # on our loop
        self.messages: deque[AsgiMessage] = deque()
        self.parts: list[Any] = []             # the message being read, piece by piece
        self.size = 0
        self.waiting: asyncio.Future[None] | None = None    # receive() waiting
        self.sending: asyncio.Future[None] | None = None    # send() waiting for the socket
        self.sent = self.confirmed = 0         # bytes written; of those, known to have left
        self.denial: Response | None = None    # websocket.http.response, being written
        self.keepalive: asyncio.TimerHandle | None = None   # the next ping, or the deadline
        self.ping: bytes | None = None         # the payload of the ping waiting for its Pong
        self.pinged = 0.0                      # when it went (loop time)
        self.opened = self.loop.create_future()   # the handshake is answered (see serve)

    # -- the handshake ---------------------------------------------------------------------------

    def start(self) -> bool:
        """Check the handshake (wsproto, and the key here); False, with a 400 or a 426
        answered, if it is not one."""
        req = self.req
        try:
            self.ws.initiate_upgrade_connection(req.headers, req.target)
            event = next(self.ws.events())
        except RemoteProtocolError as exc:
            req.respond(_refusal(exc))
            return False
        except StopIteration:
            req.respond(responses.bad_request("not a WebSocket handshake"))
            return False
        assert isinstance(event, Request)
        # wsproto checks that the key is there, not what it is (RFC 6455 4.2.1: base64 of 16
        # bytes); it answers with the key as this reads it, repeated fields joined
        key = normed_header_dict(event.extra_headers)[b"sec-websocket-key"]
        if not _is_key(key):
            req.respond(responses.bad_request(
                "not a WebSocket handshake: Sec-WebSocket-Key is not base64 of 16 bytes"))
            return False
        self.handshake = event
        # an empty element of a list is no element (RFC 9110 5.6.1): an empty field offers none
        self.subprotocols = [name for name in event.subprotocols if name]
        return True

    def scope(self) -> AsgiMessage:
        handler, req = self.handler, self.req
        path, raw_path, query = handler.target_fields(req)
        scheme, client = handler.origin(req)
        return {
            "type": "websocket",
            "asgi": _ASGI,
            "http_version": req.version,
            "scheme": "wss" if scheme == "https" else "ws",
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "root_path": handler.root_path,
            "headers": req.headers,
            "client": client,
            "server": handler.server,
            "subprotocols": list(self.subprotocols),
            "state": dict(handler.lifespan.state),
            "extensions": {"websocket.http.response": {}},
        }

    # -- the tunnel: the server's loop thread ----------------------------------------------------

    def feed(self, data: bytes) -> None:
        if data:
            self.inbox.append(data)
            self.fed += len(data)
            if self.fed - self.framed > RAW_LIMIT and not self.paused:
                self.paused = True             # (our loop resumes it, in _steer)
                self.req.connection.pause_reading()    # type: ignore[attr-defined]  # a server's
        else:
            self.eof = True
        self._signal()

    def lost(self) -> None:
        self.eof = True
        self._signal()

    def stopping(self) -> None:
        with contextlib.suppress(RuntimeError):    # our loop has closed already
            self.loop.call_soon_threadsafe(self._restart)

    def _signal(self) -> None:
        if not self.signalled:
            self.signalled = True
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._arrived)

    # -- what arrived: our loop ------------------------------------------------------------------

    def _arrived(self) -> None:
        """Frame what the client sent: answer pings, keep messages, see the close."""
        self.signalled = False
        inbox = self.inbox
        data = b"".join([inbox.popleft() for _ in range(len(inbox))])
        self.framed += len(data)
        if self.state is not OPEN:
            return
        try:
            # (compressed, a step at a time, so that a message too large is closed before
            # more of it is inflated: see INFLATE_STEP; plain, all at once)
            at, step = 0, self.step or len(data)
            while at < len(data) and self.state is OPEN:
                if self.step and self.backlog > READ_LIMIT:
                    # the application is behind: the rest waits uninflated until it receives
                    # (so that many messages, each under the limit, cannot inflate together)
                    self.inbox.appendleft(data[at:])
                    self.framed -= len(data) - at
                    break
                self.ws.receive_data(data[at:at + step])
                at += step
                self._frame()
            if self.eof and not self.inbox and self.state is OPEN:
                self.ws.receive_data(None)
                self._frame()
        except LocalProtocolError:             # data after the close: nothing to do with it
            pass
        self._steer()
        self._wake()

    def _frame(self) -> None:
        """Act on what wsproto made of the bytes it was given, until the WebSocket closes."""
        for event in self.ws.events():
            if isinstance(event, TextMessage | BytesMessage):
                self._piece(event)
            elif isinstance(event, Ping):
                self._write(self.ws.send(event.response()))
            elif isinstance(event, Pong):
                self._ponged(event)
            elif isinstance(event, CloseConnection):
                self._closed_by_client(event)
            if self.state is not OPEN:
                break

    def _steer(self) -> None:
        """Read while the messages waiting for the application stay under READ_LIMIT."""
        limit = READ_LIMIT // 2 if self.paused else READ_LIMIT
        behind = self.backlog > limit and self.state is OPEN
        if behind is not self.paused:
            self.paused = behind
            self.req.connection.pause_reading(behind)   # type: ignore[attr-defined]

    def _piece(self, event: TextMessage | BytesMessage) -> None:
        self.parts.append(event.data)
        self.size += _size(event.data)
        if self.size > self.max_size:
            self._close_now(TOO_BIG, f"a message over {self.max_size} bytes")
            return
        if event.message_finished:
            key = "text" if isinstance(event, TextMessage) else "bytes"
            joined = ("" if key == "text" else b"").join(self.parts)
            self.messages.append({"type": "websocket.receive", key: joined})
            self.backlog += self.size
            self.parts, self.size = [], 0

    def _closed_by_client(self, event: CloseConnection) -> None:
        """The client closed (or the connection went: 1006): answer, and it is over."""
        if event.code != ABNORMAL:
            with contextlib.suppress(LocalProtocolError):
                self._write(self.ws.send(event.response()))
        self._over(int(event.code), event.reason or "")

    def _close_now(self, code: int, reason: str = "") -> None:
        """We close: a close frame, then the connection (the socket layer lingers, so the
        client reads the frame and its answer is drained)."""
        with contextlib.suppress(LocalProtocolError):
            self._write(self.ws.send(CloseConnection(code=code, reason=reason)))
        self._over(code, reason)

    def _over(self, code: int, reason: str) -> None:
        """Closed: no more pings, and the connection ends after what was written."""
        self.state, self.close = CLOSED, (code, reason)
        self.parts = []                        # a message cut short goes (1009: up to max_size)
        if self.keepalive is not None:
            self.keepalive.cancel()
            self.keepalive = None
        self._write(b"", close=True)

    # -- keep-alive pings: our loop ---------------------------------------------------------------

    def _ping_at(self, when: float) -> None:
        """The next ping at loop time ``when``, if pings are on."""
        if self.interval:
            self.keepalive = self.loop.call_at(when, self._send_ping)

    def _send_ping(self) -> None:
        """Ping with a payload of our own, so that only its Pong counts (as uvicorn and
        websockets do); then wait for that Pong or, with no timeout, just ping again."""
        self.ping, self.pinged = os.urandom(4), self.loop.time()
        self._write(self.ws.send(Ping(payload=self.ping)))
        if self.timeout:
            self.keepalive = self.loop.call_later(self.timeout, self._ping_timed_out)
        else:
            self._ping_at(self.pinged + self.interval)

    def _ponged(self, event: Pong) -> None:
        if bytes(event.payload) != self.ping:  # unasked for, or too late: it proves nothing
            return
        self.ping = None
        if self.timeout:                       # (without, the next ping is already set)
            self.keepalive.cancel()            # type: ignore[union-attr]  # the deadline
            self._ping_at(self.pinged + self.interval)

    def _ping_timed_out(self) -> None:
        if self.eof:
            # the client has gone with input left over for the application (see _arrived):
            # no Pong can come, and its end is told once that input is received
            return
        if self.paused:
            # we stopped reading (the application is behind): the Pong may be waiting unread,
            # so the client is not to blame; look again after another timeout
            self.keepalive = self.loop.call_later(self.timeout, self._ping_timed_out)
            return
        self._close_now(INTERNAL_ERROR, "keepalive ping timeout")
        self._wake()

    def _restart(self) -> None:
        """The server is stopping: 1012 (service restart), as uvicorn says it."""
        if self.state is OPEN:
            self._close_now(RESTART)
            self._wake()

    def _wake(self) -> None:
        """News for a receive() waiting; and, once closed, for a send() waiting."""
        if self.waiting is not None:
            _resolve(self.waiting)
        if self.sending is not None and self.state is CLOSED:
            _resolve(self.sending)

    def _write(self, data: bytes, close: bool = False) -> None:
        self.sent += len(data)
        self.req.connection.write(data, close)     # type: ignore[attr-defined]  # a server's

    # -- receive ---------------------------------------------------------------------------------

    async def receive(self) -> AsgiMessage:
        if not self.connected:
            self.connected = True
            return {"type": "websocket.connect"}
        while True:
            if self.messages:
                message = self.messages.popleft()
                self.backlog -= _size(message.get("text") or message.get("bytes") or b"")
                if self.paused:
                    self._steer()
                if self.inbox and not self.signalled and self.backlog <= READ_LIMIT:
                    self._arrived()            # what _arrived left uninflated (see there)
                return message
            if self.state is CLOSED:
                code, reason = self.close
                return {"type": "websocket.disconnect", "code": code, "reason": reason}
            self.waiting = self.loop.create_future()
            try:
                await self.waiting
            finally:
                self.waiting = None

    # -- send ------------------------------------------------------------------------------------

    async def send(self, message: AsgiMessage) -> None:
        kind = message["type"]
        state = self.state
        if kind == "websocket.accept" and state is CONNECTING:
            self._accept(message)
        elif kind == "websocket.send" and state is OPEN:
            text, data = message.get("text"), message.get("bytes")
            payload = text if text is not None else data
            if payload is None:
                raise ValueError("websocket.send without text or bytes")
            if self.eof:                       # gone, with input left over (see _arrived)
                raise ClientDisconnected("the client has gone")
            self._write(self.ws.send(Message(data=payload)))
            if self.sent - self.confirmed > OUTPUT_LIMIT:
                await self._drained()
                if self.state is CLOSED:
                    raise ClientDisconnected(f"the WebSocket closed ({self.close[0]})")
        elif kind == "websocket.close":
            if state is CONNECTING:            # refused before the handshake: 403 (ASGI)
                self.state = CLOSED
                self.req.respond(responses.forbidden())
            elif state is OPEN:
                self._close_now(message.get("code") or 1000, message.get("reason") or "")
        elif kind.startswith("websocket.http.response.") and state is CONNECTING:
            self._deny(message)
        elif state is CLOSED and kind in ("websocket.send", "websocket.close"):
            if kind == "websocket.send":
                raise ClientDisconnected(f"the WebSocket is closed ({self.close[0]})")
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r} on a WebSocket {state}")

    def _accept(self, message: AsgiMessage) -> None:
        # "" names no subprotocol: taken for none (as uvicorn does), never sent as an empty field
        subprotocol = message.get("subprotocol") or None
        if subprotocol is not None and subprotocol not in self.subprotocols:
            self._fail_handshake(f"the application accepted subprotocol {subprotocol!r}, which "
                                 f"the client did not offer (it offered {self.subprotocols})")
        offered = self.handshake.extensions if self.handshake is not None else []
        headers = [(bytes(k), bytes(v)) for k, v in message.get("headers", ())]
        deflate = PerMessageDeflate()
        head = self.ws.send(AcceptConnection(
            subprotocol=subprotocol, extra_headers=headers,
            extensions=[deflate] if offered else []))
        if deflate.enabled():                  # the client offered it: frames may be inflated
            self.step = INFLATE_STEP
        self.state = OPEN
        self.req.respond(Switch(head, self))
        self._ping_at(self.loop.time() + self.interval)
        _resolve(self.opened)

    def _fail_handshake(self, why: str) -> None:
        """The application's accept cannot be sent (ASGI: the server fails the handshake): a
        500 now, whatever the application does next, and its send raises. Logged here, once:
        an application may catch the error, and run does not log one raised after the end."""
        self.handler.counts["errors"] += 1
        log.error("asgi: WebSocket %s: %s", self.req.target, why)
        self.state = CLOSED
        self.req.respond(responses.server_error())
        raise RuntimeError(why)

    def _deny(self, message: AsgiMessage) -> None:
        """The websocket.http.response extension: an HTTP answer instead of a WebSocket."""
        if message["type"] == "websocket.http.response.start":
            headers = [(k.decode("latin-1"), v.decode("latin-1"))
                       for k, v in message.get("headers", ())]
            self.denial = Response(message["status"], b"", headers)
            return
        if self.denial is None:
            raise RuntimeError("websocket.http.response.body before its start")
        self.denial.body += message.get("body", b"")
        if not message.get("more_body", False):
            self.state = CLOSED
            self.req.respond(self.denial)

    async def _drained(self) -> None:
        """Until what was written so far has (all but OUTPUT_LIMIT // 2 of it) left."""
        future: asyncio.Future[None] = self.loop.create_future()
        self.sending, sent = future, self.sent

        def drained() -> None:                   # on the server's loop thread
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(_resolve, future)

        self.req.connection.when_drained(drained)   # type: ignore[attr-defined]
        try:
            await future
        finally:
            self.sending = None
        self.confirmed = sent

    # -- the application ---------------------------------------------------------------------------

    async def serve(self) -> None:
        """Run the application, and return once the handshake is answered (or the application
        has ended), leaving the rest of its life to a task of its own. An open WebSocket is a
        connection, not a request in flight: it must not hold one of the stage's places
        (``tasks``) for hours, keeping requests out, nor count its life as a response time
        for an admission controller."""
        self.handler.open_websockets += 1
        self.handler.manager.spawn(self.run()).add_done_callback(self._run_ended)
        await self.opened

    def _run_ended(self, task: asyncio.Task[None]) -> None:
        self.handler.open_websockets -= 1
        _resolve(self.opened)

    async def run(self) -> None:
        handler, req = self.handler, self.req
        if not self.start():
            return
        try:
            await handler.app(self.scope(), self.receive, self.send)
        except asyncio.CancelledError:
            self._ended(RESTART)
            raise
        except Exception:
            if self.state is not CLOSED:
                handler.counts["errors"] += 1
                log.error("asgi: WebSocket %s raised\n%s", req.target,
                          traceback.format_exc().rstrip())
            self._ended(INTERNAL_ERROR)
        else:
            self._ended(1000)

    def _ended(self, code: int) -> None:
        """The application has returned (or raised): end what it left open."""
        if self.state is CONNECTING:           # never accepted nor refused
            self.state = CLOSED
            self.req.respond(responses.server_error() if code != 1000 else responses.forbidden())
        elif self.state is OPEN:
            self._close_now(code)


def _refusal(exc: RemoteProtocolError) -> Response:
    """The answer to a request wsproto does not take for a handshake: the status and fields
    it suggests, 400 but for a Sec-WebSocket-Version other than 13, which is 426 with
    ``Sec-WebSocket-Version: 13`` (RFC 6455 4.2.2, 4.4). wsproto's text for that one says
    the field is missing, so it has a text of its own."""
    hint = exc.event_hint if isinstance(exc.event_hint, RejectConnection) else RejectConnection()
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in hint.headers]
    if hint.status_code == 426:
        text = "unsupported WebSocket version: this server speaks version 13"
    else:
        text = f"not a WebSocket handshake: {exc}"
    return responses.error(hint.status_code, text, headers)


def _is_key(key: bytes) -> bool:
    """Whether ``key`` is a Sec-WebSocket-Key: base64 of 16 bytes (RFC 6455 4.1, 4.2.1)."""
    try:
        return len(base64.b64decode(key, validate=True)) == 16
    except binascii.Error:
        return False


def _size(data: str | bytes | bytearray) -> int:
    """A message's size as the limit counts it, in bytes, as uvicorn's: a text one's UTF-8
    (up to 4 a character; all-ASCII text is counted without an encode)."""
    return len(data.encode()) if type(data) is str and not data.isascii() else len(data)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
