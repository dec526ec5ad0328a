"""Thread pool controller (thesis 5.4.1): add threads while the queue is long, drop idle ones,
and detect thrashing by watching throughput fall as threads are added."""

from __future__ import annotations

import random
from typing import Any

from .driver import Controller


class ThreadPoolController(Controller):
    """Every ``period`` seconds, add a thread if more than ``queue_threshold`` events wait (up to
    ``max``); a thread idle for ``idle_timeout`` seconds exits (down to ``min``).

    Thrashing detection: throughput is smoothed with an EWMA; when it beats the best seen by
    ``margin`` (20 %), that throughput and the pool size are remembered; when it falls below the
    best by ``margin``, the pool is reset to the remembered size less a random 0..``remove``
    threads, so the controller does not sit in a local minimum.
    """

    def __init__(self, min: int = 1, max: int = 20, period: float = 1.0,
                 queue_threshold: int = 100, idle_timeout: float = 5.0,
                 thrash_detect: bool = True, smoothing: float = 0.7, margin: float = 0.2,
                 remove: int = 4, rng: random.Random | None = None) -> None:
        if not 1 <= min <= max:
            raise ValueError(f"thread pool bounds need 1 <= min <= max, got {min}, {max}")
        if period <= 0 or idle_timeout <= 0:
            raise ValueError("period and idle_timeout are seconds > 0")
        self.min, self.max, self.period = min, max, period
        self.queue_threshold, self.idle_timeout = queue_threshold, idle_timeout
        self.thrash_detect, self.smoothing, self.margin = thrash_detect, smoothing, margin
        self.remove = remove
        self.rng = rng or random.Random()
        self.throughput: float | None = None     # EWMA, events per second
        self.best = 0.0
        self.best_size = min
        self.resets = 0
        self._last: tuple[float, int] | None = None

    def attach(self, stage: Any) -> None:
        super().attach(stage)
        manager = stage.manager
        manager.min_size, manager.idle_timeout = self.min, self.idle_timeout

    @property
    def size(self) -> int:
        return self.stage.manager.size

    def tick(self, now: float) -> None:
        stage = self.stage
        processed = stage.processed
        last, self._last = self._last, (now, processed)
        if last is None or now <= last[0]:
            return
        rate = (processed - last[1]) / (now - last[0])
        if self.thrash_detect and self._thrashing(rate):
            return
        if len(stage.sink) > self.queue_threshold and self.size < self.max:
            stage.manager.resize(self.size + 1)

    def _thrashing(self, rate: float) -> bool:
        """Update the throughput estimate; True if the pool was just reset."""
        if self.throughput is None:
            self.throughput = rate
        else:
            self.throughput = self.smoothing * self.throughput + (1 - self.smoothing) * rate
        if self.throughput > self.best * (1 + self.margin):
            self.best, self.best_size = self.throughput, self.size
        elif self.throughput < self.best * (1 - self.margin):
            target = max(self.min, self.best_size - self.rng.randint(0, self.remove))
            self.stage.manager.resize(target)
            self.resets += 1
            return True
        return False

    def state(self) -> dict:
        return {"threads": self.size, "max": self.max, "throughput": self.throughput or 0.0,
                "best": self.best, "best_size": self.best_size, "resets": self.resets}
