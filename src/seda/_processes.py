"""A thread manager that runs a stage's handler in worker processes (Flash's helpers, thesis 2.1.4).

This is how a CPU-bound stage uses several cores. Each pool thread in the parent owns one child
process: it sends the child a batch of pickled events and, while the child works, serves the
child's outgoing enqueues against the real sinks, so admission control, rejections and the
stage graph behave exactly as for a thread pool. Events are pickled at enqueue time, so an
unpicklable event fails in the caller, not later in some other thread.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import operator
import pickle
import signal
import time
import traceback
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from ._queues import Worker
from ._sink import RejectedError, SinkError, StageClosedError, Transaction, connect
from ._stage import Stage, run_batch
from ._threads import ThreadPool

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.context import SpawnProcess

log = logging.getLogger("seda")
_mp = multiprocessing.get_context("spawn")   # fork is unsafe in a process that runs threads
_START_TIMEOUT = 60.0


def _dumps(obj: Any, what: str) -> bytes:
    try:
        return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise TypeError(f"{what} must be picklable to cross to a worker process: {exc}") from exc


class ProcessWorker(Worker):
    __slots__ = ("conn", "process")

    conn: Connection[Any, Any]      # to the child: batches and replies out, messages in
    process: SpawnProcess


class ProcessPool(ThreadPool):
    """``processes`` worker processes running copies of the stage's handler."""

    kind: ClassVar[str] = "processes"
    local: ClassVar[bool] = False   # the handler lives in the children: they init and destroy it

    def __init__(self, stage: Stage, processes: int,
                 key: Callable[[Any], Any] | None = None) -> None:
        self._keyed = key is not None
        super().__init__(stage, processes, operator.itemgetter(0) if self._keyed else None)
        self._handler = _dumps(stage.handler, f"the handler of stage {stage.name!r}")
        self._unclaimed: list[ProcessWorker] = []     # started by start(), not yet a thread's
        self._tokens: dict[int, Transaction] = {}
        self._token_ids = itertools.count(1)
        what = f"an event for stage {stage.name!r}"
        queue = self.queue

        if key is not None:
            def put(ev: Any) -> None:
                queue.put((key(ev), _dumps(ev, what)))
        else:
            def put(ev: Any) -> None:
                queue.put(_dumps(ev, what))

        def put_many(events: list[Any]) -> None:
            items: list[Any] = [_dumps(ev, what) for ev in events]
            if key is not None:
                items = list(zip(map(key, events), items, strict=True))
            queue.put_many(items)

        connect(stage.sink, put, put_many, queue.__len__)

    # -- processes -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start every process and wait until each has run the handler's ``init``."""
        workers = [self._launch() for _ in range(self.min_size)]
        failures = [f for f in map(self._await_ready, workers) if f]
        if failures:
            for w in workers:
                self._halt(w, time.monotonic() + 1.0)
            raise RuntimeError(f"stage {self.stage.name!r}: init failed in a worker process:\n"
                               + failures[0])
        self._unclaimed = workers
        super().start()

    def _launch(self) -> ProcessWorker:
        parent, child = _mp.Pipe()
        proc = _mp.Process(target=_child_main, daemon=True, name=f"seda:{self.stage.name}",
                           args=(child, self.stage.name, self._handler, self.stage.params))
        proc.start()
        child.close()
        worker = ProcessWorker()
        worker.process, worker.conn = proc, parent
        return worker

    def _await_ready(self, worker: ProcessWorker) -> str | None:
        """None once the child reports ready, else why it could not start. The child's
        ``init`` may look up sinks meanwhile; those calls are served here."""
        conn = worker.conn
        while True:
            if not conn.poll(_START_TIMEOUT):
                return f"no answer within {_START_TIMEOUT:.0f} s"
            try:
                msg = conn.recv()
            except EOFError:
                worker.process.join(1.0)
                return (f"the process exited with code {worker.process.exitcode} before init "
                        "(its traceback is above; a script starting process stages needs the "
                        "'if __name__ == \"__main__\":' guard)")
            if msg[0] != "call":
                return None if msg[0] == "ready" else msg[1]
            conn.send(self._serve(*msg[1:]))

    def _halt(self, worker: ProcessWorker, deadline: float) -> None:
        with contextlib.suppress(OSError):      # the child may be gone already
            worker.conn.send(None)
        worker.process.join(max(0.1, deadline - time.monotonic()))
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()

    # -- ThreadPool hooks: one process per thread ----------------------------------------------

    def new_worker(self) -> ProcessWorker:
        return self._unclaimed.pop() if self._unclaimed else self._fresh()

    # (ThreadPool hands these hooks only the workers new_worker made: ProcessWorkers)
    def end_worker(self, worker: ProcessWorker) -> None:  # type: ignore[override]  # its own
        deadline = self.deadline if self.deadline is not None else time.monotonic() + 5.0
        self._halt(worker, deadline)

    def run_batch(self, worker: ProcessWorker, batch: list[Any]) -> None:  # type: ignore[override]  # its own
        stage, conn = self.stage, worker.conn
        if self._keyed:
            batch = [data for _, data in batch]
        start = time.perf_counter()
        try:
            conn.send(batch)
            while (msg := conn.recv())[0] == "call":
                conn.send(self._serve(*msg[1:]))
        except (EOFError, OSError):
            worker.process.join(1.0)
            log.error("stage %r: worker process %d died (exit code %s) with a batch of %d "
                      "events; starting another", stage.name, worker.process.pid,
                      worker.process.exitcode, len(batch))
            stage.errors += len(batch)
            self._replace(worker)
            return
        for detail in msg[1]:
            stage.failed(detail)
        stage.service_times.append((time.perf_counter() - start) / len(batch))

    def _replace(self, worker: ProcessWorker) -> None:
        worker.conn.close()
        fresh = self._fresh()
        worker.process, worker.conn = fresh.process, fresh.conn

    def _fresh(self) -> ProcessWorker:
        """A process started after start(): for a growing pool or in place of a dead one."""
        worker = self._launch()
        problem = self._await_ready(worker)
        if problem:       # the thread goes on; its batches will fail and be counted
            log.error("stage %r: a new worker process failed to start: %s",
                      self.stage.name, problem)
        return worker

    def _serve(self, target: str, method: str, arg: Any) -> tuple[str, Any]:
        """Carry out a child's call on the parent's runtime; the reply says how it went."""
        try:
            if method == "lookup":
                self.stage.runtime.sink(target)
                return ("ok", None)
            sink = self.stage.runtime.sink(target)
            if method == "enqueue_prepare":
                token_id = next(self._token_ids)
                self._tokens[token_id] = sink.enqueue_prepare(arg)
                return ("ok", token_id)
            if method in ("enqueue_commit", "enqueue_abort"):
                return ("ok", getattr(sink, method)(self._tokens.pop(arg)))
            if method == "__len__":
                return ("ok", len(sink))
            return ("ok", getattr(sink, method)(arg))
        except RejectedError as exc:
            return ("rejected", str(exc))
        except StageClosedError as exc:
            return ("closed", str(exc))
        except KeyError as exc:
            return ("keyerror", str(exc))
        except Exception as exc:
            return ("error", f"{type(exc).__name__}: {exc}")


# -- the child side ----------------------------------------------------------------------------

_ERRORS = {"rejected": RejectedError, "closed": StageClosedError, "keyerror": KeyError,
           "error": SinkError}


class _RemoteSink:
    """A sink in a worker process: each call is carried out by the parent and answered."""

    def __init__(self, name: str, conn: Connection[Any, Any]) -> None:
        self.name = name
        self._conn = conn

    def _call(self, method: str, arg: Any = None) -> Any:
        self._conn.send(("call", self.name, method, arg))
        status, value = self._conn.recv()
        if status != "ok":
            raise _ERRORS[status](value)
        return value

    def enqueue(self, ev: Any) -> None:
        self._call("enqueue", ev)

    def enqueue_many(self, events: Iterable[Any]) -> None:
        self._call("enqueue_many", list(events))

    def enqueue_lossy(self, ev: Any) -> bool:
        accepted: bool = self._call("enqueue_lossy", ev)
        return accepted

    def enqueue_prepare(self, events: Iterable[Any]) -> int:
        token: int = self._call("enqueue_prepare", list(events))
        return token

    def enqueue_commit(self, token: int) -> None:
        self._call("enqueue_commit", token)

    def enqueue_abort(self, token: int) -> None:
        self._call("enqueue_abort", token)

    def __len__(self) -> int:
        length: int = self._call("__len__")
        return length


class _RemoteStage:
    def __init__(self, name: str, conn: Connection[Any, Any]) -> None:
        self.name = name
        self.sink = _RemoteSink(name, conn)


class _ChildRuntime:
    """The part of the runtime a handler can use from a worker process: other stages' sinks."""

    def __init__(self, conn: Connection[Any, Any]) -> None:
        self._conn = conn

    def sink(self, name: str) -> _RemoteSink:
        return self.stage(name).sink

    def stage(self, name: str) -> _RemoteStage:
        stage = _RemoteStage(name, self._conn)
        stage.sink._call("lookup")                  # KeyError now, as in the parent
        return stage

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"Runtime.{name} is not available to a handler in a worker process")


class _ChildStage(Stage):
    """Runs batches like a parent stage, but collects tracebacks to send back."""

    __slots__ = ("tracebacks",)

    tracebacks: list[str]

    def failed(self, detail: str | None = None) -> None:
        self.tracebacks.append(traceback.format_exc())


def _child_main(conn: Connection[Any, Any], name: str, handler: bytes,
                params: dict[str, Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the parent decides when we stop
    runtime = _ChildRuntime(conn)
    try:
        # stand-ins for the runtime and the sink: the parts a handler uses, served by the parent
        stage = _ChildStage(name, pickle.loads(handler), runtime, 1, params)  # type: ignore[arg-type]  # stand-in
        stage.sink = _RemoteSink(name, conn)  # type: ignore[assignment]  # stand-in
        stage.tracebacks = []
        stage.handler.init(stage.context())
    except Exception:
        conn.send(("failed", traceback.format_exc()))
        return
    conn.send(("ready",))
    try:
        while (batch := conn.recv()) is not None:
            stage.tracebacks = []
            run_batch(stage, [pickle.loads(data) for data in batch])
            conn.send(("done", stage.tracebacks))
    except (EOFError, KeyboardInterrupt):
        pass
    finally:
        stage.handler.destroy()
