"""Batching controller (thesis 5.4.2): the smallest batch that sustains the best throughput."""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Any

from .driver import Controller

if TYPE_CHECKING:
    from .._stage import Stage


class BatchingController(Controller):
    """Every ``period`` seconds, measure the stage's throughput against the best of the last
    ``window`` periods: within ``margin`` (10 %) of it, shrink the batch by ``step`` (20 %);
    below that, grow it by ``step``; below ``drop`` (half) of it, a sudden drop, reset to
    ``max``. A period that handled nothing carries no information and changes nothing."""

    def __init__(self, max: int = 1000, period: float = 1.0, min: int = 1,
                 margin: float = 0.1, step: float = 0.2, drop: float = 0.5,
                 window: int = 10) -> None:
        if not 1 <= min <= max:
            raise ValueError(f"batch bounds need 1 <= min <= max, got {min}, {max}")
        if period <= 0:
            raise ValueError("period is seconds > 0")
        self.max, self.min, self.period = max, min, period
        self.margin, self.step, self.drop = margin, step, drop
        self.history: deque[float] = deque(maxlen=window)
        self._last: tuple[float, int] | None = None

    def attach(self, stage: Stage) -> None:
        super().attach(stage)
        stage.batch = self.max

    def tick(self, now: float) -> None:
        stage = self.stage
        assert stage is not None                 # ticked only while attached
        processed = stage.processed
        last, self._last = self._last, (now, processed)
        if last is None or now <= last[0] or processed == last[1]:
            return
        rate = (processed - last[1]) / (now - last[0])
        self.history.append(rate)
        best = max(self.history)
        if rate < best * (1 - self.drop):
            stage.batch = self.max
        elif rate >= best * (1 - self.margin):
            stage.batch = max(self.min, int(stage.batch * (1 - self.step)))
        else:
            stage.batch = min(self.max, math.ceil(stage.batch * (1 + self.step)))

    def state(self) -> dict[str, Any]:
        return {"batch": self.stage.batch if self.stage else self.max,
                "throughput": self.history[-1] if self.history else 0.0,
                "best": max(self.history, default=0.0)}
