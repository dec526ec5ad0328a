"""The runtime's timer (thesis 5.3.4): one thread, a heap of deadlines, events enqueued when due."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ._scheduler import Scheduler

if TYPE_CHECKING:
    from ._abc import DoneSink


class TimerHandle:
    """A scheduled event; ``cancel()`` before it is due and it is never enqueued. The timer's
    scheduler holds the handle and calls it when due."""

    __slots__ = ("cancelled", "event", "sink", "timer", "when")

    def __init__(self, timer: Timer, when: float, sink: DoneSink, event: Any) -> None:
        self.timer, self.when, self.sink, self.event = timer, when, sink, event
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True

    def __call__(self) -> None:
        if not self.cancelled and not self.sink.enqueue_lossy(self.event):
            self.timer.dropped += 1


class Timer:
    """``schedule(delay_s, sink, ev)``; an event its sink rejects when due is dropped, counted."""

    def __init__(self) -> None:
        self._scheduler: Scheduler[TimerHandle] = Scheduler("seda:timer")
        self.dropped = 0

    def schedule(self, delay_s: float, sink: DoneSink, ev: Any) -> TimerHandle:
        if not delay_s >= 0:
            raise ValueError(f"a timer delay is a number of seconds >= 0, got {delay_s!r}")
        handle = TimerHandle(self, time.monotonic() + delay_s, sink, ev)
        self._scheduler.call_at(handle.when, handle)
        return handle

    def pending(self) -> int:
        """Timer events neither fired nor cancelled."""
        return sum(not handle.cancelled for handle in self._scheduler.waiting())

    def start(self) -> None:
        self._scheduler.start()

    def stop(self, timeout: float = 1.0) -> None:
        self._scheduler.stop(timeout)
