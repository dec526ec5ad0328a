"""The queues that pool threads drain: FIFO, and keyed (one key at a time, in arrival order).

A worker that finds nothing to do parks on a lock of its own, and a producer wakes exactly one
parked worker per event it adds: no thundering herd, and no lock allocated per wait (as
``threading.Condition`` would). Workers take batches under the queue's lock, which also keeps
``busy`` exact for ``Runtime.stop``. A FIFO producer takes no lock at all unless it has a worker
to wake: ``deque.append`` is atomic under the GIL, and a worker registers as parked *before* it
looks at the queue one last time, so either it sees the new event or the producer sees it parked.

A pool that may grow (``ThreadPoolController``) sets ``room``, the threads it could still start;
a producer that finds no worker to wake then calls ``short()``, and the pool looks whether its
workers are held up (see ``threads.ThreadPool``). ``cap`` bounds the workers holding a batch at
once; a worker above it parks instead of taking the next batch.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._stage import Stage

#: What ``take`` returns to a worker that waited ``idle_timeout`` seconds for nothing.
IDLE: list[Any] = []


class Worker:
    """What a queue knows about one thread draining it."""

    __slots__ = ("busy", "held", "key", "park", "started")

    def __init__(self) -> None:
        self.park = threading.Lock()
        self.park.acquire()          # held while the worker sleeps; a producer releases it
        self.held = 0                # events of the batch the worker is handling
        self.key: Any = None         # keyed queues: the key that batch belongs to
        self.started = 0.0           # when the batch in hand began (perf_counter), or 0
        self.busy = 0.0              # seconds spent in finished batches


class FifoQueue:
    """Events in arrival order, handed out in batches to any of the stage's threads."""

    def __init__(self, stage: Stage, cap: int, short: Callable[[], None]) -> None:
        self.stage = stage           # its ``processed`` counter is kept under our lock
        self.lock = threading.Lock()
        self.items: deque[Any] = deque()
        self.parked: list[Worker] = []
        self.busy = 0                # workers holding a batch
        self.cap = cap               # most workers holding a batch at once
        self.room = 0                # threads the pool could still start (set by the pool)
        self.short = short           # tells the pool no worker was free
        self.batches = 0             # batches handed out so far; Runtime.stop watches it move
        self.closing = False

    def __len__(self) -> int:
        return len(self.items)

    def _wake(self, count: int) -> int:
        """Wake up to ``count`` parked workers while the cap allows; returns how many of the
        ``count`` got none (under the lock)."""
        parked = self.parked
        free = self.cap - self.busy
        while count and parked and free > 0:
            parked.pop().park.release()
            count -= 1
            free -= 1
        return count

    def put(self, ev: Any) -> None:
        self.items.append(ev)
        if self.parked and self.busy < self.cap:
            with self.lock:
                if not self._wake(1):
                    return
        if self.room:
            self.short()

    def put_many(self, events: list[Any]) -> None:
        self.items.extend(events)
        left = len(events)
        if self.parked and self.busy < self.cap:
            with self.lock:
                left = self._wake(left)
        if left and self.room:
            self.short()

    def limit(self, cap: int) -> int:
        """Set the cap; wake workers it held back. Returns how many ready batches got none."""
        with self.lock:
            self.cap = cap
            return self._wake(self.startable())

    def idle(self) -> bool:
        with self.lock:
            return not self.items and not self.busy

    def close(self) -> None:
        """Workers finish what is queued, then ``take`` returns None to each of them."""
        with self.lock:
            self.closing = True
            for worker in self.parked:       # every one, the cap notwithstanding: they exit
                worker.park.release()
            self.parked.clear()

    def discard(self) -> int:
        """Drop every queued event (shutdown past its deadline); returns how many."""
        with self.lock:
            dropped = len(self.items)
            self.items.clear()
            return dropped

    def take(self, worker: Worker, limit: int,
             idle_timeout: float | None = None) -> list[Any] | None:
        """Settle the worker's previous batch and block until the next; None means exit, IDLE
        that nothing came for ``idle_timeout`` seconds."""
        lock = self.lock
        lock.acquire()
        if worker.held:
            self._finish(worker)
        while True:
            if self._has_work() and self.busy < self.cap:
                break
            if self.closing:
                lock.release()
                return None
            self.parked.append(worker)
            if self._has_work() and self.busy < self.cap:   # the last look, now producers see us
                self.parked.remove(worker)
                break
            lock.release()
            woken = worker.park.acquire(True, -1 if idle_timeout is None else idle_timeout)
            lock.acquire()
            if not woken:
                if worker in self.parked:
                    self.parked.remove(worker)
                    lock.release()
                    return IDLE
                worker.park.acquire()        # a producer woke us as we timed out: re-arm
        batch = self._pop(worker, limit)
        worker.held = len(batch)
        self.busy += 1
        self.batches += 1
        lock.release()
        return batch

    # overridden by KeyedQueue ---------------------------------------------------------------

    def _has_work(self) -> bool:
        return bool(self.items)

    def startable(self) -> int:
        """Batches that could start now if there were workers for them (at most)."""
        return len(self.items)

    def _finish(self, worker: Worker) -> None:
        self.stage.processed += worker.held
        worker.held = 0
        self.busy -= 1

    def _pop(self, worker: Worker, limit: int) -> list[Any]:
        items = self.items                  # producers may append meanwhile: pop, never clear
        if limit == 1 or len(items) == 1:   # (a WSGI stage takes one request at a time)
            return [items.popleft()]
        pop = items.popleft
        return [pop() for _ in range(min(len(items), limit))]


class KeyedQueue(FifoQueue):
    """Events with equal ``key(ev)`` are handled one batch at a time and in arrival order; events
    with different keys run in parallel (thesis 8.1.2, libasync-smp's colours)."""

    def __init__(self, stage: Stage, cap: int, short: Callable[[], None],
                 key: Callable[[Any], Any]) -> None:
        super().__init__(stage, cap, short)
        self.key = key
        # key -> its events; present while queued or held
        self.pending: dict[Any, deque[Any]] = {}
        self.ready: deque[Any] = deque()      # keys with events that no worker holds
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def _add(self, k: Any, ev: Any) -> bool:
        """Queue one event; True if its key became ready (a worker should be woken)."""
        q = self.pending.get(k)
        self.count += 1
        if q is None:
            self.pending[k] = deque((ev,))
            self.ready.append(k)
            return True
        q.append(ev)
        return False

    def put(self, ev: Any) -> None:
        k = self.key(ev)                      # user code: run it outside the lock
        with self.lock:
            if not self._add(k, ev) or not self._wake(1):
                return
        if self.room:
            self.short()

    def put_many(self, events: list[Any]) -> None:
        keyed = [(self.key(ev), ev) for ev in events]
        with self.lock:
            left = self._wake(sum(self._add(k, ev) for k, ev in keyed))
        if left and self.room:
            self.short()

    def idle(self) -> bool:
        with self.lock:
            return not self.count and not self.busy

    def busy_with(self, k: Any) -> bool:
        """Whether events with key ``k`` are queued or being handled (a dict lookup: safe
        without the lock for a yes/no that the caller re-checks by construction)."""
        return k in self.pending

    def discard(self) -> int:
        with self.lock:
            dropped, self.count = self.count, 0
            for q in self.pending.values():       # entries of held keys go when released
                q.clear()
            self.ready.clear()
            return dropped

    def _has_work(self) -> bool:
        return bool(self.ready)

    def startable(self) -> int:
        return len(self.ready)

    def _finish(self, worker: Worker) -> None:
        super()._finish(worker)
        k = worker.key
        if self.pending[k]:
            self.ready.append(k)              # more arrived while we held it: back of the line
        else:
            del self.pending[k]

    def _pop(self, worker: Worker, limit: int) -> list[Any]:
        k = self.ready.popleft()
        worker.key = k
        q = self.pending[k]
        n = min(len(q), limit)
        self.count -= n
        return [q.popleft() for _ in range(n)]
