"""The runtime's timer (thesis 5.3.4): one thread, a heap of deadlines, events enqueued when due."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import Any


class TimerHandle:
    """A scheduled event; ``cancel()`` before it is due and it is never enqueued."""

    __slots__ = ("cancelled", "event", "sink", "when")

    def __init__(self, when: float, sink: Any, event: Any) -> None:
        self.when, self.sink, self.event = when, sink, event
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timer:
    """``schedule(delay_s, sink, ev)``; an event its sink rejects when due is dropped, counted."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, TimerHandle]] = []
        self._seq = itertools.count()          # ties in time keep scheduling order
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.dropped = 0

    def schedule(self, delay_s: float, sink: Any, ev: Any) -> TimerHandle:
        if not delay_s >= 0:
            raise ValueError(f"a timer delay is a number of seconds >= 0, got {delay_s!r}")
        handle = TimerHandle(time.monotonic() + delay_s, sink, ev)
        with self._cond:
            heapq.heappush(self._heap, (handle.when, next(self._seq), handle))
            if self._heap[0][2] is handle:
                self._cond.notify()
        return handle

    def pending(self) -> int:
        """Timer events neither fired nor cancelled."""
        with self._cond:
            return sum(not entry[2].cancelled for entry in self._heap)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="seda:timer", daemon=True)
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
            for handle in due:             # enqueue outside the lock: predicates are user code
                if not handle.cancelled and not handle.sink.enqueue_lossy(handle.event):
                    self.dropped += 1
