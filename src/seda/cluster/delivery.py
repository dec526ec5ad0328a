"""Which stream entries a cluster stage's handler is handling: its idempotency keys.

Delivery is at least once (a node that dies mid-batch has its batch handled again elsewhere), so
a handler with effects outside Redis makes them idempotent with the entry's key: a unique
constraint on it, or "insert if absent". The handler keeps its plain signature; it asks here.
"""

from __future__ import annotations

import threading
from typing import NamedTuple


class Delivery(NamedTuple):
    """One stream entry as handed to a handler."""

    stream: str         #: the Redis stream (a partition's, with ``key=``)
    id: str             #: the entry id, unique within its stream
    attempt: int        #: 1 on first delivery; more after a failure or a dead node

    @property
    def key(self) -> str:
        """Unique across the stage's streams: the idempotency key."""
        return f"{self.stream}/{self.id}"


class _Current(threading.local):
    batch: list[Delivery] | None = None     # the batch in hand on this thread
    event: Delivery | None = None           # per-event handlers: the event in hand


current = _Current()


def deliveries() -> list[Delivery]:
    """The deliveries of the batch the calling handler is handling, in the order of its events
    (``handle_events(events)``: ``deliveries()[i]`` is ``events[i]``'s)."""
    if current.batch is None:
        raise LookupError("not in the handler of a cluster stage")
    return list(current.batch)


def delivery() -> Delivery:
    """In ``handle_event(ev)`` of a cluster stage: ``ev``'s delivery."""
    if current.event is None:
        raise LookupError("not in handle_event of a cluster stage (a handler of whole batches "
                          "asks deliveries())")
    return current.event
