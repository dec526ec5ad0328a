"""Random early detection (Floyd and Jacobson, 1993), applied to a stage's queue."""

from __future__ import annotations

import random
from typing import Any

from .driver import Controller


class RED(Controller):
    """Reject arrivals with a probability that rises from 0 to ``max_p`` as the averaged queue
    length goes from ``min_th`` to ``max_th``, and reject all above ``max_th``. The average and
    the probability are updated on the control thread every ``period``; an arrival costs one
    random draw."""

    def __init__(self, min_th: int, max_th: int, max_p: float = 0.1, weight: float = 0.2,
                 period: float = 0.01, rng: random.Random | None = None) -> None:
        if not 0 <= min_th < max_th or not 0 < max_p <= 1 or not 0 < weight <= 1:
            raise ValueError("RED needs 0 <= min_th < max_th, 0 < max_p <= 1, 0 < weight <= 1")
        self.min_th, self.max_th, self.max_p = min_th, max_th, max_p
        self.weight, self.period = weight, period
        self.average = 0.0
        self.p = 0.0
        self._random = (rng or random.Random()).random

    def tick(self, now: float) -> None:
        stage = self.stage
        assert stage is not None                 # ticked only while attached
        self.average += self.weight * (len(stage.sink) - self.average)
        if self.average < self.min_th:
            self.p = 0.0
        elif self.average >= self.max_th:
            self.p = 1.0
        else:
            self.p = self.max_p * (self.average - self.min_th) / (self.max_th - self.min_th)

    def accept(self, ev: Any) -> bool:
        return self.p == 0.0 or self._random() >= self.p

    def state(self) -> dict[str, Any]:
        return {"average_queue": self.average, "drop_p": self.p}
