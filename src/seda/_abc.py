"""The interfaces the core declares and the layers above implement (as trio's ``_abc.py``).

A thread manager decides where a stage's handler runs (thesis 5.2.1); the core ships three
(``_threads.ThreadPool``, ``_loop.LoopStage``, ``_processes.ProcessPool``) and talks to them
only through ``ThreadManager``; a ``StageQueue`` from a layer above (``seda.cluster``) brings
a fourth with it. A controller is a feedback loop over one stage (thesis 5.4,
chapter 7); ``seda.control`` holds the project's, and the runtime knows them only as
``Controller``: it attaches them and ticks them, so the core imports nothing from above. A
``DoneSink`` is where a completion is reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    from ._stage import Stage


class ThreadManager(Protocol):
    """Who runs one stage's handler, and on which threads. It drains the stage's queue (it
    plugs its own ``put`` into the stage's sink) and reports on itself."""

    #: "threads", "loop", "processes" or "asyncio": shown by ``Runtime.stats()``.
    kind: ClassVar[str]
    #: Whether the handler's ``init`` and ``destroy`` are the runtime's to call, on its own
    #: thread; if not, the manager calls them where the handler runs (a process pool in its
    #: children, an asyncio stage on its loop).
    local: ClassVar[bool]

    def start(self) -> None:
        """Start taking events (the stage's ``init`` has run)."""

    def stop(self, deadline: float) -> bool:
        """Let what is queued drain, then end the threads; False if not done by ``deadline``
        (``time.monotonic()``)."""

    def discard(self) -> int:
        """Drop every queued event (a stop past its deadline); how many were dropped."""

    def __len__(self) -> int:
        """Events waiting."""

    def thread_count(self) -> int:
        """Threads (or processes) running the handler now."""

    def concurrency(self) -> float:
        """Events the handler serves at once: the threads or processes running it; on an
        asyncio stage, as many tasks as overlap, measured. Response-time controllers turn
        service time into capacity with it."""

    def idle(self) -> bool:
        """Nothing queued and no batch in hand."""

    def progress(self) -> int:
        """A counter that moves whenever a batch is taken: ``Runtime.stop`` watches it."""

    def unwrap_keys(self, unwrap: Callable[[Any], Any]) -> None:
        """Queued items are about to be wrapped (``Stage.observe``): key on what is inside."""

    # Optional, read with getattr: ``stamps`` (a ClassVar, True when the manager knows each
    # event's enqueue time itself and calls the stage's observers, so ``Stage.observe`` wraps
    # nothing) and ``info()`` (a dict of JSON values ``Runtime.stats()`` shows under the
    # manager's ``kind``): what a queue outside the process (``seda.cluster``) has to add.


class StageQueue(Protocol):
    """A queue that lives outside the process (``add_stage(..., queue=...)``, as
    ``seda.cluster.RedisQueue``): it makes the thread manager that drains it for a stage."""

    def manager(self, stage: Stage, threads: int,
                key: Callable[[Any], Any] | None) -> ThreadManager:
        """The thread manager of ``stage``: ``threads`` threads of this process, ``key`` as
        ``add_stage`` was given it."""


class DoneSink(Protocol):
    """Where the socket and file layers report a completion (``WriteDone``, ``FileDone``): a
    ``Sink``, or any object with its ``enqueue_lossy``."""

    def enqueue_lossy(self, ev: Any, /) -> bool:
        """Take ``ev`` if admitted; False when it was dropped."""


class Controller:
    """A feedback loop over one stage. The runtime calls ``attach(stage)`` once, then
    ``tick(now)`` every ``period`` seconds on the control thread. Tests call ``tick`` with a
    fake clock; nothing in a controller reads the time by itself.

    A controller given as a stage's ``threads`` or ``batch`` sets them in ``attach`` (the pool's
    bounds, the first batch size); one given as ``predicate`` is also the stage's admission
    check (``accept(ev)``)."""

    period = 1.0
    stage: Stage | None = None

    def attach(self, stage: Stage) -> None:
        if self.stage is not None and self.stage is not stage:
            raise ValueError(f"{type(self).__name__} already controls stage {self.stage.name!r}")
        self.stage = stage

    def detach(self) -> None:
        """The controller no longer guards its stage (a predicate was replaced)."""
        observe = getattr(self, "observe", None)
        if self.stage is not None and observe is not None:
            self.stage.unobserve(observe)
        self.stage = None

    def tick(self, now: float) -> None:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """What ``Runtime.stats()`` and the profiler show of this controller: JSON values."""
        return {}
