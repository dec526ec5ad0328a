"""A queueing-delay predicate in the spirit of CoDel (Nichols and Jacobson, 2012)."""

from __future__ import annotations

from collections import deque
from typing import Any

from .driver import Controller


class QueueDelay(Controller):
    """CoDel's signal is a *standing* queue: the smallest queueing delay seen over ``interval``
    stays above ``target``. A burst that drains does not trip it. While it holds, the stage
    sheds: an arrival is rejected if the queue already holds what the stage can drain within
    ``target`` at the rate it drained over the last interval. (CoDel's own drop schedule,
    one drop per interval/sqrt(n), assumes senders that slow down on a drop; an open-loop
    flood does not, so the queue bound is derived from the measured drain rate instead.)"""

    def __init__(self, target: float = 0.005, interval: float = 0.1) -> None:
        if target <= 0 or interval <= 0:
            raise ValueError("target and interval are seconds > 0")
        self.target, self.interval, self.period = target, interval, interval
        self.waits: deque[float] = deque(maxlen=100_000)
        self.shedding = False
        self.limit = 0.0                   # events the stage drains within ``target``
        self.min_wait: float | None = None
        self._length: Any = None
        self._last: tuple[float, int] | None = None

    def attach(self, stage: Any) -> None:
        super().attach(stage)
        self._length = stage.sink._length
        stage.observe(self.observe)

    def observe(self, events: list, waits: list, responses: list) -> None:
        self.waits.extend(waits)

    def tick(self, now: float) -> None:
        waits = [self.waits.popleft() for _ in range(len(self.waits))]
        processed = self.stage.processed
        last, self._last = self._last, (now, processed)
        if last is not None and now > last[0]:
            self.limit = (processed - last[1]) / (now - last[0]) * self.target
        if waits:
            self.min_wait = min(waits)
            self.shedding = self.min_wait > self.target
        elif not self._length():
            self.min_wait, self.shedding = None, False       # idle: no queue at all

    def accept(self, ev: Any) -> bool:
        return not self.shedding or self._length() < self.limit

    def state(self) -> dict:
        return {"shedding": self.shedding, "queue_limit": self.limit,
                "min_wait_ms": None if self.min_wait is None else self.min_wait * 1000}
