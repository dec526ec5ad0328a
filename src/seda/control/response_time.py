"""The thesis's adaptive admission controllers (7.2.1 and 7.2.3): hold a stage's 90th-percentile
response time to a target by tuning a token bucket's rate, additive-increase /
multiplicative-decrease. Their measurement (``Rounds`` of samples, an ``Estimate`` of the p90) is
also ResponseTimeBound's."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from .driver import Controller, take_all
from .token_bucket import TokenBucket

if TYPE_CHECKING:
    from .._stage import Stage
    from .thread_pool import ThreadPoolController

_BURST = 0.1      # seconds of the current rate the bucket holds, when no depth is given
_MAX_SAMPLES = 100_000


def p90(samples: list[float]) -> float:
    """The (0.9 x n)-th smallest sample, as the thesis takes it."""
    samples.sort()
    return samples[max(0, math.ceil(0.9 * len(samples)) - 1)]


class Rounds:
    """The thesis's round (7.2.1): it ends once ``nreq`` samples have gathered or ``timeout``
    seconds have passed since the last round ended. ``period`` is how often the control thread
    should look, often enough to end a round soon after its ``nreq``-th sample."""

    def __init__(self, nreq: int, timeout: float) -> None:
        if nreq < 1 or timeout <= 0:
            raise ValueError(f"need nreq >= 1 and timeout > 0, got {nreq!r} and {timeout!r}")
        self.nreq, self.timeout = nreq, timeout
        self.period = min(timeout, 0.01)
        self._last: float | None = None

    def due(self, now: float, gathered: int) -> bool:
        """Whether the round ends at ``now``, with ``gathered`` samples in it."""
        if self._last is None:
            self._last = now
        if gathered < self.nreq and now - self._last < self.timeout:
            return False
        self._last = now
        return True


class Estimate:
    """What the thesis measures for one target: the round's response-time samples, folded at
    its end into a smoothed p90 ``cur`` (seconds) and its relative error ``err``."""

    def __init__(self, target: float) -> None:
        if target <= 0:
            raise ValueError(f"a response-time target is seconds > 0, got {target!r}")
        self.target = target
        self.samples: deque[float] = deque(maxlen=_MAX_SAMPLES)
        self.cur: float | None = None
        self.err: float | None = None

    def measure(self, idle: bool, alpha: float) -> bool:
        """Fold the samples gathered since last time into ``cur = alpha*cur + (1-alpha)*p90``;
        False if there is nothing to go on. A stage with no samples and an empty queue is idle:
        that counts as a sample of 0, so a cut made during a spike can recover after it (the
        thesis leaves this case open)."""
        samples = take_all(self.samples)
        if samples:
            samp = p90(samples)
        elif idle:
            samp = 0.0
        else:
            return False
        self.cur = samp if self.cur is None else alpha * self.cur + (1 - alpha) * samp
        self.err = (self.cur - self.target) / self.target
        return True

    def last_err(self) -> float:
        """``err`` as the last ``measure`` that returned True left it; asked only after one."""
        err = self.err
        assert err is not None              # set by every measure that returns True
        return err


class _Loop(Estimate):
    """One AIMD loop: the estimate and the admission rate it sets (Fig. 49-50)."""

    def __init__(self, target: float, p: dict[str, float], depth: float | None,
                 clock: Callable[[], float]) -> None:
        super().__init__(target)
        self.p, self.depth = p, depth
        self.rate = p["rate_max"]
        self.bucket = TokenBucket(self.rate, self._depth(), clock)
        self.lc = 0                         # multiclass: decrease requests waiting on lc_thresh

    def _depth(self) -> float:
        return self.depth if self.depth is not None else max(1.0, self.rate * _BURST)

    def set_rate(self, rate: float) -> None:
        self.rate = max(self.p["rate_min"], min(self.p["rate_max"], rate))
        self.bucket.set_rate(self.rate, self._depth())

    def decrease(self, factor: float) -> None:
        self.set_rate(self.rate / factor)

    def increase(self) -> None:
        self.set_rate(self.rate + self.p["adj_i"] * -(self.last_err() - self.p["c_i"]))


class ResponseTimeController(Controller):
    """Admission predicate holding the stage's p90 response time near ``target`` seconds.

    Response times are measured from enqueue to the end of handling (``measure=True``) or
    reported by the application with ``report(seconds)``, e.g. a web server's full request time.
    When ``nreq`` samples have gathered, or ``timeout`` seconds have passed, the control thread
    takes their 90th percentile, smooths it (``cur = alpha*cur + (1-alpha)*samp``), and with
    ``err = (cur - target) / target`` divides the rate by ``adj_d`` if ``err > err_d`` or adds
    ``adj_i * -(err - c_i)`` if ``err < err_i``; the rate stays within [rate_min, rate_max].

    ``disable()`` admits everything but keeps measuring; ``enable()`` resumes. With
    ``wait_for_threads=True`` admission control stays off until the stage's
    ThreadPoolController has grown the pool to its maximum (thesis 8.2.1).
    """

    def __init__(self, target: float, nreq: int = 100, timeout: float = 1.0, alpha: float = 0.7,
                 err_i: float = -0.5, err_d: float = 0.0, adj_i: float = 2.0, adj_d: float = 1.2,
                 c_i: float = -0.1, rate_min: float = 0.05, rate_max: float = 5000.0, *,
                 depth: float | None = None, measure: bool = True, enabled: bool = True,
                 wait_for_threads: bool = False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < rate_min <= rate_max:
            raise ValueError(f"need 0 < rate_min <= rate_max, got {rate_min!r}, {rate_max!r}")
        self.rounds = Rounds(nreq, timeout)
        self.period = self.rounds.period
        self.params = {"alpha": alpha, "err_i": err_i, "err_d": err_d, "adj_i": adj_i,
                       "adj_d": adj_d, "c_i": c_i, "rate_min": rate_min, "rate_max": rate_max}
        self.loop = _Loop(target, self.params, depth, clock)
        self.measure, self.enabled, self.wait_for_threads = measure, enabled, wait_for_threads
        self.admitting = enabled
        self.rejected = 0

    # -- what a stage or application reads and sets ---------------------------------------------

    @property
    def target(self) -> float:
        return self.loop.target

    @property
    def rate(self) -> float:
        """Current admission rate, events per second."""
        return self.loop.rate

    @property
    def p90(self) -> float | None:
        """Smoothed 90th-percentile response time in seconds; None before the first sample."""
        return self.loop.cur

    def enable(self) -> None:
        self.enabled = True
        self._gate()

    def disable(self) -> None:
        self.enabled = False
        self._gate()

    def report(self, seconds: float) -> None:
        """An externally measured response time, e.g. a request's from first byte to last."""
        self.loop.samples.append(seconds)

    # -- predicate -------------------------------------------------------------------------------

    def accept(self, ev: Any) -> bool:
        if not self.admitting or self.loop.bucket.accept():
            return True
        self.rejected += 1
        return False

    # -- controller ------------------------------------------------------------------------------

    def attach(self, stage: Stage) -> None:
        super().attach(stage)
        if self.measure:
            stage.observe(self.observe)

    def observe(self, events: list[Any], waits: list[float], responses: list[float]) -> None:
        self.loop.samples.extend(responses)

    def _gate(self) -> None:
        # what wait_for_threads waits on is a ThreadPoolController: the one sizing the pool
        threads = cast("ThreadPoolController | None",
                       self.stage.thread_control if self.stage is not None else None)
        growing = self.wait_for_threads and threads is not None and threads.size < threads.max
        self.admitting = self.enabled and not growing

    def _due(self, now: float, gathered: int) -> bool:
        self._gate()
        return self.rounds.due(now, gathered)

    def _idle(self) -> bool:
        return self.stage is None or not len(self.stage.sink)

    def tick(self, now: float) -> None:
        if not self._due(now, len(self.loop.samples)):
            return
        if not self.loop.measure(self._idle(), self.params["alpha"]) or not self.admitting:
            return                                # measure while off, but leave the rate be
        err = self.loop.last_err()
        if err > self.params["err_d"]:
            self.loop.decrease(self.params["adj_d"])
        elif err < self.params["err_i"]:
            self.loop.increase()

    def state(self) -> dict[str, Any]:
        return {"p90_ms": None if self.p90 is None else self.p90 * 1000, "rate": self.rate,
                "target_ms": self.target * 1000, "admitting": self.admitting,
                "rejected": self.rejected}


class MulticlassResponseTimeController(ResponseTimeController):
    """Per-class targets and token buckets (thesis 7.2.3). ``classify(ev)`` gives an event's
    class; a larger class number is a higher priority, and an unknown class is treated as the
    lowest. When class c misses its target, every lower class's rate is divided by ``adjlo_d``;
    once those are all at rate_min, c's own rate is divided by ``adj_d`` every ``lc_thresh``-th
    time. A class missing its target also stops lower classes' rates from rising that round.
    The lowest class, having none below it, is cut at once like a single-class controller.
    ``p90``, ``rate`` and ``target`` are those of the highest class.
    """

    def __init__(self, classify: Callable[[Any], int], targets: Mapping[int, float],
                 adjlo_d: float = 10.0, lc_thresh: int = 20, **kwargs: Any) -> None:
        if not targets:
            raise ValueError("targets maps each class to its response-time target")
        first = min(targets.values())
        super().__init__(first, **kwargs)
        self.classify, self.adjlo_d, self.lc_thresh = classify, adjlo_d, lc_thresh
        clock = self.loop.bucket.clock
        depth = kwargs.get("depth")
        self.classes = sorted(targets)                       # lowest priority first
        self.loops = {c: _Loop(targets[c], self.params, depth, clock) for c in self.classes}
        self._lowest = self.loops[self.classes[0]]
        self.loop = self.loops[self.classes[-1]]

    def report(self, seconds: float, cls: int | None = None) -> None:
        # no class (None) is no key: the lowest class's, as an unknown class is; testing for
        # None first would cost every report
        self.loops.get(cls, self._lowest).samples.append(seconds)  # type: ignore[arg-type]

    def accept(self, ev: Any) -> bool:
        if not self.admitting or self.loops.get(self.classify(ev), self._lowest).bucket.accept():
            return True
        self.rejected += 1
        return False

    def observe(self, events: list[Any], waits: list[float], responses: list[float]) -> None:
        for ev, seconds in zip(events, responses, strict=True):
            self.loops.get(self.classify(ev), self._lowest).samples.append(seconds)

    def tick(self, now: float) -> None:
        if not self._due(now, sum(len(loop.samples) for loop in self.loops.values())):
            return
        idle = self._idle()
        measured = {c: self.loops[c].measure(idle, self.params["alpha"]) for c in self.classes}
        if self.admitting:
            self.step(measured)

    def step(self, measured: dict[int, bool]) -> None:
        """One round of the multiclass rules, highest class first."""
        p, held = self.params, set()
        for i in range(len(self.classes) - 1, -1, -1):
            c, loop = self.classes[i], self.loops[self.classes[i]]
            if not measured[c]:
                continue
            lower = [self.loops[k] for k in self.classes[:i]]
            err = loop.last_err()
            if err > p["err_d"]:
                held.update(self.classes[:i])
                if not lower:
                    loop.decrease(p["adj_d"])
                elif any(low.rate > p["rate_min"] for low in lower):
                    for low in lower:
                        low.decrease(self.adjlo_d)
                else:
                    loop.lc += 1
                    if loop.lc >= self.lc_thresh:
                        loop.lc = 0
                        loop.decrease(p["adj_d"])
            elif err < p["err_i"] and c not in held:
                loop.increase()

    @property
    def rates(self) -> dict[int, float]:
        return {c: loop.rate for c, loop in self.loops.items()}

    def state(self) -> dict[str, Any]:
        return {"admitting": self.admitting, "rejected": self.rejected,
                "classes": {str(c): {"p90_ms": None if loop.cur is None else loop.cur * 1000,
                                     "rate": loop.rate, "target_ms": loop.target * 1000}
                            for c, loop in self.loops.items()}}
