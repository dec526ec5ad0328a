"""Stages: an event handler, the queue in front of it, and the statistics the controllers read."""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .sink import Sink

if TYPE_CHECKING:
    from .runtime import Runtime

log = logging.getLogger("seda")


class EventHandler:
    """The application's logic for one stage (thesis 5.1.2). Override ``handle_event`` or
    ``handle_events``; the runtime decides when, on which thread and with how many events."""

    #: Set by :func:`single_threaded`: the runtime never runs two threads in this handler.
    single_threaded = False

    def init(self, ctx: StageContext) -> None:
        """Called once before the first event; look up the sinks of other stages here."""

    def handle_event(self, ev: Any) -> None:
        raise NotImplementedError(f"{type(self).__name__} overrides neither handle_event "
                                  "nor handle_events")

    def handle_events(self, events: list) -> None:
        """A batch of 1..batch events. The default hands them to ``handle_event`` one by one."""
        for ev in events:
            self.handle_event(ev)

    def destroy(self) -> None:
        """Called once after the last event, when the stage is destroyed or the runtime stops."""


def single_threaded(cls: type) -> type:
    """Class decorator: the runtime never runs two threads in this handler at once."""
    cls.single_threaded = True
    return cls


@dataclass
class StageContext:
    """What a handler's ``init`` receives: the runtime, its own stage and its parameters."""

    runtime: Runtime
    stage: Stage
    params: dict = field(default_factory=dict)


_LOG_EVERY = 1.0   # seconds between error reports of one stage, so a failing handler can't flood


class Stage:
    """A handle to one stage: its name, its sink, and ``destroy()`` (thesis 5.3.2's StageIF)."""

    __slots__ = (
        "_handle",
        "_last_report",
        "_unreported",
        "batch",
        "errors",
        "handler",
        "manager",
        "name",
        "params",
        "processed",
        "runtime",
        "service_times",
        "sink",
    )

    def __init__(self, name: str, handler: Any, runtime: Runtime, batch: int, params: dict) -> None:
        self.name = name
        self.handler = handler
        self.runtime = runtime
        self.params = params
        self.batch = batch
        self.sink = Sink(name, self)
        self.manager: Any = None
        self.processed = 0
        self.errors = 0
        # seconds per event over recent batches (all of a pool's, a sample of the loop's)
        self.service_times: deque = deque(maxlen=512)
        self._last_report = 0.0
        self._unreported = 0
        # A handler that keeps the default handle_events gets per-event error isolation: one
        # bad event does not cost the rest of its batch.
        if type(handler).handle_events is EventHandler.handle_events:
            self._handle = self._handle_each
        else:
            self._handle = handler.handle_events

    def destroy(self, timeout: float = 5.0) -> None:
        """Refuse new events, let the queued ones drain, then call the handler's ``destroy``."""
        self.runtime._destroy_stage(self, timeout)

    def context(self) -> StageContext:
        return StageContext(self.runtime, self, self.params)

    # -- called by thread managers -------------------------------------------------------------

    def run(self, events: list) -> None:
        """Hand one batch to the handler; an exception is logged and counted, never propagated."""
        start = time.perf_counter()
        try:
            self._handle(events)
        except Exception:
            self.failed()
        self.service_times.append((time.perf_counter() - start) / len(events))

    def _handle_each(self, events: list) -> None:
        handle = self.handler.handle_event
        pending = iter(events)
        while True:
            try:
                for ev in pending:
                    handle(ev)
                return
            except Exception:
                self.failed()

    def failed(self, detail: str | None = None) -> None:
        """Count a handler error and log it, at most once a second per stage."""
        self.errors += 1
        now = time.monotonic()
        if now - self._last_report < _LOG_EVERY:
            self._unreported += 1
            return
        more = f" ({self._unreported} more since the last report)" if self._unreported else ""
        self._last_report, self._unreported = now, 0
        if detail is None:
            log.exception("stage %r: handler raised%s", self.name, more)
        else:
            log.error("stage %r: handler raised%s\n%s", self.name, more, detail)

    def __repr__(self) -> str:
        return f"<Stage {self.name!r}>"
