"""GnutellaServer (thesis 6.2.1): every connection, from its first byte to its close.

It owns the connections (the socket layer sends it their ``Connected``, ``Packet``, ``Closed``
and ``Failed`` events, for those we accept and those the catcher asks it to ``Dial``), runs
each one's handshake (``handshake.py``), then cuts its stream into descriptors (inflated first
when the peer deflates) and hands them to the router as ``(peer, descriptor)`` events.

Bad input costs one connection, never the service: a handshake that is no handshake or does not
finish within ``handshake_timeout``, a garbled descriptor stream, a payload over the limit:
the connection is aborted, the reason logged and counted (``closed`` in ``stats``). The router
refusing descriptors (its queue full) sheds them, counted, and the connection stays: Gnutella
is lossy and every descriptor has other paths.

A neighbour quiet for ``alive_period`` is pinged (TTL 1), as gtk-gnutella does with its "alive
pings"; one quiet for ``idle_timeout`` is gone without a word (a host that vanished sends no
FIN) and is aborted. When the runtime stops, each neighbour that reads Byes gets one before its
connection closes: gtk-gnutella counts a close without one against our address and User-Agent
(nodes.c, node_eof_v and node_mark_bad_vendor).

Runs on the loop thread, like the socket layer: a packet goes from the read stage to here to
the router's queue with no thread hand-off but the last.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from dataclasses import replace
from typing import Any

import seda
from seda.io import Closed, Connected, Failed, Packet, SocketLayer

from .addresses import Address, dialable
from .descriptors import encode_bye
from .errors import ProtocolError
from .events import CATCHER, ROUTER, Dial, Down, Greet, Up
from .handshake import Acceptor, Connector, Established, Refused, Request, Send, Settings
from .headers import PeerInfo, ultrapeer_headers
from .neighbours import Neighbours
from .options import Options
from .peer import CLOSED, CONNECTING, ESTABLISHED, HANDSHAKING, Peer

log = logging.getLogger("gnutella")

X_TRY = 10                    # hosts offered in an X-Try header
ADVERTISED_TTL = 4            # X-Max-TTL at most: LimeWire wants less than 5 of an ultrapeer


class _Expired:
    """Timer -> server: ``peer``'s handshake deadline."""

    __slots__ = ("peer",)

    def __init__(self, peer: Peer) -> None:
        self.peer = peer


class _Tick:
    """Timer -> server: look for quiet neighbours."""

    __slots__ = ()


class GnutellaServer(seda.EventHandler):
    """Handshakes and descriptor streams. ``port``: where we listen, for the Listen-IP we
    announce."""

    def __init__(self, options: Options, neighbours: Neighbours, hosts: Any, port: int) -> None:
        self.options, self.neighbours, self.hosts, self.port = options, neighbours, hosts, port
        advertised = ultrapeer_headers(degree=options.max_connections,
                                       max_ttl=min(options.max_ttl, ADVERTISED_TTL))
        self.settings = Settings(user_agent=options.user_agent, deflate=options.deflate,
                                 headers=tuple(advertised))
        # Quiet is measured in ticks of alive_period: a peer last heard ``n`` ticks ago has
        # been silent for at least n - 1 whole periods.
        self.ticks = 0
        self.idle_ticks = math.ceil(options.idle_timeout / options.alive_period)
        # Handshakes hold memory and a descriptor until their deadline: bound them too.
        self.max_handshakes = max(16, options.max_connections)
        self.handshaking = 0
        self.accepted = self.established = self.refused = self.busy = 0
        self.shed = 0                     # descriptors the router's full queue refused
        self.bytes_in = 0
        self.closed: Counter[str] = Counter()

    def init(self, ctx: seda.StageContext) -> None:
        rt = ctx.runtime
        self.own, self.timer = ctx.stage.sink, rt.timer
        self.router, self.catcher = rt.sink(ROUTER), rt.sink(CATCHER)
        self.layer = SocketLayer.of(rt)
        rt.signals.subscribe(seda.Stopping, self.own)
        self.timer.schedule(self.options.alive_period, self.own, _Tick())

    def handle_event(self, ev: Any) -> None:
        kind = type(ev)
        if kind is Packet:
            self._received(ev.conn, ev.data)
        elif kind is Connected:
            self._connected(ev.conn)
        elif kind is Closed or kind is Failed:
            self._closed(ev.conn, ev.error, failed=kind is Failed)
        elif kind is Dial:
            self._dial(ev.address)
        elif kind is _Expired:
            self._expired(ev.peer)
        elif kind is _Tick:
            self._tick(ev)
        elif kind is seda.Stopping:
            self._stopping()

    # -- opening ----------------------------------------------------------------------------------

    def _dial(self, address: Address) -> None:
        """The catcher wants a connection to ``address``: one slot, and a deadline that covers
        the TCP connect as well as the handshake."""
        if not self.neighbours.reserve():
            self.catcher.enqueue_lossy(Down(address, worked=False))
            return
        try:
            conn = self.layer.connect(address, self.own, max_pending=self.options.max_pending,
                                      overflow="close")
        except OSError as exc:
            log.info("cannot dial %s: %s", address, exc)
            self.neighbours.release()
            self.catcher.enqueue_lossy(Down(address, worked=False))
            return
        peer = Peer(conn, dialed=address)
        peer.slot = True
        conn.data = peer                  # before its events: they come after this handler
        self._start_clock(peer)

    def _connected(self, conn: Any) -> None:
        peer = conn.data
        if peer is None:                  # accepted
            self.accepted += 1
            if self.handshaking >= self.max_handshakes:
                self.busy += 1
                conn.abort()
                return
            peer = conn.data = Peer(conn)
            self._start_clock(peer)
        elif peer.reason is not None:
            return                        # dialed, and dropped before it connected
        peer.state = HANDSHAKING
        peer.local_ip = conn.sock.getsockname()[0]
        settings = self.settings
        if dialable(peer.local_ip, self.port):
            settings = replace(settings, listen_ip=(peer.local_ip, self.port))
        if peer.dialed is None:
            peer.handshake = Acceptor(settings)
        else:
            peer.handshake = Connector(settings)
            self._carry_out(peer, peer.handshake.start())

    def _start_clock(self, peer: Peer) -> None:
        self.handshaking += 1
        peer.timer = self.timer.schedule(self.options.handshake_timeout, self.own,
                                         _Expired(peer))

    def _expired(self, peer: Peer) -> None:
        if peer.state in (CONNECTING, HANDSHAKING):
            peer.timer = None
            timeout = self.options.handshake_timeout
            self._drop(peer, "handshake timeout", TimeoutError(f"no handshake in {timeout} s"))

    # -- the handshake ------------------------------------------------------------------------

    def _received(self, conn: Any, data: bytes) -> None:
        peer = conn.data
        if peer is None or peer.reason is not None or peer.state == CLOSED:
            return                        # closing: what it still says does not matter
        self.bytes_in += len(data)
        peer.heard = self.ticks
        if peer.state == ESTABLISHED:
            self._stream(peer, data)
            return
        try:
            self._carry_out(peer, peer.handshake.receive(data))
        except ProtocolError as exc:
            self._drop(peer, "bad handshake", exc)

    def _carry_out(self, peer: Peer, events: list) -> None:
        for ev in events:
            kind = type(ev)
            if kind is Send:
                try:
                    peer.conn.enqueue(ev.data)
                except seda.SinkError:
                    return                # closed meanwhile: its Closed event is on its way
            elif kind is Request:
                self._carry_out(peer, self._decide(peer, ev.peer))
            elif kind is Established:
                self._established(peer, ev)
            elif kind is Refused:
                self._refused(peer, ev)

    def _decide(self, peer: Peer, info: PeerInfo) -> list:
        """Accept while a slot is free; else refuse with 503 and hosts to try instead."""
        handshake = peer.handshake
        ultrapeers = self.neighbours.addresses()[:X_TRY]
        if not self.neighbours.reserve():
            x_try = self.hosts.sample(X_TRY, exclude=ultrapeers)
            return handshake.refuse(503, "Full", x_try=x_try, x_try_ultrapeers=ultrapeers)
        peer.slot = True
        return handshake.accept(x_try_ultrapeers=ultrapeers,
                                headers=[("Remote-IP", peer.conn.peer[0])])

    def _established(self, peer: Peer, ev: Established) -> None:
        info = ev.peer
        self.handshaking -= 1
        self.established += 1
        self._learn(info)
        peer.leaf, peer.bye, peer.heard = info.leaf, info.bye, self.ticks
        listen = info.listen_ip
        if peer.listen is None and listen is not None and dialable(*listen):
            peer.listen = listen
        peer.established(ev.deflate_in, ev.deflate_out, self.options.max_payload)
        self.neighbours.add(peer)
        if peer.dialed is not None:
            self.catcher.enqueue_lossy(Up(peer.dialed))
            self.router.enqueue_lossy(Greet(peer))
        if ev.extra:
            self._stream(peer, ev.extra)

    def _refused(self, peer: Peer, ev: Refused) -> None:
        if ev.by_peer:
            self._learn(ev.peer)
            peer.reason = f"refused by peer ({ev.code})"
        else:
            self.refused += 1
            peer.reason = "refused: full"
        peer.conn.close()                 # once our 503 (if any) is sent

    def _learn(self, info: PeerInfo) -> None:
        hosts = [*info.x_try, *info.x_try_ultrapeers]
        if hosts:
            self.hosts.learn(hosts)

    # -- descriptors -------------------------------------------------------------------------------

    def _stream(self, peer: Peer, data: bytes) -> None:
        parser = peer.parser
        try:
            if peer.inflater is None:
                self._route(peer, parser.feed(data))
            else:
                # inflated a piece at a time, each routed before the next is made: a small
                # packet that inflates to megabytes never sits in memory whole
                for piece in peer.inflater.decompress(data):
                    self._route(peer, parser.feed(piece))
        except ProtocolError as exc:
            self._route(peer, exc.descriptors)     # what came before the fault is good
            self._drop(peer, "bad descriptor", exc)

    def _route(self, peer: Peer, descriptors: list) -> None:
        if not descriptors:
            return
        try:
            self.router.enqueue_many([(peer, d) for d in descriptors])
        except seda.RejectedError:
            self.shed += len(descriptors)
        except seda.StageClosedError:
            pass                          # stopping

    # -- quiet neighbours, and the end ------------------------------------------------------------

    def _tick(self, tick: _Tick) -> None:
        """Ping each neighbour that said nothing for a whole ``alive_period``; abort one that
        said nothing for ``idle_timeout``. Its pong, or anything else, counts as a word."""
        self.ticks = now = self.ticks + 1
        n = self.neighbours
        for peer in n.ultrapeers + n.leaves:
            quiet = now - peer.heard
            if quiet > self.idle_ticks:
                idle = self.options.idle_timeout
                self._drop(peer, "idle", TimeoutError(f"nothing heard for {idle} s"))
            elif quiet >= 2:
                self.router.enqueue_lossy(Greet(peer, ttl=1))
        self.timer.schedule(self.options.alive_period, self.own, tick)

    def _stopping(self) -> None:
        """The runtime stops: a Bye to each neighbour that reads one, and every connection
        closed once what it has been sent is out."""
        n = self.neighbours
        for peer in n.ultrapeers + n.leaves:
            if peer.reason is None:
                peer.reason = "stopping"
                try:
                    if peer.bye:
                        peer.send(encode_bye(200, "Servent shutdown"))
                    peer.conn.close()
                except seda.SinkError:
                    pass                  # closed meanwhile

    # -- closing -----------------------------------------------------------------------------------

    def _drop(self, peer: Peer, reason: str, error: BaseException) -> None:
        """Close ``peer`` at once for ``reason``, dropping what it had still to send."""
        if peer.reason is None and peer.state != CLOSED:
            log.info("closing %r: %s: %s", peer, reason, error)
            peer.reason = reason
            peer.conn.abort(error)

    def _closed(self, conn: Any, error: BaseException | None, failed: bool) -> None:
        peer = conn.data
        if peer is None or peer.state == CLOSED:
            return
        worked = peer.state == ESTABLISHED
        if not worked:
            self.handshaking -= 1
        self.closed[peer.reason or _why(error, failed)] += 1
        self.neighbours.remove(peer)
        if peer.slot:
            peer.slot = False
            self.neighbours.release()
        if peer.dialed is not None:
            self.catcher.enqueue_lossy(Down(peer.dialed, worked))
        peer.closed()

    def stats(self) -> dict:
        """Connections open now (``connections``; ``searched``: leaves that sent a route table
        and so get queries) and since the start: TCP connections
        ``accepted``, handshakes ``established``, ``refused`` (503, full), ``busy`` (closed at
        once: too many handshakes in progress), ``closed`` by reason; descriptors ``shed``
        (the router's queue was full); ``bytes_in`` received; ``pending``: bytes queued for
        the neighbours and not yet taken by the kernel, in all and for the slowest one (what
        ``max_pending`` bounds, thesis 6.2.2)."""
        n = self.neighbours
        pending = [p.conn.pending for p in n.ultrapeers + n.leaves]
        return {"connections": {"ultrapeers": len(n.ultrapeers), "leaves": len(n.leaves),
                                "searched": len(n.searched), "handshaking": self.handshaking},
                "pending": {"bytes": sum(pending), "largest": max(pending, default=0)},
                "accepted": self.accepted, "established": self.established,
                "refused": self.refused, "busy": self.busy, "shed": self.shed,
                "bytes_in": self.bytes_in, "closed": dict(self.closed)}


def _why(error: BaseException | None, failed: bool) -> str:
    """The counter a close goes under when we did not close it ourselves."""
    if failed:
        return "connect failed"
    if isinstance(error, seda.RejectedError):      # the socket layer's overflow="close"
        return "slow reader"
    if error is None:
        return "closed by peer"
    return "socket error"
