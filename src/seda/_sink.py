"""The enqueue end of a stage's queue: admission, transactional enqueue, and the errors they raise.

Only the enqueue side is ever exposed (thesis 5.2.2); dequeueing belongs to the thread manager that
runs the stage, which plugs its own ``put``/``put_many``/``length`` functions into the sink.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ._abc import Controller

if TYPE_CHECKING:
    from ._stage import Stage


class SinkError(Exception):
    """An enqueue did not happen."""


class RejectedError(SinkError):
    """The queue's admission predicate said no: the stage is overloaded (thesis 3.3)."""


class StageClosedError(SinkError):
    """The stage has been destroyed; nothing can be enqueued to it any more."""


class Cursor:
    """Which stage's handler a runtime thread is running: the source end of stage-graph edges."""

    __slots__ = ("stage",)

    def __init__(self, stage: Stage | None = None) -> None:
        self.stage = stage


#: Each runtime thread sets this once to a cursor of its own and then only moves ``cursor.stage``
#: (an attribute store; ``ContextVar.set`` allocates). A context variable rather than a
#: ``threading.local`` because every enqueue reads it, and ``get()`` is three times cheaper.
#: Threads outside the runtime see the shared default, whose stage is always None.
thread_cursor: ContextVar[Cursor] = ContextVar(
    "seda_thread_cursor", default=Cursor()  # noqa: B039 -- never mutated: only its .stage is read
)
_cursor = thread_cursor.get


def _closed(name: str) -> Callable[..., Any]:
    def refuse(*_: Any) -> bool:
        raise StageClosedError(f"stage {name!r} has been destroyed")

    return refuse


class Transaction:
    """A prepared batch: admitted and holding its place, invisible to the handler until commit."""

    __slots__ = ("events", "sink", "state")

    def __init__(self, sink: Sink, events: list[Any]) -> None:
        self.sink = sink
        self.events = events
        self.state = "prepared"

    def __repr__(self) -> str:
        return f"<Transaction {self.state} {len(self.events)} events for {self.sink.name!r}>"


class Sink:
    """Enqueue end of one stage's queue. Every method is safe to call from any thread."""

    __slots__ = (
        "_accept",
        "_lock",
        "_predicate",
        "_put",
        "_put_many",
        "closed",
        "edges",
        "length",
        "name",
        "rejected",
        "reserved",
        "stage",
    )

    def __init__(self, name: str, stage: Stage | None = None) -> None:
        self.name = name
        self.stage = stage
        self.rejected = 0
        self.reserved = 0            # events held by prepared, uncommitted transactions
        # source stage (None: not a stage) -> events it enqueued here (thesis 5.3.5)
        self.edges: defaultdict[Stage | None, int] = defaultdict(int)
        self.closed = False
        self._accept: Callable[[Any], bool] | None = None
        self._predicate: Any = None
        self._put: Callable[[Any], None] = _closed(name)
        self._put_many: Callable[[list[Any]], None] = _closed(name)
        #: ``len(sink)`` without the dispatch: what controllers call on every tick
        self.length: Callable[[], int] = lambda: 0
        self._lock = threading.Lock()

    # -- admission -----------------------------------------------------------------------------

    @property
    def predicate(self) -> Any:
        """``None``, a callable ``ev -> bool`` or an object with ``accept(ev) -> bool``."""
        return self._predicate

    @predicate.setter
    def predicate(self, predicate: Any) -> None:
        if predicate is None:
            accept = None
        elif callable(getattr(predicate, "accept", None)):
            accept = predicate.accept
        elif callable(predicate):
            accept = predicate
        else:
            raise TypeError(f"a predicate is None, a callable or has accept(ev); got {predicate!r}")
        if self.closed:
            raise StageClosedError(f"stage {self.name!r} has been destroyed")
        old = self._predicate
        if old is not None and old is not predicate and hasattr(old, "detach"):
            old.detach()
        if self.stage is not None:
            attach = getattr(predicate, "attach", None)
            if attach is not None:
                attach(self.stage)
            runtime = self.stage.runtime
            if isinstance(old, Controller):
                runtime.remove_controller(old)
            if isinstance(predicate, Controller):
                runtime.add_controller(predicate)
        self._predicate = predicate
        self._accept = accept

    def _reject(self, count: int) -> RejectedError:
        self.rejected += count
        return RejectedError(f"stage {self.name!r} rejected {count} event(s)")

    def _admit_all(self, events: list[Any]) -> None:
        accept = self._accept
        if accept is not None:
            for ev in events:
                if not accept(ev):
                    raise self._reject(len(events))

    def _record(self, count: int) -> None:
        self.edges[_cursor().stage] += count

    # -- enqueue -------------------------------------------------------------------------------

    def enqueue(self, ev: Any) -> None:
        """Accept ``ev`` or raise :class:`RejectedError` / :class:`StageClosedError`."""
        accept = self._accept
        if accept is not None and not accept(ev):
            raise self._reject(1)
        self._put(ev)
        self.edges[_cursor().stage] += 1

    def enqueue_many(self, events: Iterable[Any]) -> None:
        """Enqueue all of ``events`` or none of them."""
        events = list(events)
        if events:
            self._admit_all(events)
            self._put_many(events)
            self._record(len(events))

    def enqueue_lossy(self, ev: Any) -> bool:
        """Enqueue ``ev`` if admitted; False when it was dropped (rejected or stage destroyed)."""
        try:
            self.enqueue(ev)
        except SinkError:
            return False
        return True

    def __len__(self) -> int:
        return self.length()

    # -- transactional enqueue (thesis Fig. 26-27) ---------------------------------------------

    def enqueue_prepare(self, events: Iterable[Any]) -> Transaction:
        """Decide admission for ``events`` now and reserve their place; commit or abort later."""
        events = list(events)
        self._admit_all(events)
        with self._lock:
            self.reserved += len(events)
        return Transaction(self, events)

    def _settle(self, token: Transaction, state: str) -> list[Any]:
        if not isinstance(token, Transaction) or token.sink is not self:
            raise ValueError(f"{token!r} was not prepared by sink {self.name!r}")
        with self._lock:
            if token.state != "prepared":
                raise ValueError(f"{token!r} is already settled")
            token.state = state
            self.reserved -= len(token.events)
        return token.events

    def enqueue_commit(self, token: Transaction) -> None:
        """Make a prepared batch visible to the handler; StageClosedError if the stage is gone."""
        events = self._settle(token, "committed")
        if events:
            self._put_many(events)
            self._record(len(events))

    def enqueue_abort(self, token: Transaction) -> None:
        """Give back the place a prepared batch held."""
        self._settle(token, "aborted")

    def __repr__(self) -> str:
        return f"<Sink {self.name!r} queue={len(self)}>"


# -- for the runtime and its thread managers, not for handlers ------------------------------------

def connect(sink: Sink, put: Callable[[Any], None], put_many: Callable[[list[Any]], None],
            length: Callable[[], int]) -> None:
    """Plug the queue of the thread manager that drains ``sink``'s stage into it (or, for an
    observed stage, wrappers around that queue's functions)."""
    sink._put, sink._put_many, sink.length = put, put_many, length


def queue_of(sink: Sink) -> tuple[Callable[[Any], None], Callable[[list[Any]], None]]:
    """The put functions ``connect`` plugged in, to wrap them."""
    return sink._put, sink._put_many


def close(sink: Sink) -> None:
    """Refuse every enqueue from now on; events already queued still drain."""
    sink.closed = True
    refuse = _closed(sink.name)
    sink._accept = sink._put = sink._put_many = refuse
