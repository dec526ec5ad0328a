"""The default thread manager: a private pool of threads per stage (thesis 5.2.1).

For handlers that block (files, databases, WSGI applications). Stages that never block share
the event-loop thread instead (``loop.py``); CPU-bound ones can run in processes
(``processes.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from .queues import IDLE, FifoQueue, KeyedQueue, Worker
from .sink import Cursor, thread_cursor


class ThreadPool:
    """``threads`` worker threads draining one stage's queue in batches.

    A fixed pool keeps its ``threads``. Under a ThreadPoolController (``limit``) it starts a
    thread whenever an event finds none free, up to its cap, and a thread idle for
    ``idle_timeout`` seconds exits while more than ``min_size`` remain.
    """

    kind = "threads"

    def __init__(self, stage: Any, threads: int, key: Callable[[Any], Any] | None = None) -> None:
        if threads < 1:
            raise ValueError(f"stage {stage.name!r}: threads must be at least 1, got {threads}")
        self.stage = stage
        self.queue = (KeyedQueue(stage, threads, self._grow, key) if key is not None
                      else FifoQueue(stage, threads, self._grow))
        self.min_size = threads
        self.idle_timeout: float | None = None
        self.live: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._count = 0                        # threads started or asked for, and not retired
        self._spawned = 0
        self._clocks: dict[threading.Thread, int] = {}    # each live thread's CPU clock
        self._cpu_gone = 0.0                   # CPU seconds of threads that have exited
        self.started = False
        self.deadline: float | None = None     # set by stop(): when threads must be gone
        stage.sink._connect(self.queue.put, self.queue.put_many, self.queue.__len__)

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

    @property
    def cap(self) -> int:
        return self.queue.cap

    def limit(self, cap: int) -> None:
        """Let up to ``cap`` threads run the handler at once, starting threads on demand up to
        it. Lowering it stops no thread in a batch: those above it park, and exit once idle."""
        cap = max(1, cap)
        with self._lock:
            self.queue.cap = cap
            self._set_room()
        if left := self.queue.limit(cap):
            self._grow(left)

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

    def idle(self) -> bool:
        return self.queue.idle()

    def progress(self) -> int:
        return self.queue.batches

    def cpu_time(self) -> float:
        """CPU seconds the pool's threads have used, batches in progress included: against the
        wall clock, this tells handlers that compute from handlers that wait."""
        with self._lock:                       # a thread leaves _clocks before it ends
            return self._cpu_gone + sum(map(time.clock_gettime, self._clocks.values()))

    # -- the threads ---------------------------------------------------------------------------

    def _set_room(self) -> None:
        """Threads a producer may still ask for (under ``_lock``); none before start."""
        self.queue.room = max(0, self.queue.cap - self._count) if self.started else 0

    def _grow(self, count: int) -> None:
        """A producer found no thread free for ``count`` batches: start up to that many. On the
        control thread, since ``Thread.start`` waits for the thread to run and the producer may
        be the event-loop thread."""
        with self._lock:
            count = min(count, self.queue.cap - self._count)
            if count <= 0 or not self.started:
                return
            self._count += count
            self._set_room()
        for _ in range(count):
            self.stage.runtime.control.call_soon(self._spawn)

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
        thread_cursor.set(Cursor(self.stage))
        take, run, stage = self.queue.take, self.run_batch, self.stage
        try:
            while (batch := take(worker, stage.batch, self.idle_timeout)) is not None:
                if batch is IDLE:
                    if self._retire():
                        break
                    continue
                run(worker, batch)
        finally:
            self.end_worker(worker)
            with self._lock:
                self._cpu_gone += time.thread_time()
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

    def run_batch(self, worker: Worker, batch: list) -> None:
        self.stage.run(batch)

    def end_worker(self, worker: Worker) -> None:
        pass
