"""Holding a stage's 90th-percentile response time to a target by bounding its queue: the
thesis's measurement (7.2.1) with an actuator sized by Little's law instead of a token bucket."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .driver import Controller, take_all
from .response_time import Estimate, Rounds

if TYPE_CHECKING:
    from .._stage import Stage

_MAX_SAMPLES = 100_000


class _Class(Estimate):
    """One class of events: its estimate, its share of the bound, and the bound."""

    def __init__(self, target: float) -> None:
        super().__init__(target)
        self.share = 1.0
        self.bound = float("inf")          # queue length at which arrivals are refused: set
                                           # by the controller's first tick


class ResponseTimeBound(Controller):
    """Admission predicate holding the p90 response time (enqueue to done) near ``target`` s.

    An event is refused while ``len(queue) >= capacity * target * share`` (at least 1, so an
    idle stage admits): no more may wait than the stage finishes within the target.
    ``capacity`` (events/s) is measured each round as pool threads / mean service time, which
    under CPython's GIL is right for CPU-bound work (a thread's service time stretches with the
    threads sharing the core) as for blocking work. On an asyncio stage the tasks that overlap
    (measured by the stage) take the place of the threads, and ``len(queue)`` counts the tasks
    in flight too: they wait for the loop's thread as queued events wait for a pool.
    ``share`` closes the loop on the measured p90 the way the thesis's controller tunes its
    rate: after ``nreq`` samples or ``timeout`` s, ``cur = alpha*cur + (1-alpha)*p90``,
    ``err = (cur - target)/target``; ``err > err_d``: share / ``adj_d``; ``err < err_i``:
    share x ``adj_d`` up to 1. Until the first events are served the capacity is unknown,
    and the bound is the events the stage serves at once. It answers within a round of a
    load spike, where a token bucket started at ``rate_max`` must first be cut down to the
    capacity (docs/control.md).

    Classes (thesis 7.2.3): with ``classify(ev) -> int`` and ``targets={class: seconds}``,
    each class has its own p90 and share (larger number, higher priority; unknown classes count
    as the lowest). A class over its target first divides the shares of all lower classes by
    ``adjlo_d``; only once they are at ``share_min`` is its own share cut; and no lower class's
    share rises that round.
    """

    def __init__(self, target: float | None = None, nreq: int = 100, timeout: float = 1.0,
                 alpha: float = 0.7, err_i: float = -0.5, err_d: float = 0.0, adj_d: float = 1.2,
                 share_min: float = 0.01, *, classify: Callable[[Any], int] | None = None,
                 targets: Mapping[int, float] | None = None, adjlo_d: float = 10.0) -> None:
        if (target is None) == (targets is None) or (targets is not None and classify is None):
            raise ValueError("give a target, or classify and targets per class")
        if adj_d <= 1 or not 0 < share_min <= 1:
            raise ValueError(f"need adj_d > 1 and 0 < share_min <= 1, got {adj_d!r}, "
                             f"{share_min!r}")
        self.rounds = Rounds(nreq, timeout)
        self.period = self.rounds.period
        self.alpha = alpha
        self.err_i, self.err_d, self.adj_d, self.adjlo_d = err_i, err_d, adj_d, adjlo_d
        self.share_min = share_min
        self.classify = classify
        if targets is None:
            assert target is not None          # one or the other, checked above
            targets = {0: target}
        self.classes = {c: _Class(t) for c, t in sorted(targets.items())}   # lowest first
        self.lowest = next(iter(self.classes.values()))
        self.capacity: float | None = None      # events per second, measured
        self.rejected = 0
        self._services: deque[float] = deque(maxlen=_MAX_SAMPLES)
        self._length: Any = None

    # -- predicate ------------------------------------------------------------------------------

    def _class_of(self, ev: Any) -> _Class:
        if self.classify is None:
            return self.lowest
        return self.classes.get(self.classify(ev), self.lowest)

    def accept(self, ev: Any) -> bool:
        if self._length() < self._class_of(ev).bound:
            return True
        self.rejected += 1
        return False

    # -- controller -----------------------------------------------------------------------------

    def attach(self, stage: Stage) -> None:
        super().attach(stage)
        self._length = stage.sink.length
        stage.observe(self.observe)

    def observe(self, events: list[Any], waits: list[float], responses: list[float]) -> None:
        class_of = self._class_of
        for ev, wait, response in zip(events, waits, responses, strict=True):
            class_of(ev).samples.append(response)
            self._services.append(response - wait)

    def tick(self, now: float) -> None:
        stage = self.stage
        assert stage is not None                 # ticked only while attached
        if self.capacity is None:
            self._cold_start(stage)
        if not self.rounds.due(now, sum(len(k.samples) for k in self.classes.values())):
            return
        self._measure_capacity(stage)
        idle = not self._length()
        measured = [c for c, k in self.classes.items() if k.measure(idle, self.alpha)]
        over = [c for c in measured if self.classes[c].last_err() > self.err_d]
        for c in measured:                 # no share rises below a class missing its target
            k = self.classes[c]
            if k.last_err() < self.err_i and not any(o > c for o in over):
                k.share = min(1.0, k.share * self.adj_d)
        for c in reversed(over):           # highest first
            self._cut(c)
        self._set_bounds(stage)

    def _measure_capacity(self, stage: Stage) -> None:
        services = take_all(self._services)
        if services:
            mean = sum(services) / len(services)
            self.capacity = stage.manager.concurrency() / max(mean, 1e-6)

    def _cold_start(self, stage: Stage) -> None:
        """Until a service time is measured the capacity is unknown, and a crowd arriving at a
        cold stage (1024 logins in its first second) would all be admitted to wait behind each
        other: admit as many as run at once, and size the bound from the first events served
        rather than waiting for the round to end."""
        if self._services:
            self._measure_capacity(stage)
        self._set_bounds(stage)

    def _set_bounds(self, stage: Stage) -> None:
        capacity = self.capacity
        for k in self.classes.values():      # at least one may wait: an idle stage admits
            if capacity is None:
                k.bound = max(1.0, stage.manager.concurrency())
            else:
                k.bound = max(1.0, capacity * k.target * k.share)

    def _cut(self, c: int) -> None:
        lower = [k for d, k in self.classes.items() if d < c and k.share > self.share_min]
        for k in lower:
            k.share = max(self.share_min, k.share / self.adjlo_d)
        if not lower:
            k = self.classes[c]
            k.share = max(self.share_min, k.share / self.adj_d)

    def state(self) -> dict[str, Any]:
        top = self.classes[max(self.classes)]
        return {"p90_ms": None if top.cur is None else top.cur * 1000,
                "target_ms": top.target * 1000, "capacity": self.capacity,
                "bound": top.bound, "rejected": self.rejected,
                "shares": {str(c): k.share for c, k in self.classes.items()}}
