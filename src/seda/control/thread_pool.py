"""Thread pool controller (thesis 5.4.1), for handlers that wait as well as handlers that compute.

The thesis's controller adds a thread per period while the queue is long and, to detect
thrashing, watches throughput fall as threads are added. For a handler that waits (sleep,
sockets, a database) both rules go wrong: one slow request holds a thread while the next ones
queue behind it, and a throughput drop caused by requests that take long reads as thrashing. So
the pool starts a thread as soon as an event finds none free (up to its cap), and the thesis's
rules act only on handlers that keep the CPU busy, where under the GIL threads add contention,
not capacity.
"""

from __future__ import annotations

import random
from typing import Any

from .driver import Controller


class ThreadPoolController(Controller):
    """Sizes a stage's pool between ``min`` and ``max`` threads.

    The pool starts a thread whenever an event arrives and no thread is free, up to its cap, as
    a standard executor does; a thread idle for ``idle_timeout`` seconds exits (down to ``min``).
    Every ``period`` the controller measures ``cpu``: the CPU seconds per second the pool's
    threads used, batches still in progress included.

    - Below ``cpu_bound`` (half a core), the handlers mostly wait and every thread adds capacity:
      the cap is ``max``, whatever the throughput does.
    - At or above it they compute, and the thesis's rules move the cap. While more than
      ``queue_threshold`` events wait: throughput is smoothed with an EWMA; when it beats the
      best seen by ``margin`` (20 %), that throughput and the pool size are remembered; when it
      falls below the best by ``margin``, the cap is reset to the remembered size less a random
      0..``remove`` threads (so the controller does not sit in a local minimum); otherwise the
      cap grows by one thread per period, up to ``max``.

    A lower cap never stops a thread in a batch: threads above it finish, park, and exit once
    idle. Periods with no backlog or with waiting handlers say nothing about what threads add
    (throughput then follows the arrivals or the handlers' waits): they are not compared.
    """

    def __init__(self, min: int = 1, max: int = 20, period: float = 1.0,
                 queue_threshold: int = 100, idle_timeout: float = 5.0,
                 thrash_detect: bool = True, smoothing: float = 0.7, margin: float = 0.2,
                 remove: int = 4, cpu_bound: float = 0.5,
                 rng: random.Random | None = None) -> None:
        if not 1 <= min <= max:
            raise ValueError(f"thread pool bounds need 1 <= min <= max, got {min}, {max}")
        if period <= 0 or idle_timeout <= 0:
            raise ValueError("period and idle_timeout are seconds > 0")
        self.min, self.max, self.period = min, max, period
        self.queue_threshold, self.idle_timeout = queue_threshold, idle_timeout
        self.thrash_detect, self.smoothing, self.margin = thrash_detect, smoothing, margin
        self.remove, self.cpu_bound = remove, cpu_bound
        self.rng = rng or random.Random()
        self.cpu = 0.0                           # cores the handlers kept busy last period
        self.throughput: float | None = None     # EWMA, events per second
        self.best = 0.0
        self.best_size = min
        self.resets = 0
        self._last: tuple[float, int, float] | None = None

    def attach(self, stage: Any) -> None:
        super().attach(stage)
        pool = stage.manager
        pool.min_size, pool.idle_timeout = self.min, self.idle_timeout
        pool.limit(self.max)

    @property
    def size(self) -> int:
        """Threads that may run the handler now: those the pool has, up to its cap."""
        pool = self.stage.manager
        return min(pool.cap, pool.thread_count())

    def tick(self, now: float) -> None:
        stage, pool = self.stage, self.stage.manager
        sample = (now, stage.processed, pool.cpu_time())
        last, self._last = self._last, sample
        if last is None or now <= last[0]:
            return
        elapsed = now - last[0]
        self.cpu = (sample[2] - last[2]) / elapsed
        if self.cpu < self.cpu_bound:
            self.throughput, self.best = None, 0.0     # what was learnt no longer applies
            if pool.cap != self.max:
                pool.limit(self.max)
            return
        if len(stage.sink) <= self.queue_threshold:
            return
        rate = (sample[1] - last[1]) / elapsed
        if self.thrash_detect and self._thrashing(rate):
            return
        if pool.cap < self.max:
            pool.limit(pool.cap + 1)

    def _thrashing(self, rate: float) -> bool:
        """Update the throughput estimate; True if the cap was just reset."""
        if self.throughput is None:
            self.throughput = rate
        else:
            self.throughput = self.smoothing * self.throughput + (1 - self.smoothing) * rate
        if self.throughput > self.best * (1 + self.margin):
            self.best, self.best_size = self.throughput, self.size
        elif self.throughput < self.best * (1 - self.margin):
            target = self.best_size - self.rng.randint(0, self.remove)
            self.stage.manager.limit(max(self.min, target))
            self.resets += 1
            return True
        return False

    def state(self) -> dict:
        return {"threads": self.stage.manager.thread_count(), "cap": self.stage.manager.cap,
                "max": self.max, "cpu": self.cpu, "cpu_bound": self.cpu >= self.cpu_bound,
                "throughput": self.throughput or 0.0, "best": self.best,
                "best_size": self.best_size, "resets": self.resets}
