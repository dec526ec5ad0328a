"""The runtime (the thesis's Sandstorm manager): stage registry, lifecycle and observation."""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from os import PathLike
from typing import Any

from ._abc import Controller, StageQueue
from ._asyncio import AsyncioStage, LoopFactory
from ._control import ControlThread
from ._loop import EventLoop, LoopStage
from ._processes import ProcessPool
from ._signals import Signals, StagesInitialized, Stopping
from ._sink import Sink
from ._sink import close as close_sink
from ._stage import Stage
from ._threads import ThreadPool
from ._timer import Timer
from .profile.graph import to_dot
from .profile.sampler import Sampler

log = logging.getLogger("seda")
_GRACE = 2.0    # seconds past the stop deadline for handlers to finish the batch in hand


def _percentile(samples: list[float], q: float) -> float:
    if not samples:
        return 0.0
    samples.sort()
    return samples[min(len(samples) - 1, int(q * len(samples)))]


class Runtime:
    """Holds the stages of one service and the threads that run them.

    ``with Runtime() as rt:`` starts on enter and stops (draining every queue) on exit.
    """

    def __init__(self) -> None:
        self._stages: dict[str, Stage] = {}
        self._lock = threading.RLock()
        self._state = "new"
        self.loop = EventLoop()
        self.timer = Timer()
        self.signals = Signals()
        self.control = ControlThread()
        self._sampler: Sampler | None = None
        self._profile: tuple[str, float] | None = None     # asked for before start

    @classmethod
    def from_config(cls, path: str | PathLike[str]) -> Runtime:
        """A runtime with the stages a TOML file describes (see ``seda.config``); not started."""
        from .config import load

        runtime = cls()
        load(runtime, path)
        return runtime

    # -- stages --------------------------------------------------------------------------------

    def add_stage(
        self,
        name: str,
        handler: Any,
        *,
        threads: int | Controller = 1,
        batch: int | Controller = 64,
        predicate: Any = None,
        params: dict[str, Any] | None = None,
        blocking: bool = True,
        key: Callable[[Any], Any] | None = None,
        processes: int | None = None,
        queue: StageQueue | None = None,
        tasks: int | None = None,
        loop_factory: LoopFactory | None = None,
    ) -> Stage:
        """Create a stage. Where its handler runs:

        - ``blocking=True`` (default): a private pool of ``threads`` threads;
        - ``blocking=False``: the shared event-loop thread, with every other non-blocking stage;
        - ``processes=N``: N worker processes (events and outgoing enqueues are pickled);
        - ``queue=``: ``threads`` threads draining a queue outside the process, which makes its
          own thread manager (``seda.cluster.RedisQueue``: a stream shared by many machines).
        - ``tasks=N``: an asyncio event loop on a thread of its own (``loop_factory()``'s;
          uvloop's where installed), each event a task of the handler's ``async def
          handle_event``, at most N at once; its init and destroy run there too.

        ``key=fn``: events with equal ``fn(ev)`` are handled one at a time, in arrival order.
        ``threads``, ``batch`` and ``predicate`` take a constant or a controller from
        ``seda.control``, which the runtime attaches to the stage and runs on its control thread.
        """
        # a controller as a knob sets it when attached (the pool's bounds, the first batch)
        thread_ctl: Controller | None = None
        batch_ctl: Controller | None = None
        if isinstance(threads, Controller):
            if not blocking or processes is not None or queue is not None:
                raise ValueError(f"stage {name!r}: a controller of threads sizes a thread pool; "
                                 "this stage has none")
            thread_ctl, threads = threads, 1
        if isinstance(batch, Controller):
            batch_ctl, batch = batch, 1
        if not isinstance(name, str) or not name:
            raise ValueError(f"a stage name is a non-empty string, got {name!r}")
        if isinstance(handler, type):
            raise TypeError(f"stage {name!r}: pass a handler instance, not the class {handler!r}")
        if not callable(getattr(handler, "handle_events", None)):
            raise TypeError(f"stage {name!r}: {handler!r} is not an event handler "
                            "(subclass seda.EventHandler)")
        if not isinstance(batch, int) or batch < 1:
            raise ValueError(f"stage {name!r}: batch must be an integer >= 1, got {batch!r}")
        if getattr(handler, "single_threaded", False) and (threads != 1 or thread_ctl):
            raise ValueError(f"stage {name!r}: the handler is single-threaded, threads={threads}")
        if tasks is not None and (not blocking or processes is not None or key is not None
                                  or threads != 1 or thread_ctl is not None or queue is not None):
            raise ValueError(f"stage {name!r}: an asyncio stage (tasks=) runs on a thread of its "
                             "own; it takes neither threads, blocking, processes, key nor queue")
        if not blocking and (threads != 1 or processes is not None):
            raise ValueError(f"stage {name!r}: a non-blocking stage runs on the shared event-loop "
                             "thread; it takes neither threads nor processes")
        if queue is not None and (not blocking or processes is not None):
            raise ValueError(f"stage {name!r}: a stage with a queue= runs on threads of its own; "
                             "it takes neither blocking=False nor processes")
        with self._lock:
            if name in self._stages:
                raise ValueError(f"a stage named {name!r} already exists")
            if self._state == "stopped":
                raise RuntimeError("the runtime has been stopped")
            stage = Stage(name, handler, self, batch, dict(params or {}))
            if queue is not None:
                stage.manager = queue.manager(stage, threads, key)
            elif tasks is not None:
                stage.manager = AsyncioStage(stage, tasks, loop_factory)
            elif processes is not None:
                stage.manager = ProcessPool(stage, processes, key)
            elif blocking:
                stage.manager = ThreadPool(stage, threads, key)
            else:
                stage.manager = LoopStage(stage, self.loop)
            for ctl, slot in ((thread_ctl, "thread_control"), (batch_ctl, "batch_control")):
                if ctl is not None:
                    ctl.attach(stage)
                    setattr(stage, slot, ctl)
                    self.control.add(ctl)
            stage.sink.predicate = predicate
            self._stages[name] = stage
            if self._state == "running":
                try:
                    self._start_stage(stage)
                except BaseException:
                    del self._stages[name]
                    raise
        return stage

    def stage(self, name: str) -> Stage:
        try:
            return self._stages[name]
        except KeyError:
            raise KeyError(f"no stage named {name!r}") from None

    def sink(self, name: str) -> Sink:
        return self.stage(name).sink

    def stages(self) -> list[Stage]:
        return list(self._stages.values())

    def _start_stage(self, stage: Stage) -> None:
        self._init_stage(stage)
        stage.manager.start()

    @staticmethod
    def _init_stage(stage: Stage) -> None:
        if stage.manager.local:                # a process stage inits in its children
            try:
                stage.handler.init(stage.context())
            except Exception as exc:
                raise RuntimeError(f"stage {stage.name!r}: init raised {exc!r}") from exc

    def add_controller(self, controller: Controller) -> None:
        """Tick ``controller`` on the control thread from now until stop; for controllers that
        are not a stage's knob, such as ``control.Degrader``."""
        self.control.add(controller)

    def remove_controller(self, controller: Controller) -> None:
        """Stop ticking ``controller`` (a stage's predicate was replaced, say)."""
        self.control.remove(controller)

    def destroy_stage(self, stage: Stage, timeout: float = 5.0) -> None:
        """``stage.destroy(timeout)``: refuse new events, let the queued ones drain (up to
        ``timeout`` seconds), then call the handler's ``destroy``."""
        with self._lock:
            if self._stages.get(stage.name) is not stage:
                return
            del self._stages[stage.name]
        for ctl in (stage.thread_control, stage.batch_control, stage.sink.predicate):
            if isinstance(ctl, Controller):
                self.control.remove(ctl)
        self._finish(stage, time.monotonic() + timeout)

    def _finish(self, stage: Stage, deadline: float) -> None:
        """Close, drain and destroy one stage (its sink already refuses or is about to). What
        is still queued at the deadline is dropped, so no thread outlives ``stop``."""
        close_sink(stage.sink)
        if not stage.manager.stop(deadline):
            dropped = stage.manager.discard()
            log.warning("stage %r: queue not drained by the deadline; dropped %d events",
                        stage.name, dropped)
            if not stage.manager.stop(time.monotonic() + _GRACE):
                log.warning("stage %r: a handler is still running %.0f s after the deadline",
                            stage.name, _GRACE)
        if stage.manager.local:
            try:
                stage.handler.destroy()
            except Exception:
                log.exception("stage %r: destroy raised", stage.name)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, *, freeze: bool = False) -> None:
        """Run every stage's ``init``, start the threads, then publish ``StagesInitialized``.
        ``freeze``, for a service that runs until stopped: what exists once it has started
        is moved out of the garbage collector's sight (``gc.freeze``), its garbage first."""
        # What the imports made lives as long as the process: frozen, a full collection walks
        # only what serving made (with Django and Flask loaded, one took 40 ms, every thread
        # stopped). Their garbage is collected first (frozen, it never would be), before the
        # start: once the loop runs, clients are waiting (wrk's first requests waited 10-20 ms
        # behind it). What the stages' start made is all in the young generations after it,
        # so collecting those takes only as long as the start made objects.
        if freeze:
            gc.collect()
        with self._lock:
            if self._state != "new":
                raise RuntimeError(f"the runtime is already {self._state}")
            self.timer.start()
            self.control.start()
            started = []
            try:
                # every init before any event runs: a listener registered while the graph was
                # built may already have connections waiting, and they must not reach a stage
                # whose init has not run yet
                for stage in self._stages.values():
                    self._init_stage(stage)
                    started.append(stage)
                self.loop.start()
                for stage in started:
                    stage.manager.start()
            except BaseException:
                for stage in list(self._stages.values()):   # never destroy what never started
                    if stage not in started:
                        del self._stages[stage.name]
                self._state = "running"
                self.stop(timeout=1.0)
                raise
            self._state = "running"
        if freeze:
            gc.collect(1)
            gc.freeze()
        if self._profile is not None:
            self.start_profiler(*self._profile)
        self.signals.publish(StagesInitialized(tuple(self._stages)))

    def stop(self, timeout: float = 5.0) -> None:
        """Let every queue drain (up to ``timeout`` seconds), then destroy every stage and end
        every thread and process the runtime started."""
        deadline = time.monotonic() + timeout
        with self._lock:
            if self._state == "new":          # never started: only the selector to close
                self.loop.stop(0)
                self.control.stop()
            if self._state != "running":
                self._state = "stopped"
                return
            self._state = "stopping"
        self.signals.publish(Stopping())          # sources stop taking work, then queues drain
        self.timer.stop()
        self.control.stop()
        if self._sampler is not None:
            self._sampler.stop()
        if not self._quiesce(deadline):
            log.warning("runtime: queues still busy after %.1f s; stopping anyway", timeout)
        stages = list(self._stages.values())
        for stage in stages:
            close_sink(stage.sink)
        for stage in stages:
            self._finish(stage, deadline)
        if not self.loop.stop(max(0.1, deadline - time.monotonic())):
            log.warning("runtime: the event-loop thread is stuck in a handler")
        self._state = "stopped"

    def _quiesce(self, deadline: float) -> bool:
        """Wait until no stage has queued events or a batch in hand, twice with no progress in
        between (a batch in flight from one stage to another would show as progress)."""
        managers = [stage.manager for stage in self._stages.values()]
        while True:
            before = [m.progress() for m in managers]
            if all(m.idle() for m in managers) and before == [m.progress() for m in managers]:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)

    def __enter__(self) -> Runtime:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- observation ---------------------------------------------------------------------------

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per stage: queue, threads, processed, rejected, errors, batch, reserved, p90_ms
        (90th percentile of the handler's time per event over its last 512 batches), and under
        ``control`` the state of its controllers (``threads``, ``batch``, ``admission``), under
        ``handler`` what the handler counts itself (``EventHandler.stats``), and for a stage
        with a ``queue=``, under its kind (``cluster``) what that queue reports."""
        out: dict[str, dict[str, Any]] = {}
        for name, stage in list(self._stages.items()):
            manager = stage.manager
            out[name] = {
                "queue": len(manager),
                "threads": manager.thread_count(),
                "processed": stage.processed,
                "rejected": stage.sink.rejected,
                "errors": stage.errors,
                "batch": stage.batch,
                "reserved": stage.sink.reserved,
                "p90_ms": _percentile(list(stage.service_times), 0.9) * 1000.0,
                "manager": manager.kind,
            }
            # a predicate need not be a Controller: any object with state() is shown
            knobs: tuple[tuple[str, Any], ...] = (
                ("threads", stage.thread_control), ("batch", stage.batch_control),
                ("admission", stage.sink.predicate))
            control = {label: ctl.state() for label, ctl in knobs if hasattr(ctl, "state")}
            if control:
                out[name]["control"] = control
            info = getattr(manager, "info", None)     # a queue outside the process
            if info is not None:
                out[name][manager.kind] = info()
            own = getattr(stage.handler, "stats", None)
            own = own() if own is not None else None
            if own is not None:
                out[name]["handler"] = own
        return out

    def stage_graph(self) -> list[tuple[str, str, int]]:
        """``(source, target, events)`` for every stage-to-stage enqueue seen so far (5.3.5)."""
        edges: list[tuple[str, str, int]] = []
        for stage in list(self._stages.values()):
            for src, count in dict(stage.sink.edges).items():
                if src is not None:
                    edges.append((src.name, stage.name, count))
        return sorted(edges)

    def graph_dot(self) -> str:
        """The stage graph as Graphviz DOT text."""
        return to_dot(list(self._stages), self.stage_graph())

    def start_profiler(self, path: str | PathLike[str], interval: float = 1.0) -> Sampler | None:
        """Append a JSON line of ``stats()`` plus RSS to ``path`` every ``interval`` seconds
        until the runtime stops; ``python -m seda.profile plot`` draws the file. Before
        ``start``, the profiler is begun by ``start`` (and None returned)."""
        if self._state == "new":
            self._profile = (str(path), interval)
            return None
        if self._sampler is not None:
            self._sampler.stop()
        self._sampler = Sampler(self, path, interval)
        self._sampler.start()
        return self._sampler
