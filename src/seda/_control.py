"""The control thread: every controller of a runtime is ticked here, never on the hot path."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable

from ._abc import Controller
from ._scheduler import Scheduler

log = logging.getLogger("seda")


class ControlThread:
    """Ticks every controller every ``period`` seconds on one thread; controllers can be added
    and removed while it runs."""

    def __init__(self) -> None:
        self._scheduler: Scheduler[Callable[[], None]] = Scheduler("seda:control")
        self._active: set[int] = set()       # ids of controllers still registered

    def add(self, controller: Controller) -> None:
        if id(controller) in self._active:
            return
        self._active.add(id(controller))
        due = time.monotonic() + controller.period
        self._scheduler.call_at(due, functools.partial(self._tick, controller, due))

    def call_soon(self, fn: Callable[[], None], delay: float = 0.0) -> None:
        """Run ``fn()`` on the control thread ``delay`` seconds from now (as soon as it is free):
        work that may wait (starting a thread), asked for by a thread that must not (the event
        loop)."""
        self._scheduler.call_at(time.monotonic() + delay, fn)

    def remove(self, controller: Controller) -> None:
        self._active.discard(id(controller))        # not ticked again

    def __contains__(self, controller: Controller) -> bool:
        return id(controller) in self._active

    def start(self) -> None:
        self._scheduler.start()

    def stop(self, timeout: float = 1.0) -> None:
        self._scheduler.stop(timeout)

    def _tick(self, controller: Controller, due: float) -> None:
        if id(controller) not in self._active:
            return
        # the next due time follows from this one, so a slow tick does not drift the period;
        # but a late tick is not followed at once by another, which would measure a few
        # milliseconds (the control thread waits for the GIL behind busy stages, too)
        nxt = max(due + controller.period, time.monotonic() + controller.period / 2)
        self._scheduler.call_at(nxt, functools.partial(self._tick, controller, nxt))
        try:
            controller.tick(time.monotonic())
        except Exception:
            log.exception("controller %s raised", type(controller).__name__)
