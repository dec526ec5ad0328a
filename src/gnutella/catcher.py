"""GnutellaCatcher (thesis 6.2.1): keeps the router joined to the network.

It holds at least ``outgoing`` connections of our own open (the thesis's 4), besides whatever
connects to us: whenever fewer are up or on their way, it asks the server to ``Dial`` hosts
from the host cache, the ``--peer`` hosts first. A host that fails is retried later, the delay
doubling each time (``HostCache.failed``); one that worked and closed waits as long as after a
first failure before it is dialed again. Hosts come into the cache from pongs (the router) and
X-Try headers (the server); the catcher saves the cache's file now and then and at its end.

Runs on the loop thread; it wakes once a ``period``, or sooner when a host's backoff ends or
one of its connections goes down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import seda

from .addresses import Address
from .events import SERVER, Dial, Down, Up
from .hostcache import HostCache
from .neighbours import Neighbours

log = logging.getLogger("gnutella")

class _Tick:
    """Timer -> catcher: look at the connections."""

    __slots__ = ()


class GnutellaCatcher(seda.EventHandler):
    """``own``: our listening address (never dialed); ``path``: the host cache's file, if any."""

    def __init__(self, hosts: HostCache, neighbours: Neighbours, *, outgoing: int = 4,
                 own: Address | None = None, path: str | None = None, period: float = 1.0,
                 save_every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.hosts, self.neighbours, self.outgoing = hosts, neighbours, outgoing
        self.own, self.path, self.period, self.save_every = own, path, period, save_every
        self.clock = clock
        self.dialing: set[Address] = set()    # asked for, up or on its way
        self.up = 0                           # of those, handshake done
        self.dialed = self.failed = 0
        self.saved_at = clock()
        self.timer: Any = None

    def init(self, ctx: seda.StageContext) -> None:
        rt = ctx.runtime
        self.server, self.own_sink, self.schedule = rt.sink(SERVER), ctx.stage.sink, rt.timer
        self._wake(0.0)

    def handle_event(self, ev: Any) -> None:
        kind = type(ev)
        now = self.clock()
        if kind is _Tick:
            if self.timer is None or ev is not self.timer[2]:
                return                    # one that fired as it was being replaced
            self.timer = None
        elif kind is Up:
            self.up += 1
            self.hosts.succeeded(ev.address, now)
        elif kind is Down:
            self.dialing.discard(ev.address)
            if ev.worked:
                self.up -= 1
                # rested as long as a first failure waits: a host that accepts and hangs up
                # is not dialed in a loop
                self.hosts.succeeded(ev.address, now, rest=self.hosts.retry[0])
            else:
                self.failed += 1
                self.hosts.failed(ev.address, now)
        self._maintain(now)

    def _maintain(self, now: float) -> None:
        want = min(self.outgoing - len(self.dialing), self.neighbours.free())
        if want > 0:
            exclude = {*self.dialing, *self.neighbours.addresses()}
            if self.own is not None:
                exclude.add(self.own)
            for address in self.hosts.ready(now, want, exclude):
                self.dialing.add(address)
                self.dialed += 1
                self.server.enqueue_lossy(Dial(address))
        if self.path is not None and self.hosts.dirty and now - self.saved_at >= self.save_every:
            self._save(now)
        wake = self.period
        if len(self.dialing) < self.outgoing:
            retry = self.hosts.next_retry(now)
            if retry is not None:
                wake = min(wake, retry - now)
        self._wake(wake)

    def _wake(self, delay: float) -> None:
        """One tick pending at a time, at the earliest time asked for."""
        due = self.clock() + delay
        if self.timer is not None:
            if self.timer[1] <= due:
                return
            self.timer[0].cancel()
        tick = _Tick()
        self.timer = (self.schedule.schedule(max(0.0, delay), self.own_sink, tick), due, tick)

    def _save(self, now: float) -> None:
        self.saved_at = now
        try:
            self.hosts.save(self.path)
        except OSError as exc:
            log.warning("cannot save the host cache to %s: %s", self.path, exc)

    def destroy(self) -> None:
        if self.path is not None:
            self._save(self.clock())

    def stats(self) -> dict:
        """Hosts known; our outgoing connections ``dialing`` (up or on their way) and ``up``;
        since the start, ``dialed`` and ``failed`` attempts."""
        return {"hosts": len(self.hosts), "dialing": len(self.dialing), "up": self.up,
                "dialed": self.dialed, "failed": self.failed}
