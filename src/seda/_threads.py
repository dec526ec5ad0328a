"""The default thread manager: a private pool of threads per stage (thesis 5.2.1).

For handlers that block (files, databases, WSGI applications). Stages that never block share
the event-loop thread instead (``_loop.py``); CPU-bound ones can run in processes
(``_processes.py``).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from ._loop import RoundWakeups
from ._queues import IDLE, FifoQueue, KeyedQueue, Worker
from ._sink import Cursor, connect, thread_cursor
from ._stage import Stage, run_batch


class ThreadPool:
    """``threads`` worker threads draining one stage's queue in batches.

    A fixed pool keeps its ``threads``. Under a ThreadPoolController (``limit``) it starts
    threads when events wait and no thread has taken one for ``STALL`` seconds: its threads are
    held up (a sleep, a socket, a database), not merely busy, so the waiting events get threads
    of their own, up to the cap. Threads busy with short batches keep taking events, and the
    pool stays small. The controller turns this off (``grow_on_stall``) for handlers it sees
    compute: their threads stall only waiting for the GIL, where more threads add contention,
    not capacity. A thread idle for ``idle_timeout`` seconds exits while more than
    ``min_size`` remain.
    """

    STALL = 0.005

    kind: ClassVar[str] = "threads"
    local: ClassVar[bool] = True

    def __init__(self, stage: Stage, threads: int, key: Callable[[Any], Any] | None = None) -> None:
        if threads < 1:
            raise ValueError(f"stage {stage.name!r}: threads must be at least 1, got {threads}")
        self.stage = stage
        self.queue = (KeyedQueue(stage, threads, self._short, key) if key is not None
                      else FifoQueue(stage, threads, self._short))
        self.min_size = threads
        self.idle_timeout: float | None = None
        self.live: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._count = 0                        # threads started or asked for, and not retired
        self._spawned = 0
        self._clocks: dict[threading.Thread, int] = {}    # each live thread's CPU clock
        self._cpu_gone = 0.0                   # CPU seconds of threads that have exited
        self._workers: set[Worker] = set()     # of live threads: their time in batches
        self._busy_gone = 0.0                  # seconds in batches of threads that exited
        self._watching = False                 # a stall check is due
        self.grow_on_stall = True              # set by the controller: do the handlers wait?
        # (see EventHandler.waits_on_loop)
        self.defer_wakeups = not getattr(stage.handler, "waits_on_loop", True)
        self.started = False
        self.deadline: float | None = None     # set by stop(): when threads must be gone
        connect(stage.sink, self.queue.put, self.queue.put_many, self.queue.__len__)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            self.started = True
            self._count = self.min_size
            self._set_room()
        for _ in range(self.min_size):
            self._spawn()
        self.limit(self.cap)                   # threads for events queued before the start

    def unwrap_keys(self, unwrap: Callable[[Any], Any]) -> None:
        """Queued items are about to be wrapped (``Stage.observe``): key on what is inside."""
        if isinstance(self.queue, KeyedQueue):
            key = self.queue.key
            self.queue.key = lambda item: key(unwrap(item))

    def busy_with(self, key: Any) -> bool:
        """A keyed stage: whether events with ``key`` are queued or being handled."""
        return self.queue.busy_with(key)  # type: ignore[attr-defined, no-any-return]  # KeyedQueue

    @property
    def cap(self) -> int:
        return self.queue.cap

    def limit(self, cap: int, start: bool = False) -> None:
        """Let up to ``cap`` threads run the handler at once, starting threads on demand up to
        it (``start``: at once, for the batches waiting; on the control thread). Lowering it
        stops no thread in a batch: those above it park, and exit once idle."""
        cap = max(1, cap)
        with self._lock:
            self.queue.cap = cap
            self._set_room()
        if left := self.queue.limit(cap):      # batches left without a worker:
            if start:
                self._grow(left)
            else:
                self._short()                  # threads if they turn out to be held up

    def stop(self, deadline: float) -> bool:
        """Drain what is queued, then let every thread exit. False if some did not by deadline."""
        self.deadline = deadline
        with self._lock:                       # no thread starts after this
            self.queue.close()
        me = threading.current_thread()        # a handler may destroy its own stage
        for thread in list(self.live - {me}):
            thread.join(max(0.0, deadline - time.monotonic()))
        return not (self.live - {me})

    def discard(self) -> int:
        """Drop what is still queued; threads exit after the batch in hand."""
        return self.queue.discard()

    # -- observation ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.queue)

    def thread_count(self) -> int:
        return len(self.live)

    def concurrency(self) -> int:
        """Threads that may run the handler at once: those above a lowered cap only park (a
        response-time bound counting them would admit a queue those threads never serve)."""
        return min(self.queue.cap, len(self.live))

    @property
    def started_count(self) -> int:
        """Threads started since the pool began: against ``thread_count``, the churn."""
        return self._spawned

    def idle(self) -> bool:
        return self.queue.idle()

    def progress(self) -> int:
        return self.queue.batches

    def cpu_time(self) -> float:
        """CPU seconds the pool's threads have used, batches in progress included: against
        ``busy_time``, this tells handlers that compute from handlers that wait."""
        with self._lock:                       # a thread leaves _clocks before it ends
            return self._cpu_gone + sum(map(time.clock_gettime, self._clocks.values()))

    def busy_time(self) -> float:
        """Seconds the pool's threads have spent running batches, those in progress included
        (a request blocked for ten seconds counts from its start, not from its end)."""
        now = time.perf_counter()
        with self._lock:
            return self._busy_gone + sum(w.busy + (now - w.started if w.started else 0.0)
                                         for w in self._workers)

    # -- the threads ---------------------------------------------------------------------------

    def _set_room(self) -> None:
        """Threads a producer may still ask for (under ``_lock``); none before start."""
        self.queue.room = max(0, self.queue.cap - self._count) if self.started else 0

    def _short(self) -> None:
        """A producer found no thread free (any thread; no lock): see in ``STALL`` seconds
        whether the threads are taking events at all (on the control thread: the producer may
        be the event loop, which must not wait)."""
        if not self._watching and self.grow_on_stall:
            self._watching = True
            self._look_again()

    def _look_again(self) -> None:
        self.stage.runtime.control.call_soon(
            functools.partial(self._watch, self.queue.batches, self.cpu_time()), self.STALL)

    def _watch(self, batches: int, cpu: float) -> None:
        """Events wait: if no thread took any since the last look and the threads hardly used
        the CPU meanwhile, they are held up (not computing): start threads for the waiting
        batches. Look again while events wait."""
        queue = self.queue
        if not len(queue) or queue.closing or not self.grow_on_stall:
            self._watching = False
            return
        if queue.batches == batches and self.cpu_time() - cpu < 0.2 * self.STALL:
            self._grow(queue.startable())
        self._look_again()

    def _grow(self, count: int) -> None:
        """Start up to ``count`` threads, within the cap (on the control thread, where waiting
        for ``Thread.start`` holds up no event)."""
        with self._lock:
            count = min(count, self.queue.cap - self._count)
            if count <= 0 or not self.started:
                return
            self._count += count
            self._set_room()
        for _ in range(count):
            self._spawn()

    def _spawn(self) -> None:
        """Start one of the threads counted in ``_count``, unless the pool is stopping."""
        thread = threading.Thread(target=self._work, daemon=True)
        with self._lock:
            if self.queue.closing:
                return
            self._spawned += 1
            thread.name = f"seda:{self.stage.name}:{self._spawned}"
            self.live.add(thread)
        try:
            thread.start()
        except BaseException:                  # out of threads: the pool goes on without it
            with self._lock:
                self.live.discard(thread)
                self._count -= 1
                self._set_room()
            raise

    def _work(self) -> None:
        me = threading.current_thread()
        with self._lock:
            self._clocks[me] = time.pthread_getcpuclockid(threading.get_ident())
        worker = self.new_worker()
        with self._lock:
            self._workers.add(worker)
        thread_cursor.set(Cursor(self.stage))
        take, run, stage, clock = self.queue.take, self.run_batch, self.stage, time.perf_counter
        queue, wakeups = self.queue, RoundWakeups()
        try:
            while (batch := take(worker, stage.batch, self.idle_timeout)) is not None:
                if batch is IDLE:
                    if self._retire():
                        break
                    continue
                # handlers that compute (as the controller sees them) hold the loop's wake-ups
                # while this thread has more to do; handlers that may block never do
                wakeups.hold(self.defer_wakeups and not self.grow_on_stall)
                worker.started = start = clock()
                run(worker, batch)
                worker.busy += clock() - start
                worker.started = 0.0
                if wakeups.due:
                    if len(queue):
                        wakeups.due_by_now(time.monotonic())
                    else:
                        wakeups.wake_due()
        finally:
            wakeups.hold(False)
            wakeups.wake_due()
            self.end_worker(worker)
            with self._lock:
                self._cpu_gone += time.thread_time()
                self._busy_gone += worker.busy
                self._workers.discard(worker)
                del self._clocks[me]
                self.live.discard(me)

    def _retire(self) -> bool:
        """A thread has been idle for idle_timeout: let it go if the pool is above its minimum."""
        with self._lock:
            if self._count <= self.min_size:
                return False
            self._count -= 1
            self._set_room()
            return True

    # hooks for ProcessPool ----------------------------------------------------------------------

    def new_worker(self) -> Worker:
        return Worker()

    def run_batch(self, worker: Worker, batch: list[Any]) -> None:
        run_batch(self.stage, batch)

    def end_worker(self, worker: Worker) -> None:
        pass
