"""Where each Gnutella descriptor goes (thesis 6.2; Gnutella 0.6 section 2.3), without I/O.

A router broadcasts pings and queries to its other neighbours and sends pongs, query hits and
pushes back along the path their ping, query or query hit came by. ``Routes`` keeps the tables
that path is remembered in and decides, for a descriptor that arrived on a connection, where it
goes and with which TTL and hops; the router stage carries the decision out. Connections are
whatever objects the caller uses for them; a table entry whose connection has since closed is
simply a dead end (``alive`` is asked at routing time, so closing a connection costs nothing).

Every table is bounded and forgets: ``Seen`` keeps two generations of entries and drops the
older one wholesale when its time is up or the newer one is full, so a flood of fresh GUIDs
costs bounded memory and one dict per generation, never a sweep.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

PING, PONG, PUSH, QUERY, QUERY_HIT = 0x00, 0x01, 0x40, 0x80, 0x81
LOCAL: Any = object()          # the source of descriptors this servent sent itself


class Seen:
    """A map from key to value that forgets: entries live between ``lifetime / 2`` and
    ``lifetime`` seconds, and at most ``capacity`` are kept."""

    __slots__ = ("_half", "_limit", "_newer", "_older", "_since")

    def __init__(self, lifetime: float, capacity: int) -> None:
        if lifetime <= 0 or capacity < 2:
            raise ValueError("a routing table needs lifetime > 0 and capacity >= 2")
        self._half = lifetime / 2
        self._limit = capacity // 2          # per generation
        self._newer: dict[bytes, Any] = {}
        self._older: dict[bytes, Any] = {}
        self._since = 0.0                    # when the newer generation began

    def __len__(self) -> int:
        return len(self._newer) + len(self._older)

    def _age(self, now: float) -> None:
        if now - self._since >= self._half or len(self._newer) >= self._limit:
            self._older, self._newer, self._since = self._newer, {}, now

    def get(self, key: bytes, now: float) -> Any:
        self._age(now)
        value = self._newer.get(key)
        return value if value is not None else self._older.get(key)

    def add(self, key: bytes, value: Any, now: float) -> bool:
        """Remember ``key``; False (and nothing changed) if it is remembered already."""
        self._age(now)
        if key in self._newer or key in self._older:
            return False
        self._newer[key] = value
        return True

    def discard(self, key: bytes, now: float) -> bool:
        """Forget ``key``; True if it was remembered."""
        self._age(now)
        return (self._newer.pop(key, None) is not None
                or self._older.pop(key, None) is not None)


class Forward(NamedTuple):
    """Send the descriptor on with ``ttl`` and ``hops``: to every neighbour but ``source``
    (``to`` is None: a broadcast) or to ``to`` alone."""

    to: Any
    ttl: int
    hops: int


class Drop(NamedTuple):
    """Send it nowhere, for ``reason`` (a counter's name: "duplicate", "expired", "no route")."""

    reason: str


class Routes:
    """The router's tables: ping and query GUIDs to the connection they came from, servent
    identifiers (from query hits) to the connection a push for them must take, and the GUIDs
    of pushes seen, so that none goes to a neighbour twice (gtk-gnutella closes a connection
    that sends it the same push or query again: routing.c, check_duplicate).

    ``max_ttl`` caps what a descriptor may claim: one arriving with TTL + hops above it has its
    TTL trimmed (modern servents use 7, some send more to reach further than their share).

    A ping or query whose first copy came the long way round, its TTL spent, went nowhere; a
    later copy of it that can still travel (the short way, held up on the way) is routed as
    the first was not, once. Without that the GUID rule would drop it as a duplicate, and the
    servents it was still to reach would never see it."""

    def __init__(self, alive: Callable[[Any], bool], *, max_ttl: int = 7,
                 lifetime: float = 600.0, capacity: int = 200_000) -> None:
        self.alive, self.max_ttl = alive, max_ttl
        self.pings = Seen(lifetime, capacity)
        self.queries = Seen(lifetime, capacity)
        self.servents = Seen(lifetime, capacity)
        self.spent = Seen(lifetime, capacity)     # ping and query GUIDs whose first copy expired
        self.pushes = Seen(lifetime, capacity)

    def originate(self, kind: int, guid: bytes, now: float) -> None:
        """This servent sends a ping or query of its own: their answers come to ``LOCAL``."""
        (self.pings if kind == PING else self.queries).add(guid, LOCAL, now)

    def route(self, source: Any, kind: int, guid: bytes, ttl: int, hops: int, now: float,
              servent: bytes = b"") -> Forward | Drop:
        """Where a descriptor that arrived on ``source`` goes. ``servent``: a query hit's
        servent identifier (its last 16 bytes), or the one a push is addressed to."""
        if ttl + hops > self.max_ttl:
            ttl = max(0, self.max_ttl - hops)
        if kind in (PING, QUERY):
            if (self.pings if kind == PING else self.queries).add(guid, source, now):
                if ttl <= 1:
                    self.spent.add(guid, True, now)
            elif ttl <= 1 or not self.spent.discard(guid, now):
                return Drop("duplicate")
            to = None
        elif kind == PONG:
            to = self.pings.get(guid, now)
        elif kind == QUERY_HIT:
            self.servents.add(servent, source, now)     # pushes for it go back this way
            to = self.queries.get(guid, now)
        elif kind == PUSH:
            if not self.pushes.add(guid, source, now):
                return Drop("duplicate")
            to = self.servents.get(servent, now)
        else:
            return Drop("unknown")
        if to is LOCAL:
            return Forward(LOCAL, ttl, hops)
        if kind not in (PING, QUERY) and (to is None or not self.alive(to)):
            return Drop("no route")
        if ttl <= 1:                       # it has gone as far as it may (0.6 section 2.3)
            return Drop("expired")
        return Forward(to, ttl - 1, hops + 1)
