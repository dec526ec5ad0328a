"""The shared event-loop thread: every non-blocking stage, plus the socket selector.

This is the *Combine* pattern done by the runtime (thesis 3.6.4; the SEDA retrospective's fix
for too many context switches). A hand-off between two stages on this thread appends to a deque
and puts the target stage in a ready line: no lock, no wake-up. Only an enqueue from another
thread while the loop sleeps in ``select`` writes a byte to the wake-up pipe; from a thread that
runs an event loop of its own (an asyncio stage's), or a pool thread whose handlers compute,
once per round of its work at most (``RoundWakeups``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable
from itertools import repeat
from typing import TYPE_CHECKING, Any, ClassVar

from ._sink import Cursor, connect, thread_cursor

if TYPE_CHECKING:
    from _typeshed import FileDescriptorLike

    from ._stage import Stage

log = logging.getLogger("seda")

# Stage batches run between two looks at the sockets: enough to amortise the select() system
# call over many hops, few enough that sockets are never starved by busy stages.
BUDGET = 64
_IN, _OUT = select.EPOLLIN, select.EPOLLOUT
# Edge-triggered readers hear of the peer's FIN too (EPOLLRDHUP): see ``_run``.
_IN_EDGE = _IN | select.EPOLLET | select.EPOLLRDHUP
_ENDED = select.EPOLLRDHUP | select.EPOLLERR | select.EPOLLHUP
_popleft = deque.popleft
_IN_ERR = _IN | select.EPOLLERR | select.EPOLLHUP
_OUT_ERR = _OUT | select.EPOLLERR | select.EPOLLHUP
# One batch in SAMPLE_EVERY of each stage (its first among them) is timed for that stage's
# service-time statistics: an unbiased sample, without two clock readings on every hop. The
# count is the stage's own: one shared by all would time some stages of a ring never.
SAMPLE_EVERY = 16
# The longest a wake-up held back by ``RoundWakeups`` waits once its thread is between steps.
DEFER_LIMIT = 0.001


class _Deferral(threading.local):
    """Per thread: where its wake-ups of sleeping loops wait, if they do (see below)."""

    defer: Callable[[EventLoop], None] | None = None


_deferral = _Deferral()


class RoundWakeups:
    """A thread's wake-ups of sleeping seda loops, held back for a round of its own work.

    An asyncio stage's thread uses it as a context manager around its loop: its wake-ups wait
    for the end of the loop's round (``call_soon(fn)`` runs ``fn`` after what is ready now). A
    pool thread whose handlers compute (a WSGI application's, see ``ThreadPool``) holds them
    while its queue has more for it (``hold``), and wakes what is due when it has none. A burst
    of answers then wakes the socket loop once, not at the first answer, when the woken thread
    (on one core) would take the CPU only to wait for the GIL this thread holds: a FastAPI
    application at 64 connections answers a third more requests, sooner.

    No wake-up waits past ``DEFER_LIMIT`` (the GIL's switch interval as Haboob sets it: what an
    answer could wait for the GIL anyway) once the thread is between two steps of its work: it
    calls ``due_by_now`` there (as each task or batch ends). Only ``EventLoop.wake`` is held
    back; ``call_soon_threadsafe``, for callers that may wait for their callback, never is."""

    def __init__(self, call_soon: Callable[[Callable[[], None]], Any] | None = None) -> None:
        self.call_soon = call_soon
        self.due: list[EventLoop] = []
        self.since = 0.0                      # when the first of ``due`` was deferred

    def __enter__(self) -> RoundWakeups:
        self.hold(True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.hold(False)
        self.wake_due()                       # what the last round left

    def hold(self, on: bool) -> None:
        """Whether this thread's wake-ups wait here from now on (the calling thread's own)."""
        _deferral.defer = self.defer if on else None

    def defer(self, loop: EventLoop) -> None:
        due = self.due
        if not due:
            self.since = time.monotonic()
            if self.call_soon is not None:
                self.call_soon(self.wake_due)
        if loop not in due:
            due.append(loop)

    def due_by_now(self, now: float) -> None:
        """Wake what has waited past DEFER_LIMIT; ``now``: ``time.monotonic()``."""
        if self.due and now - self.since > DEFER_LIMIT:
            self.wake_due()                   # (the round's own call finds nothing then)

    def wake_due(self) -> None:
        loops = self.due[:]
        self.due.clear()
        for loop in loops:
            if loop.sleeping:                 # (it may have woken for something else)
                loop.wake_now()


class LoopStage:
    """The thread manager of one non-blocking stage: its deque on the shared loop."""

    kind: ClassVar[str] = "loop"
    local: ClassVar[bool] = True
    __slots__ = ("items", "loop", "runs", "scheduled", "stage")

    def __init__(self, stage: Stage, loop: EventLoop) -> None:
        self.stage = stage
        self.loop = loop
        self.items: deque[Any] = deque()
        self.scheduled = False       # waiting in the loop's ready line
        self.runs = 0                # batches run: every SAMPLE_EVERY-th is timed, and
        #                              Runtime.stop watches the count move (progress)
        connect(stage.sink, self.put, self.put_many, self.items.__len__)

    def put(self, ev: Any) -> None:
        self.items.append(ev)
        if not self.scheduled:       # the same as _schedule(), inlined: this is the hot path
            self.scheduled = True
            loop = self.loop
            loop.ready.append(self)
            if loop.sleeping:
                loop.wake()

    def put_many(self, events: list[Any]) -> None:
        self.items.extend(events)
        if not self.scheduled:
            self._schedule()

    def _schedule(self) -> None:
        self.scheduled = True
        self.loop.ready.append(self)
        if self.loop.sleeping:
            self.loop.wake()

    def start(self) -> None:
        pass

    def resize(self, threads: int) -> None:
        if threads != 1:
            raise ValueError(f"stage {self.stage.name!r} runs on the shared event-loop thread")

    def unwrap_keys(self, unwrap: Callable[[Any], Any]) -> None:
        pass                         # one thread: arrival order is already kept

    def stop(self, deadline: float) -> bool:
        """Wait until the loop has handled everything queued here."""
        loop = self.loop
        if loop.in_loop_thread() or not loop.running():
            return not self.items
        drained = threading.Event()

        def check() -> None:
            if self.items:
                loop.call_soon(check)     # after the loop's next round of stages
            else:
                drained.set()

        loop.call_soon_threadsafe(check)
        return drained.wait(max(0.0, deadline - time.monotonic()))

    def discard(self) -> int:
        """Drop what is still queued, from any thread: the loop tolerates the clear."""
        dropped = len(self.items)
        self.items.clear()
        return dropped

    def __len__(self) -> int:
        return len(self.items)

    def thread_count(self) -> int:
        return 1

    def concurrency(self) -> int:
        return 1

    def idle(self) -> bool:
        return not self.items and not self.loop.busy

    def progress(self) -> int:
        return self.runs


class EventLoop:
    """One thread running non-blocking stages and dispatching socket readiness."""

    def __init__(self) -> None:
        self.ready: deque[LoopStage] = deque()
        self.callbacks: deque[tuple[Callable[..., Any], tuple[Any, ...]]] = deque()
        # epoll itself rather than the selectors module: its select() builds a (key, mask)
        # pair per ready socket in Python, the loop's busiest few lines.
        self._epoll = select.epoll()
        # fd -> [reader, writer] callbacks
        self._watched: dict[int, list[Callable[[], None] | None]] = {}
        self._edge: set[int] = set()   # fds whose reader is edge-triggered (add_reader)
        # called after each round of readiness callbacks that had any (see after_poll)
        self._after_poll: list[Callable[[], None]] = []
        self.sleeping = False        # blocked in select(): cross-thread work must wake it
        self.busy = False            # running anything at all; Runtime.stop watches it
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self.add_reader(self._wake_r, self._drain_wakeups)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="seda:loop", daemon=True)
        self._thread.start()

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def in_loop_thread(self) -> bool:
        return self._thread is threading.current_thread()

    def stop(self, timeout: float) -> bool:
        """Stop the thread and close the selector; False if the thread did not end in time."""
        self._stopping = True
        self.wake_now()
        if self._thread is not None and not self.in_loop_thread():
            self._thread.join(timeout)
            if self._thread.is_alive():
                return False
        self._epoll.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        return True

    # -- for other threads and for the socket layer --------------------------------------------

    def wake(self) -> None:
        """Make a sleeping ``select`` return. Safe from any thread; from one that runs a loop
        of its own, at the end of that loop's round (``RoundWakeups``)."""
        defer = _deferral.defer
        if defer is not None:
            defer(self)
            return
        self.wake_now()

    def wake_now(self) -> None:
        """``wake``, at once from any thread."""
        self.sleeping = False
        with contextlib.suppress(OSError):    # pipe full (already woken) or closed (stopped)
            os.write(self._wake_w, b"\0")

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the loop thread after the current round of stages (from a
        thread with ``RoundWakeups``, perhaps after its round: see ``wake``)."""
        self.callbacks.append((fn, args))
        if self.sleeping:
            self.wake()

    def call_soon_threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        """``call_soon``, waking a sleeping loop at once from any thread: for a caller that
        may wait for ``fn`` to have run (a deferred wake-up would wait for it in turn)."""
        self.callbacks.append((fn, args))    # (deque.append is atomic)
        if self.sleeping:
            self.wake_now()

    def after_poll(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` on the loop thread after each round of readiness callbacks: a caller
        whose callbacks only collect (a C ``append``, no Python frame per socket) hands on what
        they collected there, once per round (loop thread only)."""
        self._after_poll.append(fn)

    def add_reader(self, fileobj: FileDescriptorLike, callback: Callable[[], None], *,
                   edge: bool = False) -> None:
        """Call ``callback()`` on the loop thread whenever ``fileobj`` is readable; with
        ``edge``, only when new data arrives (EPOLLET), not in every round while data is left
        unread: the reader then reads all there is, or calls ``rearm`` when it stops short,
        and reads on to the end once the peer has finished (it is reported until then).
        Edge-triggered readers are reported in the order their data came, so a connection whose
        request came late in one round is first in the next, as with nginx: level-triggered,
        it would be put back behind those the kernel just reported, and wait a round longer.
        Selector registration belongs to the loop thread: from elsewhere use ``call_soon``."""
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        if edge:
            self._edge.add(fd)
        else:
            self._edge.discard(fd)
        self._watch(fd, 0, callback)

    def add_writer(self, fileobj: FileDescriptorLike, callback: Callable[[], None]) -> None:
        self._watch(fileobj, 1, callback)

    def remove_reader(self, fileobj: FileDescriptorLike) -> None:
        self._watch(fileobj, 0, None)

    def remove_writer(self, fileobj: FileDescriptorLike) -> None:
        self._watch(fileobj, 1, None)

    def rearm(self, fd: int) -> None:
        """The edge-triggered reader of ``fd`` stopped before the kernel had nothing more to
        give (a full buffer): look again, and report it in the next round if data is left.
        Nothing if it no longer reads (paused: resuming looks again), or while a writer is
        watched (level-triggered then: it is reported again anyway)."""
        callbacks = self._watched.get(fd)
        if callbacks is not None and callbacks[0] is not None and callbacks[1] is None:
            with contextlib.suppress(OSError):   # closed unwatched: the kernel forgot it
                self._epoll.modify(fd, self._mask(fd, callbacks))

    def unwatch(self, fileobj: FileDescriptorLike, closing: bool = False) -> None:
        """Stop calling anything for ``fileobj``: one epoll call, where removing its reader and
        then its writer takes two; none if ``closing``, for a descriptor about to be closed:
        its closing ends its watch in the kernel (once no copy of it is left: a child between
        fork and exec holds one for a moment)."""
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        self._edge.discard(fd)
        if self._watched.pop(fd, None) is not None and not closing:
            with contextlib.suppress(OSError):   # already closed: the kernel forgot it
                self._epoll.unregister(fd)

    def _watch(self, fileobj: FileDescriptorLike, slot: int,
               callback: Callable[[], None] | None) -> None:
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        callbacks = self._watched.get(fd)
        if callbacks is None:
            if callback is not None:
                callbacks = self._watched[fd] = [None, None]
                callbacks[slot] = callback
                self._epoll.register(fd, self._mask(fd, callbacks))
            return
        callbacks[slot] = callback
        if callbacks[0] or callbacks[1]:
            self._epoll.modify(fd, self._mask(fd, callbacks))
        else:
            del self._watched[fd]
            self._edge.discard(fd)
            with contextlib.suppress(OSError):   # already closed: the kernel forgot it
                self._epoll.unregister(fd)

    def _mask(self, fd: int, callbacks: list[Callable[[], None] | None]) -> int:
        """What epoll watches ``fd`` for. With a writer, level-triggered for both: the write
        path counts on being told again while the socket can take more. (Each change of mask
        makes the kernel look again, so an edge-triggered reader misses nothing across it.)"""
        reader, writer = callbacks
        if writer is None:
            return _IN_EDGE if fd in self._edge else _IN
        return (_IN | _OUT) if reader else _OUT

    def _drain_wakeups(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        ready, callbacks = self.ready, self.callbacks
        poll, watched, edge, ended = self._epoll.poll, self._watched, self._edge, _ENDED
        clock = time.perf_counter
        cursor = Cursor()
        thread_cursor.set(cursor)
        self.busy = True
        while not self._stopping:
            budget = BUDGET
            while ready and budget:
                budget -= 1
                lq = ready.popleft()
                lq.scheduled = False
                items = lq.items
                n = len(items)
                if not n:
                    continue
                stage = lq.stage
                # Pop one by one: other threads may append meanwhile, so list()+clear() could
                # lose an event. The n pops run in C (map over popleft), not a Python loop.
                try:
                    if n == 1:
                        batch = [items.popleft()]
                    else:
                        if n > stage.batch:
                            n = stage.batch
                        batch = list(map(_popleft, repeat(items, n)))
                except IndexError:          # discard() emptied it meanwhile: nothing to run
                    continue
                cursor.stage = stage
                # run_batch inlined: this is the hop between two stages on the loop.
                timed = not lq.runs % SAMPLE_EVERY
                lq.runs += 1
                if timed:
                    start = clock()
                try:
                    stage.handle_batch(batch)
                except Exception:
                    stage.failed()
                if timed:
                    stage.service_times.append((clock() - start) / n)
                stage.processed += n
                if items and not lq.scheduled:
                    lq.scheduled = True
                    ready.append(lq)
            cursor.stage = None
            for _ in range(len(callbacks)):
                fn, args = callbacks.popleft()
                self._call(fn, args)
            if ready or callbacks:
                timeout = 0
            else:
                # Announce sleep first, then look again: an enqueue from another thread either
                # lands before the look or sees ``sleeping`` and writes the wake-up byte.
                self.busy = False
                self.sleeping = True
                timeout = 0 if (ready or callbacks or self._stopping) else -1
            events = poll(timeout)
            self.sleeping = False
            self.busy = True
            for fd, mask in events:
                handlers = watched.get(fd)
                if handlers is None:                 # unwatched by an earlier callback
                    continue
                reader, writer = handlers
                try:
                    # errors and hang-ups wake the reader: its recv says what happened
                    if mask & _IN_ERR and reader is not None:
                        reader()
                        if mask & ended and fd in edge:
                            # The peer has finished (or failed) after what it sent: a read
                            # takes the data, and no new edge would tell of the end behind
                            # it. Reported again next round, it is read after the data.
                            self.rearm(fd)
                    if mask & _OUT_ERR and writer is not None and handlers[1] is writer:
                        writer()
                except Exception:
                    log.exception("event loop: callback for descriptor %d raised", fd)
            if events:
                for fn in self._after_poll:
                    self._call(fn, ())
        self.busy = False

    @staticmethod
    def _call(fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("event loop: callback %r raised", fn)
