"""A node of a cluster stage in a process of its own, for the tests that kill one: it consumes
stream STREAM of the Redis at URL with THREADS threads and writes what it handles to an
idempotent sink in the same Redis (a hash from each delivery's key to the event), counting
every call, first or repeated. While the key ``pause`` exists, each batch waits before it is
handled, holding its entries (so a test can kill a node that surely has some in hand). It
prints "ready" once consuming and stops cleanly on SIGTERM.

    python -m tests.helpers.cluster_node URL STREAM THREADS CLAIM_IDLE
"""

from __future__ import annotations

import sys
import time

import redis

import seda
from benchmarks.cluster_hop import run_node
from seda.cluster import RedisQueue, deliveries


class IdempotentSink(seda.EventHandler):
    """Each event ``n`` goes to the hash ``sink`` under its delivery key, only if absent (so a
    redelivered event is seen once); ``handled`` gets bit ``n`` set (every event handled at
    least once); ``calls`` counts handler calls per event, redeliveries included."""

    def __init__(self, url: str) -> None:
        self.url = url

    def init(self, ctx):
        self.client = redis.Redis.from_url(self.url)

    def handle_events(self, events):
        while self.client.exists("pause"):
            time.sleep(0.01)
        pipe = self.client.pipeline(transaction=False)
        for n, d in zip(events, deliveries(), strict=True):
            pipe.hsetnx("sink", d.key, n)
            pipe.setbit("handled", n, 1)
        pipe.incrby("calls", len(events))
        pipe.execute()

    def destroy(self):
        self.client.close()


def main(argv: list[str]) -> None:
    url, stream, threads, claim_idle = argv[0], argv[1], int(argv[2]), float(argv[3])
    run_node("node", IdempotentSink(url),
             RedisQueue(url, stream=stream, group="nodes", claim_idle=claim_idle), threads)


if __name__ == "__main__":
    main(sys.argv[1:])
