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
    """``threads`` worker threads draining one stage's queue in batches."""

    kind = "threads"

    def __init__(self, stage: Any, threads: int, key: Callable[[Any], Any] | None = None) -> None:
        if threads < 1:
            raise ValueError(f"stage {stage.name!r}: threads must be at least 1, got {threads}")
        self.stage = stage
        self.queue = KeyedQueue(stage, key) if key is not None else FifoQueue(stage)
        self.size = threads
        self.live: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._spawned = 0
        self.started = False
        self.deadline: float | None = None     # set by stop(): when threads must be gone
        # ThreadPoolController: a thread idle for idle_timeout seconds exits while the pool is
        # larger than min_size.
        self.min_size = threads
        self.idle_timeout: float | None = None
        stage.sink._connect(self.queue.put, self.queue.put_many, self.queue.__len__)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self.started = True
        for _ in range(self.size):
            self._spawn()

    def unwrap_keys(self, unwrap: Callable[[Any], Any]) -> None:
        """Queued items are about to be wrapped (``Stage.observe``): key on what is inside."""
        if isinstance(self.queue, KeyedQueue):
            key = self.queue.key
            self.queue.key = lambda item: key(unwrap(item))

    def resize(self, threads: int) -> None:
        """Grow or shrink the pool; a shrinking thread exits between batches."""
        threads = max(1, threads)
        with self._lock:
            delta, self.size = threads - self.size, threads
        if not self.started:
            return
        if delta > 0:
            for _ in range(delta):
                self._spawn()
        elif delta < 0:
            self.queue.shrink(-delta)

    def stop(self, deadline: float) -> bool:
        """Drain what is queued, then let every thread exit. False if some did not by deadline."""
        self.deadline = deadline
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

    # -- the threads ---------------------------------------------------------------------------

    def _spawn(self) -> None:
        with self._lock:
            self._spawned += 1
            name = f"seda:{self.stage.name}:{self._spawned}"
        thread = threading.Thread(target=self._work, name=name, daemon=True)
        self.live.add(thread)
        thread.start()

    def _work(self) -> None:
        worker = self.new_worker()
        thread_cursor.set(Cursor(self.stage))
        take, run, stage = self.queue.take, self.run_batch, self.stage
        try:
            while (batch := take(worker, stage.batch, self.idle_timeout)) is not None:
                if batch is IDLE:
                    if self._shrink_idle():
                        break
                    continue
                run(worker, batch)
        finally:
            self.end_worker(worker)
            self.live.discard(threading.current_thread())

    def _shrink_idle(self) -> bool:
        """A thread has been idle for idle_timeout: let it go if the pool is above its minimum."""
        with self._lock:
            if self.size > self.min_size:
                self.size -= 1
                return True
        return False

    # hooks for ProcessPool ----------------------------------------------------------------------

    def new_worker(self) -> Worker:
        return Worker()

    def run_batch(self, worker: Worker, batch: list) -> None:
        self.stage.run(batch)

    def end_worker(self, worker: Worker) -> None:
        pass
