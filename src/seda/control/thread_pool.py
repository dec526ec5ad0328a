"""Thread pool controller (thesis 5.4.1), for handlers that wait as well as handlers that compute.

The thesis's controller adds a thread per period while the queue is long and, to detect
thrashing, watches throughput fall as threads are added. For a handler that waits (sleep,
sockets, a database) both rules go wrong: one slow request holds a thread while the next ones
queue behind it, and a throughput drop caused by requests that take long reads as thrashing. So
the pool starts threads as soon as events wait behind threads that are held up (up to its cap;
see ``seda._threads``), and the thesis's rules act only on handlers that keep the CPU busy. Once
the process keeps the GIL busy, threads add contention, not capacity: the pool then sheds the
threads that cost no throughput.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .driver import Controller

if TYPE_CHECKING:
    from .._stage import Stage
    from .._threads import ThreadPool

_COMPUTING = 0.5     # CPU seconds per second of batches: handlers that compute, not wait
_RETRY = 30          # periods after which a cut that cost throughput is tried again


class ThreadPoolController(Controller):
    """Sizes a stage's pool between ``min`` and ``max`` threads.

    The pool starts threads when events wait and its threads are held up (no event taken and
    little CPU used for 5 ms), up to its cap; a thread idle for ``idle_timeout`` seconds exits
    (down to ``min``). Every ``period`` the controller measures ``busy``: the threads in
    batches on average, which by Little's law is the arrival rate times the service time;
    ``cpu``: the CPU seconds per second the pool's threads used, batches still in progress
    included; ``compute``: that CPU per second the threads spent in batches (near 0 for
    handlers that wait, near 1 or more for handlers that compute); and ``process``: the cores
    the whole process used.

    - While the process keeps the GIL busy (``process`` at least ``saturated``, 0.9 of a core)
      and this pool is one of its main users, no thread can add throughput: another thread that
      computes only makes every other one, the event loop's among them, wait longer for the GIL
      (11 threads of a WSGI application burning CPU, left from a slow start, held Haboob's
      503s 45 ms at p90; one thread, 3 ms).
      A main user's handlers compute (``compute`` >= 0.5), or its threads together use
      ``cpu_bound`` (half a core) or more: a thread waiting for the GIL is in its batch, so N
      threads that only compute show a ``compute`` near 1/N, which alone reads as waiting.
      The threads halve each period (down to ``min``) while that costs no throughput; a cut
      that costs more than ``margin`` (threads that also wait, on a database say, were keeping
      the GIL busy) is undone, and that size is the pool's ``floor`` while the process stays
      saturated, for 30 periods at most (then a cut is tried again). A stall of these threads
      (a wait for the GIL) starts none.
    - Otherwise, below ``cpu_bound`` (half a core), the handlers mostly wait and every thread
      adds capacity: the cap is ``max``, whatever the throughput does.
    - At or above it they compute, with CPU to spare, and the thesis's rules move the cap.
      While more than ``queue_threshold`` events wait: throughput is smoothed with an EWMA; when
      it beats the best seen by ``margin`` (20 %), that throughput and the pool size are
      remembered; when it falls below the best by ``margin``, the cap is reset to the remembered
      size less a random 0..``remove`` threads (so the controller does not sit in a local
      minimum); otherwise the cap grows by one thread per period, up to ``max``.

    A lower cap never stops a thread in a batch: threads above it finish, park, and exit once
    idle. Periods with no backlog or with waiting handlers say nothing about what threads add
    (throughput then follows the arrivals or the handlers' waits): they are not compared.

    ``thesis=True`` is the thesis's controller alone, for comparison: the pool starts at ``min``
    threads, no stall starts one, and each period in which more than ``queue_threshold`` events
    wait adds one (with thrashing detection as configured). It gives a stage the threads that
    keep up with the arrivals, Little's law's number, while events queue behind the threads
    that are held up; the default also keeps them from waiting.
    """

    def __init__(self, min: int = 1, max: int = 20, period: float = 1.0,
                 queue_threshold: int = 100, idle_timeout: float = 5.0,
                 thrash_detect: bool = True, smoothing: float = 0.7, margin: float = 0.2,
                 remove: int = 4, cpu_bound: float = 0.5, saturated: float = 0.9,
                 thesis: bool = False,
                 rng: random.Random | None = None,
                 process_clock: Callable[[], float] = time.process_time) -> None:
        if not 1 <= min <= max:
            raise ValueError(f"thread pool bounds need 1 <= min <= max, got {min}, {max}")
        if period <= 0 or idle_timeout <= 0:
            raise ValueError("period and idle_timeout are seconds > 0")
        self.min, self.max, self.period = min, max, period
        self.queue_threshold, self.idle_timeout = queue_threshold, idle_timeout
        self.thrash_detect, self.smoothing, self.margin = thrash_detect, smoothing, margin
        self.remove, self.cpu_bound, self.saturated = remove, cpu_bound, saturated
        self.thesis = thesis
        self.process_clock = process_clock       # CPU seconds of the whole process
        self.rng = rng or random.Random()
        self.busy = 0.0                          # threads in batches on average last period
        self.cpu = 0.0                           # cores the handlers kept busy last period
        self.compute = 0.0                       # the pool's CPU seconds per second in batches
        self.process = 0.0                       # cores the whole process used last period
        self.contended = 0                       # periods the cap was lowered for the GIL
        self.floor = min                         # the fewest threads a cut found still needed
        self._floor_left = 0                     # periods the floor still holds
        self._cut: tuple[int, float] | None = None   # (threads before, events/s before) a cut
        self.throughput: float | None = None     # EWMA, events per second
        self.best = 0.0
        self.best_size = min
        self.resets = 0
        # (time, processed, pool CPU seconds, pool seconds in batches, process CPU seconds)
        self._last: tuple[float, int, float, float, float] | None = None
        self._pool: ThreadPool                   # the stage's: set by attach

    def attach(self, stage: Stage) -> None:
        super().attach(stage)
        # the runtime gives a controller of threads to thread pools only (see add_stage)
        pool = self._pool = cast("ThreadPool", stage.manager)
        pool.min_size, pool.idle_timeout = self.min, self.idle_timeout
        pool.grow_on_stall = not self.thesis
        pool.limit(self.min if self.thesis else self.max)

    @property
    def size(self) -> int:
        """Threads that may run the handler now: those the pool has, up to its cap."""
        pool = self._pool
        return min(pool.cap, pool.thread_count())

    def tick(self, now: float) -> None:
        stage, pool = self.stage, self._pool
        assert stage is not None                 # ticked only while attached
        sample = (now, stage.processed, pool.cpu_time(), pool.busy_time(), self.process_clock())
        last, self._last = self._last, sample
        if last is None or now <= last[0]:
            return
        elapsed = now - last[0]
        self.cpu = (sample[2] - last[2]) / elapsed
        busy = sample[3] - last[3]
        self.busy = busy / elapsed
        if busy > 0.01 * elapsed:              # (else the pool was idle: nothing to learn)
            self.compute = (sample[2] - last[2]) / busy
        self.process = (sample[4] - last[4]) / elapsed
        rate = (sample[1] - last[1]) / elapsed
        if self.thesis:
            self._thesis_rule(rate)
            return
        cut, self._cut = self._cut, None
        if cut is not None and self._undo(cut, rate):
            return
        # The process keeps the GIL busy and this pool is one of its main users: its handlers
        # compute (when they wait for the GIL too, ``compute`` only falls, so a pool of many
        # threads that compute shows instead as a pool using half a core or more).
        gil = self.process >= self.saturated and (self.compute >= _COMPUTING
                                                  or self.cpu >= self.cpu_bound)
        # a stall of threads that compute, or of threads that share a busy GIL, is a wait for
        # the GIL: no thread would help
        pool.grow_on_stall = not gil and self.compute < _COMPUTING
        if gil:
            self._fewer(rate)
            return
        self.floor = self.min                    # what the cuts found no longer applies
        if self.cpu < self.cpu_bound:
            self.throughput, self.best = None, 0.0     # what was learnt no longer applies
            if pool.cap != self.max:
                pool.limit(self.max)
            return
        if len(stage.sink) <= self.queue_threshold:
            return
        if self.thrash_detect and self._thrashing(rate):
            return
        if pool.cap < self.max:
            pool.limit(pool.cap + 1)

    def _fewer(self, rate: float) -> None:
        """The GIL is busy: no thread can add throughput, and each one more that computes makes
        every other thread (the event loop's among them) wait longer for it. Halve the threads
        while that costs no throughput; a cut that does (threads that also wait, on a database
        say, were keeping the GIL busy) is undone (``_undo``) and the pool keeps that size
        (``floor``) for ``_RETRY`` periods."""
        pool = self._pool
        self._floor_left -= 1
        if self._floor_left <= 0:                # (noise, or the handlers changed)
            self.floor = self.min
        size = self.size
        cap = max(self.min, self.floor, size // 2)
        if cap < pool.cap:
            if cap < size:                       # threads were running: see what it costs
                self._cut = (size, rate)
            pool.limit(cap)
            self.contended += 1

    def _undo(self, cut: tuple[int, float], rate: float) -> bool:
        """The period after a cut: if it cost throughput (often leaving the GIL idle, so the
        process no longer looks saturated), give the threads back and keep them. True if so."""
        size, before = cut
        if rate >= before * (1 - self.margin):
            return False
        self._pool.limit(size)
        self.floor, self._floor_left = size, _RETRY
        return True

    def _thesis_rule(self, rate: float) -> None:
        """One thread more while the queue is past its threshold, unless that is thrashing."""
        pool = self._pool
        assert self.stage is not None
        if len(self.stage.sink) <= self.queue_threshold:
            return
        if self.thrash_detect and self._thrashing(rate):
            return
        if pool.cap < self.max:
            pool.limit(pool.cap + 1, start=True)

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
            self._pool.limit(max(self.min, target))
            self.resets += 1
            return True
        return False

    def state(self) -> dict[str, Any]:
        return {"threads": self._pool.thread_count(), "cap": self._pool.cap,
                "busy": self.busy, "max": self.max,
                "started": self._pool.started_count, "cpu": self.cpu,
                "cpu_bound": self.cpu >= self.cpu_bound,
                "throughput": self.throughput or 0.0, "best": self.best,
                "best_size": self.best_size, "resets": self.resets, "compute": self.compute,
                "process": self.process, "contended": self.contended, "floor": self.floor,
                "thesis": self.thesis}
