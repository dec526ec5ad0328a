"""The router's neighbours: established connections, split into ultrapeers and leaves, and the
``--max-connections`` slots they and the handshakes in progress hold.

The router broadcasts on its own threads while the server adds and removes peers on the loop
thread, so the lists are tuples replaced whole (copy on write): a broadcast reads one tuple,
a consistent snapshot, without a lock. Changes are rare (a connection opening or closing) and
take the lock.
"""

from __future__ import annotations

import threading
from typing import Any

from .addresses import Address


class Neighbours:
    """``ultrapeers`` (and servents that predate ultrapeers: they get everything), ``leaves``
    (no pings: an ultrapeer answers for them) and of those ``searched``, the leaves that sent a
    route table and so get queries; at most ``limit`` slots held at once.

    A leaf asks for queries by sending its QRP table: gtk-gnutella and LimeWire ultrapeers send
    none to a leaf that has not (qrp.c, qrt_build_query_target; GnutellaConnection,
    hitsQueryRouteTable). We do not read the table: a leaf that sent one gets every query."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.ultrapeers: tuple[Any, ...] = ()
        self.leaves: tuple[Any, ...] = ()
        self.searched: tuple[Any, ...] = ()
        self.slots = 0                    # reserved: handshakes accepted or dialing, and peers
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.ultrapeers) + len(self.leaves)

    def reserve(self) -> bool:
        """Take a slot for a connection about to be accepted or dialed; False when full."""
        with self._lock:
            if self.slots >= self.limit:
                return False
            self.slots += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.slots -= 1

    def free(self) -> int:
        return self.limit - self.slots

    def add(self, peer: Any) -> None:
        with self._lock:
            if peer.leaf:
                self.leaves = (*self.leaves, peer)
            else:
                self.ultrapeers = (*self.ultrapeers, peer)

    def search(self, peer: Any) -> None:
        """``peer`` sent a route table: if it is a leaf, it gets queries from now on."""
        with self._lock:
            if peer in self.leaves and peer not in self.searched:
                self.searched = (*self.searched, peer)

    def remove(self, peer: Any) -> None:
        with self._lock:
            if peer in self.leaves:
                self.leaves = tuple(p for p in self.leaves if p is not peer)
                self.searched = tuple(p for p in self.searched if p is not peer)
            elif peer in self.ultrapeers:
                self.ultrapeers = tuple(p for p in self.ultrapeers if p is not peer)

    def addresses(self) -> list[Address]:
        """Where our ultrapeer neighbours accept connections (those that said): hosts to offer
        in X-Try-Ultrapeers, and not to dial again."""
        return [p.listen for p in self.ultrapeers if p.listen is not None]
