"""A handler that records what it is given, for tests to wait on instead of sleeping."""

from __future__ import annotations

import threading

import seda

from tests.helpers import WAIT


class Recorder(seda.EventHandler):
    """Keeps every event it handles and the batches they came in; ``wait(n)`` blocks until n."""

    def __init__(self) -> None:
        self.events: list = []
        self.batches: list[list] = []
        self.threads: set[str] = set()
        self.destroyed = 0
        self._cond = threading.Condition()

    def handle_events(self, events: list) -> None:
        with self._cond:
            self.batches.append(list(events))
            self.events.extend(events)
            self.threads.add(threading.current_thread().name)
            self._cond.notify_all()

    def destroy(self) -> None:
        self.destroyed += 1

    def wait(self, count: int, timeout: float = WAIT) -> list:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.events) >= count, timeout):
                raise AssertionError(f"got {len(self.events)} of {count} events: {self.events!r}")
            return list(self.events)
