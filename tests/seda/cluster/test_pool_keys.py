"""key= on a cluster stage: equal keys are handled one at a time and in order, across the
threads of two nodes, a failure retried before the events behind it."""

from __future__ import annotations

import random
import threading
import time

import seda
from seda.cluster import RedisQueue, delivery

from tests.helpers.net import until

KEYS = [f"user{i}" for i in range(6)]


class Ordered(seda.EventHandler):
    """Shared by both nodes: records each key's sequence numbers as handled, and whether two
    events of one key were ever in hand at once."""

    def __init__(self, log, lock, busy, overlaps):
        self.log, self.lock, self.busy, self.overlaps = log, lock, busy, overlaps

    def handle_event(self, ev):
        key, seq = ev["key"], ev["seq"]
        with self.lock:
            if key in self.busy:
                self.overlaps.append(ev)
            self.busy.add(key)
        try:
            time.sleep(random.random() * 0.0005)        # work of uneven length
            if key == "user0" and seq == 5 and delivery().attempt == 1:
                raise ValueError("first try of user0/5 fails")
            with self.lock:
                self.log.append((key, seq))
        finally:
            with self.lock:
                self.busy.discard(key)


def test_equal_keys_stay_in_order_across_nodes(redis_url):
    log, lock, busy, overlaps = [], threading.Lock(), set(), []
    total = 300
    runtimes = [seda.Runtime(), seda.Runtime()]
    for rt in runtimes:
        rt.add_stage("orders", Ordered(log, lock, busy, overlaps), threads=2, batch=8,
                     key=lambda ev: ev["key"],
                     queue=RedisQueue(redis_url, partitions=4, claim_idle=1.0))
        rt.start()
    try:
        sink = runtimes[0].sink("orders")
        for seq in range(total // len(KEYS)):
            for key in KEYS:
                (sink if seq % 2 else runtimes[1].sink("orders")).enqueue(
                    {"key": key, "seq": seq})
        until(lambda: len(log), lambda n: n >= total)
        processed = sum(rt.stats()["orders"]["processed"] for rt in runtimes)
    finally:
        for rt in runtimes:
            rt.stop()
    assert not overlaps
    for key in KEYS:
        assert [s for k, s in log if k == key] == list(range(total // len(KEYS))), key
    assert processed == total                           # a retry is not a second event


def test_a_poison_event_of_a_key_is_dead_lettered_and_the_key_goes_on(redis_url, client):
    handled = []

    class Poisoned(seda.EventHandler):
        def handle_event(self, ev):
            if ev == ["k", 1]:
                raise ValueError("poison")
            handled.append((ev, delivery().attempt))

    with seda.Runtime() as rt:
        rt.add_stage("s", Poisoned(), key=lambda ev: ev[0],
                     queue=RedisQueue(redis_url, partitions=2, max_deliveries=3))
        rt.sink("s").enqueue_many([["k", 0], ["k", 1], ["k", 2]])
        until(lambda: handled, lambda h: len(h) == 2)
        stats = until(lambda: rt.stats()["s"], lambda s: s["cluster"]["dead_letters"] == 1)
    assert handled == [(["k", 0], 1), (["k", 2], 1)]
    assert stats["errors"] == 3 and stats["cluster"]["redelivered"] == 2
    [(_, dead)] = client.xrange("seda:s:dead")
    assert dead[b"attempts"] == b"3" and b"ValueError: poison" in dead[b"error"]
