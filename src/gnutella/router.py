"""GnutellaRouter (thesis 6.2.1): each descriptor sent where Gnutella's routing rules say.

Pings go to every other ultrapeer neighbour (never to leaves: an ultrapeer answers for its
leaves); queries to every other ultrapeer and to the leaves that sent a route table; pongs,
query hits and pushes back along the path their ping, query or query hit came by
(``routing.Routes``). Duplicates, descriptors out of TTL and any but a query hit over
``max_forward`` bytes are dropped, counted by reason. Every ping is answered with a pong of our
own (we share no files), and every pong teaches the host cache an address. What passes between
two neighbours only is not routed: a Bye closes the connection it came on, a route table marks
its leaf as wanting queries, vendor messages and the rest are dropped.

The stage runs on a thread pool sized by ``seda.control.ThreadPoolController``: routing itself
computes (one thread is best under the GIL), but with ``query_delay`` each query sleeps, the
thesis's artificial bottleneck (6.2.3), and threads that wait are capacity. The routing tables
and counters are shared by the threads under one lock, held for the decision only; sleeping and
sending happen outside it. What a batch sends to one neighbour goes out joined, in one write
(and one deflate flush).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import seda

from .descriptors import (
    HEADER_SIZE,
    PING,
    PONG,
    PUSH,
    QUERY,
    QUERY_HIT,
    ROUTE_TABLE_UPDATE,
    Bye,
    Descriptor,
    encode_ping,
    encode_pong,
    new_guid,
)
from .events import Greet
from .neighbours import Neighbours
from .peer import Peer
from .routing import LOCAL, Drop, Routes

log = logging.getLogger("gnutella")

NAMES = {PING: "ping", PONG: "pong", QUERY: "query", QUERY_HIT: "query_hit", PUSH: "push"}


class GnutellaRouter(seda.EventHandler):
    """Events: ``(peer, descriptor)`` from the server, and ``Greet(peer, ttl)``. ``port`` is
    where we listen (our pongs say so); ``query_delay`` seconds each query sleeps (0: none);
    ``max_forward``: the largest payload of a ping, pong, query or push we send on
    (gtk-gnutella closes a connection that sends it a query over 1 kB: nodes.c, node_read,
    search_queries_kick_size)."""

    def __init__(self, neighbours: Neighbours, hosts: Any, *, port: int,
                 query_delay: float = 0.0, max_ttl: int = 7, max_forward: int = 1024,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.neighbours, self.hosts, self.port = neighbours, hosts, port
        self.query_delay, self.max_ttl, self.clock = query_delay, max_ttl, clock
        self.max_forward = max_forward + HEADER_SIZE
        self.routes = Routes(Peer.alive, max_ttl=max_ttl)
        self._lock = threading.Lock()
        self.routed: Counter[str] = Counter()     # by type: decisions to send it on
        self.dropped: Counter[str] = Counter()    # by reason
        self.answered = 0                         # pings answered with our own pong
        self.sent = 0                             # descriptors queued on connections
        self.bytes_out = 0                        # bytes queued (compressed, if so)

    def handle_events(self, events: list) -> None:
        out: dict[Peer, list] = {}
        for ev in events:
            if type(ev) is tuple:
                self._route(ev[0], ev[1], out)
            elif type(ev) is Greet:
                self._greet(ev.peer, ev.ttl, out)
        self._send(out)

    def _route(self, source: Peer, desc: Descriptor, out: dict[Peer, list]) -> None:
        raw = desc.raw
        kind = raw[16]
        name = NAMES.get(kind)
        if name is None:              # vendor messages, QRP, BYE...: for us, not to route
            self._between(source, desc, kind)
            return
        if kind != QUERY_HIT and len(raw) > self.max_forward:
            with self._lock:
                self.dropped["too large"] += 1
            return
        if kind == QUERY and self.query_delay:
            self._send(out)           # what is routed already does not wait for the sleep
            out.clear()
            time.sleep(self.query_delay)
        servent = raw[-16:] if kind == QUERY_HIT else raw[23:39] if kind == PUSH else b""
        with self._lock:
            decision = self.routes.route(source, kind, desc.guid, desc.ttl, desc.hops,
                                         self.clock(), servent)
            if type(decision) is Drop:
                self.dropped[decision.reason] += 1
            else:
                self.routed[name] += 1
        if kind == PING and (type(decision) is not Drop or decision.reason == "expired"):
            self._answer(source, desc, out)    # a ping that got here is answered
        elif kind == PONG:
            self.hosts.learn(((desc.ip, desc.port),))
        if type(decision) is Drop or decision.to is LOCAL:
            return
        data = desc.forward(decision.ttl, decision.hops)
        if decision.to is not None:
            out.setdefault(decision.to, []).append(data)
            return
        neighbours = self.neighbours
        targets = neighbours.ultrapeers if kind == PING else (
            neighbours.ultrapeers + neighbours.searched)
        for peer in targets:
            if peer is not source:
                out.setdefault(peer, []).append(data)

    def _between(self, source: Peer, desc: Descriptor, kind: int) -> None:
        """A descriptor for us alone. A Bye (TTL 1, hops 0, or it is no Bye of a neighbour):
        the peer is leaving, so we close; a route table: its leaf wants queries."""
        if type(desc) is Bye and desc.hops == 0 and desc.ttl <= 1:
            log.info("%r says Bye: %d %s", source, desc.code, desc.message[:120])
            source.reason = "bye from peer"
            source.conn.close()
            reason = "bye"
        elif kind == ROUTE_TABLE_UPDATE:
            if source.leaf:
                self.neighbours.search(source)
            reason = "route table"
        else:
            reason = "unknown"
        with self._lock:
            self.dropped[reason] += 1

    def _answer(self, source: Peer, ping: Descriptor, out: dict[Peer, list]) -> None:
        """Our pong: where we listen, no files; it only has to get back to the asker."""
        try:
            pong = encode_pong(ping.guid, self.port, source.local_ip,
                               ttl=min(ping.hops + 1, self.max_ttl))
        except OSError:
            return                    # we reach this peer over IPv6: pongs carry IPv4 only
        out.setdefault(source, []).append(pong)
        with self._lock:
            self.answered += 1

    def _greet(self, peer: Peer, ttl: int, out: dict[Peer, list]) -> None:
        guid = new_guid()
        with self._lock:
            self.routes.originate(PING, guid, self.clock())
        out.setdefault(peer, []).append(encode_ping(guid=guid, ttl=ttl))

    def _send(self, out: dict[Peer, list]) -> None:
        sent = size = gone = 0
        for peer, items in out.items():
            try:
                size += peer.send(items[0] if len(items) == 1 else b"".join(items))
                sent += len(items)
            except seda.SinkError:    # closed, or closed just now for reading too slowly
                gone += len(items)
        with self._lock:
            self.sent += sent
            self.bytes_out += size
            if gone:
                self.dropped["closed"] += gone

    def stats(self) -> dict:
        """Descriptors ``routed`` by type (sent on, or answers to our own pings) and
        ``dropped`` by reason (``duplicate``, ``expired``, ``no route``, ``too large``,
        ``closed``: the neighbour went before they could be queued; and what is not routed:
        ``bye``, ``route table``, ``unknown`` type); pings ``answered``;
        descriptors ``sent`` and ``bytes_out`` queued on connections; the routing tables'
        sizes."""
        with self._lock:
            routes = self.routes
            return {"routed": dict(self.routed), "dropped": dict(self.dropped),
                    "answered": self.answered, "sent": self.sent, "bytes_out": self.bytes_out,
                    "tables": {"pings": len(routes.pings), "queries": len(routes.queries),
                               "servents": len(routes.servents),
                               "pushes": len(routes.pushes)}}
