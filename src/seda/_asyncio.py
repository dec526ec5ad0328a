"""An asyncio event loop on a thread of its own, as one stage's thread manager (``tasks=N``).

For handlers written as coroutines (an ASGI application, an asyncio client library): each event
becomes a task running ``async handle_event(ev)`` on the stage's loop, at most ``tasks`` at once;
the others wait in the stage's queue. An event counts as handled when its task ends, so
``Runtime.stop`` waits for the tasks in flight and a response-time controller measures from the
enqueue to the end of the task. The stage's sink counts the tasks in flight as well as the
events queued (``len(sink)``): on one thread they share the CPU as queued events share a pool,
so an admission predicate bounds the two together. How many tasks the stage can really serve
at once (``concurrency``) is measured: their time in flight per CPU second of the loop thread,
1 for handlers that only compute, up to the cap for handlers that mostly wait.

The handler's ``init`` and ``destroy`` run on the loop thread as well and may be coroutine
functions (an ASGI application's lifespan startup and shutdown). Events from other threads
reach the loop with one ``call_soon_threadsafe`` per wake-up, not one per event.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import inspect
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ClassVar

from ._loop import RoundWakeups
from ._sink import Cursor, connect, thread_cursor
from ._stage import Stamped

if TYPE_CHECKING:
    from ._stage import Stage

log = logging.getLogger("seda")

#: Makes the event loop of an asyncio stage.
LoopFactory = Callable[[], asyncio.AbstractEventLoop]
_CANCEL_WAIT = 1.0      # seconds tasks cut off at the deadline get to end
_MEASURE_EVERY = 0.5    # seconds between two measures of the stage's concurrency


def default_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (cheaper callbacks and task steps), else asyncio's."""
    try:
        uvloop = importlib.import_module("uvloop")
    except ImportError:
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


async def _call(fn: Callable[..., Any], *args: Any) -> None:
    """A handler's init or destroy, plain or a coroutine function."""
    result = fn(*args)
    if inspect.isawaitable(result):
        await result


class AsyncioStage:
    """The thread manager of one asyncio stage: its queue, its thread and the loop on it."""

    kind: ClassVar[str] = "asyncio"
    #: The handler's init and destroy are this manager's to call, on the loop thread.
    local: ClassVar[bool] = False

    def __init__(self, stage: Stage, tasks: int, loop_factory: LoopFactory | None = None) -> None:
        if not isinstance(tasks, int) or isinstance(tasks, bool) or tasks < 1:
            raise ValueError(f"stage {stage.name!r}: tasks must be an integer >= 1, got {tasks!r}")
        if not inspect.iscoroutinefunction(getattr(stage.handler, "handle_event", None)):
            raise TypeError(f"stage {stage.name!r}: the handler of an asyncio stage (tasks=) "
                            "defines async def handle_event(self, ev)")
        self.stage, self.cap = stage, tasks
        self.factory = loop_factory or default_loop
        self.items: deque[Any] = deque()
        self.inflight = 0                      # tasks started and not ended
        self.tasks: set[asyncio.Task[None]] = set()
        self.moves = 0                         # tasks started and ended: Runtime.stop watches it
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.ready = False                     # init has run: events may start
        self.closing = False                   # stopping: no event starts any more
        self.scheduled = False                 # a _drain is on its way to the loop
        self.failed: BaseException | None = None   # init raised
        self._context: contextvars.Context | None = None   # the loop thread's (its cursor)
        self._idle: asyncio.Future[None] | None = None     # awaited by _shutdown
        self._handle = stage.handler.handle_event
        self._wakeups: RoundWakeups | None = None   # the loop thread's, once it runs
        self.overlap = float(tasks)            # measured concurrency; the cap until measured
        self._measured = (0.0, 0.0, 0.0)       # (when, loop CPU seconds, task seconds) then
        self._task_time = 0.0                  # seconds in flight of the tasks ended so far
        connect(stage.sink, self.put, self.put_many, self._length)

    # -- producers, any thread -----------------------------------------------------------------

    def put(self, ev: Any) -> None:
        self.items.append(ev)
        if self.ready and not self.scheduled:
            self._schedule()

    def put_many(self, events: list[Any]) -> None:
        self.items.extend(events)
        if self.ready and not self.scheduled:
            self._schedule()

    def _schedule(self) -> None:
        self.scheduled = True
        try:
            self.loop.call_soon_threadsafe(  # type: ignore[union-attr]  # ready: it is set
                self._drain, context=self._context)
        except RuntimeError:                   # the loop has closed: the stage is stopping
            self.scheduled = False

    def _length(self) -> int:
        return len(self.items) + self.inflight

    # -- the loop thread -----------------------------------------------------------------------

    def _drain(self) -> None:
        """Start a task per queued event while the cap allows. (It runs in the loop thread's
        context, so each task's copy of it has this stage as its cursor.)"""
        self.scheduled = False                 # first: an event put from now on schedules again
        if self.closing:
            return
        items, run, tasks, loop = self.items, self._run, self.tasks, self.loop
        assert loop is not None                # (we run on it)
        name, factory = self.stage.name, loop.get_task_factory()
        while items and self.inflight < self.cap:
            self.inflight += 1                 # before the pop: never idle with an event in hand
            try:
                item = items.popleft()
            except IndexError:                 # discard() emptied it meanwhile
                self.inflight -= 1
                return
            self.moves += 1
            if factory is None:
                # named after the stage: unnamed, asyncio formats a "Task-N" for each, and
                # loop.create_task would only add a call around this
                task = asyncio.Task(run(item), loop=loop, name=name)
            else:                              # (one the application set on the loop)
                task = loop.create_task(run(item), name=name)
            tasks.add(task)

    async def _run(self, item: Any) -> None:
        stage = self.stage
        stamped = type(item) is Stamped
        ev = item.ev if stamped else item
        start = time.monotonic()
        try:
            await self._handle(ev)
        except Exception:
            stage.failed()
        finally:
            end = time.monotonic()
            self._task_time += end - start
            if end - self._measured[0] >= _MEASURE_EVERY:
                self._measure(end)
            stage.service_times.append(end - start)
            stage.processed += 1
            self.inflight -= 1
            self.moves += 1
            # with its loop: without one, current_task asks get_running_loop, which on 3.11
            # makes a getpid system call (a third of this thread's calls per request)
            self.tasks.discard(asyncio.current_task(self.loop))
            self._wakeups.due_by_now(end)  # type: ignore[union-attr]  # set before any task
            if stamped and stage.observers:
                for observer in stage.observers:
                    observer([ev], [start - item.t], [end - item.t])
            if self.items:
                if not self.scheduled:         # (in the loop's context, not this task's)
                    self.scheduled = True
                    self.loop.call_soon(  # type: ignore[union-attr]  # running
                        self._drain, context=self._context)
            else:
                self._maybe_idle()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``coro`` in a task of the stage's loop (call it there) that is not a request: it
        holds no place under the cap and is not in the queue's length, but the stage waits for
        it as it stops, and cancels it at the deadline, as it does requests. For what a request
        leaves running for a long time (an accepted WebSocket's application)."""
        task = self.loop.create_task(coro)  # type: ignore[union-attr]  # on the loop: it runs
        self.tasks.add(task)
        task.add_done_callback(self._spawned_ended)
        return task

    def _spawned_ended(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        self.moves += 1
        self._maybe_idle()

    def _maybe_idle(self) -> None:
        """Tell a stop waiting for the stage to empty that it has (on the loop thread)."""
        if (not self.inflight and not self.tasks and self._idle is not None
                and not self._idle.done()):
            self._idle.set_result(None)

    def _measure(self, now: float) -> None:
        """How many tasks overlap, from the last period: their seconds in flight over the
        loop thread's CPU seconds. Tasks that only compute run one after the other (1); tasks
        that wait overlap as long as the CPU lasts (up to the cap). On the loop thread."""
        cpu, spent = time.thread_time(), self._task_time
        _, cpu_then, spent_then = self._measured
        self._measured = (now, cpu, spent)
        if cpu > cpu_then and spent > spent_then:
            self.overlap = max(1.0, min(float(self.cap), (spent - spent_then) / (cpu - cpu_then)))

    def _main(self, started: threading.Event) -> None:
        loop = self.loop = self.factory()
        self._wakeups = RoundWakeups(loop.call_soon)
        asyncio.set_event_loop(loop)
        thread_cursor.set(Cursor(self.stage))
        self._context = contextvars.copy_context()
        self._measured = (time.monotonic(), time.thread_time(), 0.0)
        try:
            loop.run_until_complete(_call(self.stage.handler.init, self.stage.context()))
        except BaseException as exc:
            self.failed = exc
            self._close_loop()
            started.set()
            return
        self.ready = True
        started.set()
        self.scheduled = True
        loop.call_soon(self._drain, context=self._context)    # what came during init
        with self._wakeups:
            loop.run_forever()
        self._close_loop()

    def _close_loop(self) -> None:
        """End what the application left running (its background tasks), then the loop."""
        loop = self.loop
        assert loop is not None
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.wait(left, timeout=_CANCEL_WAIT))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())   # to_thread's threads
        except Exception:
            log.exception("stage %r: closing its event loop raised", self.stage.name)
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    async def _shutdown(self, deadline: float) -> bool:
        """Let the queued events and the tasks in flight finish by ``deadline`` (those that
        do not are cancelled), then the handler's destroy. True if all finished."""
        loop = asyncio.get_running_loop()
        self._idle = loop.create_future()
        if not (self.items or self.inflight or self.tasks):
            self._idle.set_result(None)
        try:
            await asyncio.wait_for(asyncio.shield(self._idle),
                                   max(0.0, deadline - time.monotonic()))
            drained = True
        except TimeoutError:
            drained = False
            self.closing = True
            for task in list(self.tasks):
                task.cancel()
            if self.tasks:
                await asyncio.wait(list(self.tasks), timeout=_CANCEL_WAIT)
        self.closing, self.ready = True, False
        try:
            await _call(self.stage.handler.destroy)
        except Exception:
            log.exception("stage %r: destroy raised", self.stage.name)
        return drained

    # -- the thread manager --------------------------------------------------------------------

    def start(self) -> None:
        """Start the thread, run the handler's init on its loop, then take events. Raises
        what init raised (after the loop is closed), as ``Runtime.start`` does for others."""
        started = threading.Event()
        self.thread = threading.Thread(target=self._main, args=(started,),
                                       name=f"seda:{self.stage.name}", daemon=True)
        self.thread.start()
        started.wait()
        if self.failed is not None:
            self.thread.join()
            raise RuntimeError(f"stage {self.stage.name!r}: init raised {self.failed!r}") \
                from self.failed

    def stop(self, deadline: float) -> bool:
        """Let what is queued and in flight finish (cancelling what has not by ``deadline``),
        run the handler's destroy, and end the thread. False if tasks had to be cancelled."""
        thread, loop = self.thread, self.loop
        if thread is None or not thread.is_alive() or loop is None:
            return not self.items
        if thread is threading.current_thread():   # a task destroying its own stage
            self.closing = True
            return not self.items
        future = asyncio.run_coroutine_threadsafe(self._shutdown(deadline), loop)
        try:
            drained = future.result(max(0.0, deadline - time.monotonic()) + 2 * _CANCEL_WAIT)
        except Exception:                      # destroy hung, or the loop went away
            log.exception("stage %r: stopping its event loop failed", self.stage.name)
            drained = False
        with contextlib.suppress(RuntimeError):    # closed already
            loop.call_soon_threadsafe(loop.stop)
        thread.join(2 * _CANCEL_WAIT)
        return drained

    def discard(self) -> int:
        dropped = len(self.items)
        self.items.clear()
        return dropped

    def __len__(self) -> int:
        return len(self.items)

    def thread_count(self) -> int:
        return 1 if self.thread is not None and self.thread.is_alive() else 0

    def concurrency(self) -> float:
        """Events really served at once, measured (see the module): at most the task cap."""
        return self.overlap

    def idle(self) -> bool:
        return self.failed is not None or (not self.items and not self.inflight and not self.tasks)

    def progress(self) -> int:
        return self.moves

    def unwrap_keys(self, unwrap: Callable[[Any], Any]) -> None:
        pass                                   # no keys: events are not ordered by one
