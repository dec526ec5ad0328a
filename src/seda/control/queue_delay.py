"""A queueing-delay predicate in the spirit of CoDel (Nichols and Jacobson, 2012)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .driver import Controller, take_all

if TYPE_CHECKING:
    from .._stage import Stage


class QueueDelay(Controller):
    """CoDel's signal is a *standing* queue: the smallest queueing delay seen over ``interval``
    stays above ``target``; a burst that drains within the interval does not trip it. Admission
    follows: normally the queue may hold what the stage drains in one ``interval`` (room for
    bursts); while a standing queue is seen, only what it drains within ``target``. Drain rates
    are measured each interval. (CoDel's own drop schedule, one drop per interval/sqrt(n),
    relies on senders that slow down after a drop; an open-loop flood does not.)"""

    def __init__(self, target: float = 0.005, interval: float = 0.1) -> None:
        if not 0 < target <= interval:
            raise ValueError("need 0 < target <= interval (seconds)")
        self.target, self.interval, self.period = target, interval, interval
        self.waits: deque[float] = deque(maxlen=100_000)
        self.shedding = False
        self.rate = 0.0                    # events drained per second over the last interval
        self.bound = float("inf")          # queue length above which arrivals are refused
        self.min_wait: float | None = None
        self._length: Callable[[], int]     # set by attach
        self._last: tuple[float, int] | None = None

    def attach(self, stage: Stage) -> None:
        super().attach(stage)
        self._length = stage.sink.length
        stage.observe(self.observe)

    def observe(self, events: list[Any], waits: list[float], responses: list[float]) -> None:
        self.waits.extend(waits)

    def tick(self, now: float) -> None:
        waits = take_all(self.waits)
        stage = self.stage
        assert stage is not None                 # ticked only while attached
        processed = stage.processed
        last, self._last = self._last, (now, processed)
        if last is not None and now > last[0]:
            self.rate = (processed - last[1]) / (now - last[0])
        if waits:
            self.min_wait = min(waits)
            self.shedding = self.min_wait > self.target
        elif not self._length():
            self.min_wait, self.shedding = None, False       # idle: no queue at all
        if last is not None:                 # at least one may wait: an idle stage admits
            self.bound = max(1.0, self.rate * (self.target if self.shedding else self.interval))

    def accept(self, ev: Any) -> bool:
        return self._length() < self.bound

    def state(self) -> dict[str, Any]:
        return {"shedding": self.shedding, "queue_bound": self.bound, "drain_rate": self.rate,
                "min_wait_ms": None if self.min_wait is None else self.min_wait * 1000}
