"""A cluster stage on one or two runtimes of this process: handled at least once, acknowledged
after the handler, taken over from a consumer that died, retried, dead-lettered."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

import seda
from seda.cluster import Codec, EncodeError, RedisQueue, Unavailable, deliveries, delivery

from tests.helpers.net import until


@dataclasses.dataclass
class Job:
    n: int
    body: bytes = b""


class Record(seda.EventHandler):
    """Per-event handler: what it saw, with each event's delivery."""

    def __init__(self, fail=lambda ev, attempt: False):
        self.seen: list[tuple] = []
        self.fail = fail
        self.lock = threading.Lock()

    def handle_event(self, ev):
        d = delivery()
        with self.lock:
            self.seen.append((ev, d))
        if self.fail(ev, d.attempt):
            raise ValueError(f"failing {ev!r}")


def stage(rt, url, handler, name="work", **options):
    queue_options = {k: options.pop(k) for k in list(options)
                     if k in ("claim_idle", "max_deliveries", "partitions", "stream", "codec")}
    queue_options.setdefault("codec", Codec(Job))
    return rt.add_stage(name, handler, queue=RedisQueue(url, **queue_options), **options)


def test_events_are_handled_once_and_acknowledged(redis_url, client):
    handler = Record()
    with seda.Runtime() as rt:
        stage(rt, redis_url, handler, threads=2, batch=8)
        rt.sink("work").enqueue_many(Job(i) for i in range(50))
        until(lambda: len(handler.seen), lambda n: n >= 50)
        stats = until(lambda: rt.stats()["work"], lambda s: s["cluster"]["backlog"] == 0)
    assert sorted(ev.n for ev, _ in handler.seen) == list(range(50))
    assert {d.attempt for _, d in handler.seen} == {1}
    assert len({d.key for _, d in handler.seen}) == 50
    assert stats["manager"] == "cluster" and stats["processed"] == 50
    assert stats["cluster"]["pending"] == 0 and stats["cluster"]["consumers"] == 1
    assert client.xlen("seda:work") == 0            # acknowledged and deleted


def test_events_enqueued_before_any_consumer_are_delivered(redis_url):
    handler = Record()
    rt = seda.Runtime()
    stage(rt, redis_url, handler)
    rt.sink("work").enqueue(Job(1))                  # before start: straight into Redis
    with rt:
        until(lambda: len(handler.seen), lambda n: n == 1)


def test_stop_drains_the_stream(redis_url):
    handler = Record()
    with seda.Runtime() as rt:
        stage(rt, redis_url, handler, batch=4)
        rt.sink("work").enqueue_many(Job(i) for i in range(40))
    assert len(handler.seen) == 40


def test_a_batch_handler_sees_the_deliveries_of_its_batch(redis_url):
    got = []

    class Batch(seda.EventHandler):
        def handle_events(self, events):
            got.append((list(events), deliveries()))
            with pytest.raises(LookupError, match="deliveries"):
                delivery()

    with seda.Runtime() as rt:
        stage(rt, redis_url, Batch(), batch=16)
        rt.sink("work").enqueue_many(Job(i) for i in range(20))
        until(lambda: sum(len(e) for e, _ in got), lambda n: n == 20)
    for events, ds in got:
        assert len(events) == len(ds) and all(d.stream == "seda:work" for d in ds)
    with pytest.raises(LookupError):
        deliveries()                                 # outside a handler


def test_an_event_that_cannot_be_encoded_fails_in_the_caller(redis_url):
    with seda.Runtime() as rt:
        stage(rt, redis_url, Record())
        with pytest.raises(EncodeError, match=r"codec\.register"):
            rt.sink("work").enqueue(object())
        with pytest.raises(EncodeError):
            rt.sink("work").enqueue_many([Job(1), object()])
        assert len(rt.sink("work")) == 0             # all or nothing


def test_redis_out_of_reach_is_a_rejection_at_enqueue():
    rt = seda.Runtime()
    stage(rt, "redis://127.0.0.1:1/0", Record())
    with pytest.raises(Unavailable, match="unavailable") as caught:
        rt.sink("work").enqueue(Job(1))
    assert isinstance(caught.value, seda.RejectedError)
    with pytest.raises(RuntimeError, match="cannot reach Redis"):
        rt.start()


def test_a_failed_event_is_retried_then_succeeds(redis_url, client):
    handler = Record(fail=lambda ev, attempt: ev.n == 3 and attempt == 1)
    with seda.Runtime() as rt:
        stage(rt, redis_url, handler, claim_idle=0.2)
        rt.sink("work").enqueue_many(Job(i) for i in range(5))
        until(lambda: [d.attempt for ev, d in handler.seen if ev.n == 3], lambda a: a == [1, 2])
        stats = until(lambda: rt.stats()["work"], lambda s: s["cluster"]["backlog"] == 0)
    assert stats["errors"] == 1 and stats["cluster"]["redelivered"] == 1
    assert stats["cluster"]["dead_letters"] == 0
    assert client.hlen("seda:work:errors") == 0     # the error of a retried event is forgotten


def test_a_poison_event_goes_to_the_dead_letters_with_its_error(redis_url, client):
    handler = Record(fail=lambda ev, attempt: ev.n == 3)
    codec = Codec(Job)
    with seda.Runtime() as rt:
        stage(rt, redis_url, handler, claim_idle=0.1, max_deliveries=3, codec=codec)
        rt.sink("work").enqueue_many(Job(i, b"payload") for i in range(5))
        until(lambda: rt.stats()["work"]["cluster"]["dead_letters"], lambda n: n == 1)
    assert [d.attempt for ev, d in handler.seen if ev.n == 3] == [1, 2, 3]   # never more
    [(_, dead)] = client.xrange("seda:work:dead")
    assert dead[b"stream"] == b"seda:work" and dead[b"attempts"] == b"3"
    assert b"ValueError: failing Job(n=3" in dead[b"error"]
    assert codec.decode(dead[b"d"]) == Job(3, b"payload")
    assert client.xlen("seda:work") == 0 and client.hlen("seda:work:errors") == 0


def test_an_entry_that_cannot_be_decoded_is_dead_lettered(redis_url, client):
    handler = Record()
    with seda.Runtime() as rt:
        stage(rt, redis_url, handler)
        client.xadd("seda:work", {b"d": b"\xc1"})
        client.xadd("seda:work", {b"d": Codec().encode({"unregistered": True})})
        until(lambda: rt.stats()["work"]["cluster"]["dead_letters"], lambda n: n == 1)
        until(lambda: handler.seen, lambda s: len(s) == 1)
    [(_, dead)] = client.xrange("seda:work:dead")
    assert dead[b"error"].startswith(b"DecodeError")


def test_a_dead_consumers_entries_are_taken_over(redis_url, client):
    """A consumer that read entries and never acknowledged them (a node that died): after
    claim_idle they are handled here, as second deliveries."""
    client.xgroup_create("seda:work", "work", "0", mkstream=True)
    codec = Codec(Job)
    for i in range(3):
        client.xadd("seda:work", {b"d": codec.encode(Job(i))})
    taken = client.xreadgroup("work", "dead-node", {"seda:work": ">"}, count=10)
    assert len(taken[0][1]) == 3
    handler = Record()
    with seda.Runtime() as rt:
        stage(rt, redis_url, handler, claim_idle=0.3)
        until(lambda: len(handler.seen), lambda n: n == 3)
    assert sorted((ev.n, d.attempt) for ev, d in handler.seen) == [(0, 2), (1, 2), (2, 2)]
    assert client.xpending("seda:work", "work")["pending"] == 0


def test_a_slow_handler_keeps_its_batch_past_claim_idle(redis_url):
    """The keeper resets the idle time of batches in hand: a second node does not take over a
    batch whose handler is merely slow."""
    release = threading.Event()
    slow = Record(fail=lambda ev, attempt: not release.wait(10))
    other = Record()
    with seda.Runtime() as a, seda.Runtime() as b:
        stage(a, redis_url, slow, claim_idle=0.2)
        rt_b = stage(b, redis_url, other, claim_idle=0.2)
        a.sink("work").enqueue(Job(1))
        until(lambda: len(slow.seen) + len(other.seen), lambda n: n == 1)
        holder = slow if slow.seen else other
        t0 = time.monotonic()
        until(lambda: time.monotonic() - t0, lambda t: t > 0.8)     # four claim_idles
        release.set()
        until(lambda: rt_b.runtime.stats()["work"]["cluster"]["backlog"], lambda n: n == 0)
    assert len(slow.seen) + len(other.seen) == 1, holder.seen
