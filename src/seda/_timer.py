"""The runtime's timer (thesis 5.3.4): one thread, a heap of deadlines, events enqueued when due."""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

from ._scheduler import Scheduler


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
        self._scheduler = Scheduler("seda:timer")
        self._waiting: set[TimerHandle] = set()
        self._lock = threading.Lock()
        self.dropped = 0

    def schedule(self, delay_s: float, sink: Any, ev: Any) -> TimerHandle:
        if not delay_s >= 0:
            raise ValueError(f"a timer delay is a number of seconds >= 0, got {delay_s!r}")
        handle = TimerHandle(time.monotonic() + delay_s, sink, ev)
        with self._lock:
            self._waiting.add(handle)
        self._scheduler.call_at(handle.when, functools.partial(self._fire, handle))
        return handle

    def _fire(self, handle: TimerHandle) -> None:
        with self._lock:
            self._waiting.discard(handle)
        if not handle.cancelled and not handle.sink.enqueue_lossy(handle.event):
            self.dropped += 1

    def pending(self) -> int:
        """Timer events neither fired nor cancelled."""
        with self._lock:
            return sum(not h.cancelled for h in self._waiting)

    def start(self) -> None:
        self._scheduler.start()

    def stop(self, timeout: float = 1.0) -> None:
        self._scheduler.stop(timeout)
