"""Mail delivery shared by several Arashi nodes (``serve --redis URL``): a message, once its
SMTP client has been told 250, is an ``Accepted`` event in a cluster stage on Redis Streams
(``seda.cluster``), stored in PostgreSQL by whichever node takes it. A node killed after its
250 loses nothing: another node stores the message after ``claim_idle``. Delivery is at least
once, so the store is keyed on the delivery's idempotency key (``MailStore.deliver(key=)``)
and a message delivered twice is stored once.

    arashi.delivery --Accepted (XADD, then 250)--> arashi.store (every node's threads)
"""

from __future__ import annotations

import logging
from typing import Any

import seda
from seda.control import QueueThreshold

from .events import STORE, STORE_TYPES, Accepted
from .store import MailStore

log = logging.getLogger("arashi")


class Store(seda.EventHandler):
    """Stores each accepted message for its users, once per delivery key. A database that
    fails raises: the message stays in the stream and is delivered again (to the dead letters
    after ``max_deliveries``)."""

    def __init__(self, store: MailStore) -> None:
        self.store = store
        self.stored = self.duplicates = 0

    def handle_event(self, ev: Accepted) -> None:
        from seda.cluster import delivery

        if self.store.deliver(ev.users, ev.raw, ev.sender, key=delivery().key):
            self.stored += 1
        else:
            self.duplicates += 1          # stored by an earlier delivery that was not acked

    def stats(self) -> dict[str, Any]:
        """Messages ``stored``, and deliveries found stored already (``duplicates``)."""
        return {"stored": self.stored, "duplicates": self.duplicates}


def add_store_stage(rt: seda.Runtime, store: MailStore, url: str, threads: int,
                    backlog: int, claim_idle: float) -> seda.Stage:
    """The cluster stage STORE on the Redis at ``url``; admission refuses (SMTP 451) once
    ``backlog`` messages wait, all nodes together."""
    try:
        from seda.cluster import Codec, RedisQueue
    except ImportError as exc:
        raise RuntimeError(f"--redis needs the cluster extra (pip install pyseda[cluster]): "
                           f"{exc}") from None
    queue = RedisQueue(url, stream="arashi:store", group="arashi", codec=Codec(*STORE_TYPES),
                       claim_idle=claim_idle)
    return rt.add_stage(STORE, Store(store), threads=threads, batch=8, queue=queue,
                        predicate=QueueThreshold(backlog))
