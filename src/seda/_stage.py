"""Stages: an event handler, the queue in front of it, and the statistics the controllers read."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ._sink import Sink, connect, queue_of

if TYPE_CHECKING:
    from ._abc import Controller, ThreadManager
    from ._runtime import Runtime

log = logging.getLogger("seda")


class EventHandler:
    """The application's logic for one stage (thesis 5.1.2). Override ``handle_event`` or
    ``handle_events``; the runtime decides when, on which thread and with how many events.
    On an asyncio stage (``tasks=N``) ``handle_event`` is a coroutine function, and ``init``
    and ``destroy`` may be: hence their return types."""

    #: Set by :func:`single_threaded`: the runtime never runs two threads in this handler.
    single_threaded = False
    #: False for a handler that never waits on the loop thread for what it hands it (a WSGI
    #: application's answers): its pool may hold its threads' wake-ups of the loop back while
    #: the handler computes (``_loop.RoundWakeups``).
    waits_on_loop = True

    def init(self, ctx: StageContext) -> Awaitable[None] | None:
        """Called once before the first event; look up the sinks of other stages here."""
        return None

    def handle_event(self, ev: Any) -> Awaitable[None] | None:
        raise NotImplementedError(f"{type(self).__name__} overrides neither handle_event "
                                  "nor handle_events")

    def handle_events(self, events: list[Any]) -> None:
        """A batch of 1..batch events. The default hands them to ``handle_event`` one by one."""
        for ev in events:
            self.handle_event(ev)

    def destroy(self) -> Awaitable[None] | None:
        """Called once after the last event, when the stage is destroyed or the runtime stops."""
        return None

    def stats(self) -> dict[str, Any] | None:
        """Counters of the handler's own (JSON values), shown as ``rt.stats()[name]["handler"]``:
        what a service counts beyond events (requests by status, open connections)."""
        return None


_Handler = TypeVar("_Handler", bound=type[EventHandler])


def single_threaded(cls: _Handler) -> _Handler:
    """Class decorator: the runtime never runs two threads in this handler at once."""
    cls.single_threaded = True
    return cls


@dataclass
class StageContext:
    """What a handler's ``init`` receives: the runtime, its own stage and its parameters."""

    runtime: Runtime
    stage: Stage
    params: dict[str, Any] = field(default_factory=dict)


_LOG_EVERY = 1.0   # seconds between error reports of one stage, so a failing handler can't flood


class Stamped:
    """A queued event with the time it was enqueued, on stages whose response time is watched."""

    __slots__ = ("ev", "t")

    def __init__(self, t: float, ev: Any) -> None:
        self.t, self.ev = t, ev


#: Observer of a timed stage: called after each batch with its events, the time each waited in
#: the queue and the time from its enqueue to the end of its batch (seconds), index by index.
Observer = Callable[[list[Any], list[float], list[float]], None]


class Stage:
    """A handle to one stage: its name, its sink, and ``destroy()`` (thesis 5.3.2's StageIF)."""

    __slots__ = (
        "_last_report", "_unreported", "batch", "batch_control", "errors", "handle_batch",
        "handler", "manager", "name", "observers", "params", "processed", "runtime",
        "service_times", "sink", "thread_control", "timed",
    )

    def __init__(self, name: str, handler: Any, runtime: Runtime, batch: int,
                 params: dict[str, Any]) -> None:
        self.name = name
        self.handler = handler
        self.runtime = runtime
        self.params = params
        self.batch = batch
        self.sink = Sink(name, self)
        # set by the runtime right after this (a thread manager is made for its stage)
        self.manager: ThreadManager
        self.processed = 0
        self.errors = 0
        # seconds per event over recent batches (all of a pool's, a sample of the loop's)
        self.service_times: deque[float] = deque(maxlen=512)
        self._last_report = 0.0
        self._unreported = 0
        self.observers: list[Observer] = []
        self.timed = False                   # events carry their enqueue time (see observe)
        self.thread_control: Controller | None = None   # sizing this stage's pool
        self.batch_control: Controller | None = None    # setting ``batch``
        # A handler that keeps the default handle_events gets per-event error isolation: one
        # bad event does not cost the rest of its batch.
        # (``handle_batch`` is the thread managers' way in: see ``run_batch``)
        self.handle_batch: Callable[[list[Any]], None]
        if type(handler).handle_events is EventHandler.handle_events:
            self.handle_batch = self._handle_each
        else:
            self.handle_batch = handler.handle_events

    def destroy(self, timeout: float = 5.0) -> None:
        """Refuse new events, let the queued ones drain, then call the handler's ``destroy``."""
        self.runtime.destroy_stage(self, timeout)

    def context(self) -> StageContext:
        return StageContext(self.runtime, self, self.params)

    def observe(self, observer: Observer) -> None:
        """Time every event from enqueue to the end of its handling and report each batch to
        ``observer``. Only stages someone observes pay for the clock readings."""
        if self.manager.kind == "processes":
            raise ValueError(f"stage {self.name!r} runs in processes; watch response times on "
                             "the stage that feeds it instead")
        if observer in self.observers:
            return
        self.observers.append(observer)
        if not self.timed:
            self.timed = True
            if not getattr(self.manager, "stamps", False):   # else it times events itself
                self._stamp()

    def unobserve(self, observer: Observer) -> None:
        if observer in self.observers:
            self.observers.remove(observer)

    def _stamp(self) -> None:
        """From now on, wrap events in ``Stamped`` on the way in and unwrap them on the way out.
        Events queued before this arrive bare, hence the type checks."""
        sink, clock, observers = self.sink, time.monotonic, self.observers
        (put, put_many), handle = queue_of(sink), self.handle_batch

        def stamped_put(ev: Any) -> None:
            put(Stamped(clock(), ev))

        def stamped_put_many(events: list[Any]) -> None:
            now = clock()
            put_many([Stamped(now, ev) for ev in events])

        def timed_handle(batch: list[Any]) -> None:
            start = clock()
            events = [x.ev if type(x) is Stamped else x for x in batch]
            try:
                handle(events)
            finally:
                end = clock()
                stamped = [x for x in batch if type(x) is Stamped]
                if len(stamped) < len(batch):       # queued before timing began: not timed
                    events = [x.ev for x in stamped]
                waits = [start - x.t for x in stamped]
                responses = [end - x.t for x in stamped]
                for observer in observers:
                    observer(events, waits, responses)

        def timed_each(batch: list[Any]) -> None:
            """Per-event handlers: each event's own start and end, and error isolation."""
            handle_event = self.handler.handle_event
            events: list[Any] = []
            waits: list[float] = []
            responses: list[float] = []
            for x in batch:
                stamped = type(x) is Stamped
                ev = x.ev if stamped else x
                start = clock()
                try:
                    handle_event(ev)
                except Exception:
                    self.failed()
                if stamped:
                    events.append(ev)
                    waits.append(start - x.t)
                    responses.append(clock() - x.t)
            for observer in observers:
                observer(events, waits, responses)

        if not sink.closed:
            connect(sink, stamped_put, stamped_put_many, sink.length)
        self.handle_batch = timed_each if handle == self._handle_each else timed_handle
        self.manager.unwrap_keys(lambda x: x.ev if type(x) is Stamped else x)

    def _handle_each(self, events: list[Any]) -> None:
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


def run_batch(stage: Stage, events: list[Any]) -> None:
    """A thread manager hands ``stage`` one batch: the handler runs it, an exception is logged
    and counted, never propagated, and the time per event is kept for the statistics. (The
    event loop does the same inline: its hops are the hot path.)"""
    start = time.perf_counter()
    try:
        stage.handle_batch(events)
    except Exception:
        stage.failed()
    stage.service_times.append((time.perf_counter() - start) / len(events))
