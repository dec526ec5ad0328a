"""An adaptive concurrency limit in the spirit of TCP Vegas and Netflix's gradient limiter."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .driver import Controller, take_all

if TYPE_CHECKING:
    from .._stage import Stage


class AdaptiveConcurrency(Controller):
    """Admit while fewer than ``limit`` events are queued at the stage. Every ``period`` the limit
    follows the ratio of the shortest response time seen (the no-queue latency, Vegas's base
    RTT) to the current one (the mean of the last period):

        gradient = clamp(tolerance * min_rtt / rtt, 0.5, 1)
        limit    = (1 - smoothing) * limit + smoothing * (limit * gradient + sqrt(limit))

    so a queue that adds latency shrinks the limit, and room is probed by ``sqrt(limit)``. The
    minimum is forgotten every ``reset`` periods so a lasting change of service time is learnt.
    """

    def __init__(self, initial: float = 20, min_limit: float = 1, max_limit: float = 1000,
                 tolerance: float = 1.5, smoothing: float = 0.2, period: float = 0.1,
                 reset: int = 600) -> None:
        if not 1 <= min_limit <= initial <= max_limit:
            raise ValueError("need 1 <= min_limit <= initial <= max_limit")
        self.limit, self.min_limit, self.max_limit = float(initial), min_limit, max_limit
        self.tolerance, self.smoothing = tolerance, smoothing
        self.period, self.reset = period, reset
        self.responses: deque[float] = deque(maxlen=100_000)
        self.min_rtt: float | None = None
        self.rtt: float | None = None
        self._ticks = 0
        self._length: Callable[[], int]     # set by attach

    def attach(self, stage: Stage) -> None:
        super().attach(stage)
        self._length = stage.sink.length
        stage.observe(self.observe)

    def observe(self, events: list[Any], waits: list[float], responses: list[float]) -> None:
        self.responses.extend(responses)

    def tick(self, now: float) -> None:
        samples = take_all(self.responses)
        self._ticks += 1
        if self._ticks % self.reset == 0:
            self.min_rtt = None
        if not samples:
            return
        self.rtt = sum(samples) / len(samples)
        shortest = min(samples)
        self.min_rtt = shortest if self.min_rtt is None else min(self.min_rtt, shortest)
        gradient = max(0.5, min(1.0, self.tolerance * self.min_rtt / self.rtt))
        new = self.limit * gradient + math.sqrt(self.limit)
        self.limit = (1 - self.smoothing) * self.limit + self.smoothing * new
        self.limit = max(self.min_limit, min(self.max_limit, self.limit))

    def accept(self, ev: Any) -> bool:
        return self._length() < self.limit

    def state(self) -> dict[str, Any]:
        return {"limit": self.limit,
                "min_rtt_ms": None if self.min_rtt is None else self.min_rtt * 1000,
                "rtt_ms": None if self.rtt is None else self.rtt * 1000}
