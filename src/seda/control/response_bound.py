"""Holding a stage's 90th-percentile response time to a target by bounding its queue: the
thesis's measurement (7.2.1) with an actuator sized by Little's law instead of a token bucket."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from .driver import Controller, take_all
from .response_time import smoothed_p90

_MAX_SAMPLES = 100_000


class _Class:
    """One class of events: its target, samples, smoothed p90 and share of the bound."""

    __slots__ = ("cur", "err", "samples", "share", "target")

    def __init__(self, target: float) -> None:
        if target <= 0:
            raise ValueError(f"a response-time target is seconds > 0, got {target!r}")
        self.target, self.share = target, 1.0
        self.samples: deque[float] = deque(maxlen=_MAX_SAMPLES)
        self.cur: float | None = None
        self.err: float | None = None


class ResponseTimeBound(Controller):
    """Admission predicate holding the p90 response time (enqueue to done) near ``target`` s.

    An event is refused while ``len(queue) >= capacity * target * share``: no more may wait
    than the stage finishes within the target. ``capacity`` (events/s) is measured each round
    as pool threads / mean service time, which under CPython's GIL is right for CPU-bound work
    (a thread's service time stretches with the threads sharing the core) as for blocking work.
    ``share`` closes the loop on the measured p90 the way the thesis's controller tunes its
    rate: after ``nreq`` samples or ``timeout`` s, ``cur = alpha*cur + (1-alpha)*p90``,
    ``err = (cur - target)/target``; ``err > err_d``: share / ``adj_d``; ``err < err_i``:
    share x ``adj_d`` up to 1. It answers within a round of a load spike, where a token bucket
    started at ``rate_max`` must first be cut down to the capacity (docs/control.md).

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
        if nreq < 1 or timeout <= 0 or adj_d <= 1 or not 0 < share_min <= 1:
            raise ValueError("need nreq >= 1, timeout > 0, adj_d > 1, 0 < share_min <= 1")
        self.nreq, self.timeout, self.alpha = nreq, timeout, alpha
        self.err_i, self.err_d, self.adj_d, self.adjlo_d = err_i, err_d, adj_d, adjlo_d
        self.share_min = share_min
        self.classify = classify
        targets = {0: target} if targets is None else targets
        self.classes = {c: _Class(t) for c, t in sorted(targets.items())}   # lowest first
        self.lowest = next(iter(self.classes))
        self.period = min(timeout, 0.01)
        self.capacity: float | None = None      # events per second, measured
        self.bounds = {c: float("inf") for c in self.classes}
        self.rejected = 0
        self._services: deque[float] = deque(maxlen=_MAX_SAMPLES)
        self._length: Any = None
        self._last_run: float | None = None

    # -- predicate ------------------------------------------------------------------------------

    def _class(self, ev: Any) -> int:
        if self.classify is None:
            return self.lowest
        c = self.classify(ev)
        return c if c in self.classes else self.lowest

    def accept(self, ev: Any) -> bool:
        if self._length() < max(1.0, self.bounds[self._class(ev)]):
            return True
        self.rejected += 1
        return False

    # -- controller -----------------------------------------------------------------------------

    def attach(self, stage: Any) -> None:
        super().attach(stage)
        self._length = stage.sink.length
        stage.observe(self.observe)

    def observe(self, events: list, waits: list, responses: list) -> None:
        classes, classify = self.classes, self._class
        for ev, wait, response in zip(events, waits, responses, strict=True):
            classes[classify(ev)].samples.append(response)
            self._services.append(response - wait)

    def tick(self, now: float) -> None:
        if self._last_run is None:
            self._last_run = now
        gathered = sum(len(k.samples) for k in self.classes.values())
        if gathered < self.nreq and now - self._last_run < self.timeout:
            return
        self._last_run = now
        services = take_all(self._services)
        if services:
            mean = sum(services) / len(services)
            self.capacity = self.stage.manager.thread_count() / max(mean, 1e-6)
        idle = not self._length()
        measured = [c for c, k in self.classes.items() if self._measure(k, idle)]
        over = [c for c in measured if self.classes[c].err > self.err_d]
        for c in measured:                 # no share rises below a class missing its target
            k = self.classes[c]
            if k.err < self.err_i and not any(o > c for o in over):
                k.share = min(1.0, k.share * self.adj_d)
        for c in reversed(over):           # highest first
            self._cut(c)
        if self.capacity is not None:
            self.bounds = {c: self.capacity * k.target * k.share for c, k in self.classes.items()}

    def _measure(self, k: _Class, idle: bool) -> bool:
        """Fold the round's samples into ``cur`` (see ``smoothed_p90``); False if there is
        nothing to go on."""
        cur = smoothed_p90(k.cur, take_all(k.samples), idle, self.alpha)
        if cur is None:
            return False
        k.cur, k.err = cur, (cur - k.target) / k.target
        return True

    def _cut(self, c: int) -> None:
        lower = [k for d, k in self.classes.items() if d < c and k.share > self.share_min]
        for k in lower:
            k.share = max(self.share_min, k.share / self.adjlo_d)
        if not lower:
            k = self.classes[c]
            k.share = max(self.share_min, k.share / self.adj_d)

    def state(self) -> dict:
        top = self.classes[max(self.classes)]
        return {"p90_ms": None if top.cur is None else top.cur * 1000,
                "target_ms": top.target * 1000, "capacity": self.capacity,
                "bound": self.bounds[max(self.classes)], "rejected": self.rejected,
                "shares": {str(c): k.share for c, k in self.classes.items()}}
