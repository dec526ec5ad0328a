"""The control thread: every controller of a runtime is ticked here, never on the hot path."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Any

log = logging.getLogger("seda")


class Controller:
    """A feedback loop over one stage. The runtime calls ``attach(stage)`` once, then
    ``tick(now)`` every ``period`` seconds on the control thread. Tests call ``tick`` with a
    fake clock; nothing in a controller reads the time by itself."""

    period = 1.0
    stage: Any = None

    def attach(self, stage: Any) -> None:
        if self.stage is not None and self.stage is not stage:
            raise ValueError(f"{type(self).__name__} already controls stage {self.stage.name!r}")
        self.stage = stage

    def detach(self) -> None:
        """The controller no longer guards its stage (a predicate was replaced)."""
        observe = getattr(self, "observe", None)
        if self.stage is not None and observe is not None:
            self.stage.unobserve(observe)
        self.stage = None

    def tick(self, now: float) -> None:
        raise NotImplementedError

    def state(self) -> dict:
        """What ``Runtime.stats()`` and the profiler show of this controller: JSON values."""
        return {}


class ControlThread:
    """One thread, a heap of due times; controllers can be added and removed while it runs."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Controller]] = []
        self._active: set[int] = set()       # ids of controllers still registered
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def add(self, controller: Controller) -> None:
        with self._cond:
            if id(controller) in self._active:
                return
            self._active.add(id(controller))
            heapq.heappush(self._heap, (time.monotonic() + controller.period, next(self._seq),
                                        controller))
            self._cond.notify()

    def remove(self, controller: Controller) -> None:
        with self._cond:
            self._active.discard(id(controller))     # dropped from the heap when next due

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="seda:control", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        heap, cond = self._heap, self._cond
        while True:
            with cond:
                while not self._stopped:
                    wait = heap[0][0] - time.monotonic() if heap else None
                    if wait is not None and wait <= 0:
                        break
                    cond.wait(wait)
                if self._stopped:
                    return
                due, _, controller = heapq.heappop(heap)
                if id(controller) not in self._active:
                    continue
                # next due time from the scheduled one, so a slow tick does not drift the period
                heapq.heappush(heap, (max(due + controller.period, time.monotonic()),
                                      next(self._seq), controller))
            try:
                controller.tick(time.monotonic())
            except Exception:
                log.exception("controller %s raised", type(controller).__name__)
