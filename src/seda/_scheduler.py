"""One thread that runs callables at their due times: what the timer and the control thread
are both made of."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger("seda")

#: What a scheduler calls: any callable of no arguments, or a kind of its own (the timer's
#: handles), which ``waiting`` then gives back as it is.
_Call = TypeVar("_Call", bound=Callable[[], None])


class Scheduler(Generic[_Call]):
    """A heap of (due time, callable) and a thread that calls each when due, in due order.
    Calls run outside the lock, so they may schedule more."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._heap: list[tuple[float, int, _Call]] = []
        self._seq = itertools.count()           # equal due times keep their order
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def call_at(self, when: float, fn: _Call) -> None:
        """Call ``fn()`` on the scheduler's thread once ``time.monotonic()`` reaches ``when``."""
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._seq), fn))
            if self._heap[0][2] is fn:
                self._cond.notify()

    def waiting(self) -> list[_Call]:
        """The calls not yet made, in no particular order."""
        with self._cond:
            return [entry[2] for entry in self._heap]

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
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
                now = time.monotonic()
                due = []
                while heap and heap[0][0] <= now:
                    due.append(heapq.heappop(heap)[2])
            for fn in due:
                try:
                    fn()
                except Exception:
                    log.exception("%s: scheduled call %r raised", self.name, fn)
