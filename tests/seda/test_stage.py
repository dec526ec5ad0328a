"""Handlers: batches, per-event form, errors, single-threaded guarantee, keyed dispatch."""

from __future__ import annotations

import logging
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import seda

from tests.helpers import WAIT
from tests.helpers.recorder import Recorder


def test_handle_event_default_and_context(rt):
    seen, ready = [], threading.Event()

    class One(seda.EventHandler):
        def init(self, ctx):
            self.ctx = ctx

        def handle_event(self, ev):
            seen.append((ev, self.ctx.params["tag"], self.ctx.stage.name))
            ready.set()

    handler = One()
    stage = rt.add_stage("one", handler, params={"tag": "t"})
    rt.start()
    assert handler.ctx.runtime is rt and handler.ctx.stage is stage
    stage.sink.enqueue(1)
    assert ready.wait(WAIT)
    assert seen == [(1, "t", "one")]


def test_events_come_in_batches_of_at_most_batch(rt, recorder):
    sink = rt.add_stage("r", recorder, batch=10).sink
    sink.enqueue_many(range(95))                 # queued before start: full batches
    rt.start()
    recorder.wait(95)
    assert [len(b) for b in recorder.batches] == [10] * 9 + [5]


def test_handler_without_logic_is_refused_at_first_event(rt, caplog):
    sink = rt.add_stage("empty", seda.EventHandler()).sink
    rt.start()
    sink.enqueue(1)
    rt.stop()
    assert rt.stats()["empty"]["errors"] == 1
    assert "NotImplementedError" in caplog.text


def test_a_raising_handler_is_logged_counted_and_goes_on(rt, caplog):
    done = Recorder()

    class Flaky(seda.EventHandler):
        def init(self, ctx):
            self.out = ctx.runtime.sink("done")

        def handle_event(self, ev):
            if ev % 3 == 0:
                raise ValueError(f"bad {ev}")
            self.out.enqueue(ev)

    rt.add_stage("done", done)
    sink = rt.add_stage("flaky", Flaky()).sink
    rt.start()
    with caplog.at_level(logging.ERROR, logger="seda"):
        sink.enqueue_many(range(10))
        # per-event isolation: the good events of a batch still go through
        assert sorted(done.wait(6)) == [1, 2, 4, 5, 7, 8]
    assert rt.stats()["flaky"]["errors"] == 4
    assert "stage 'flaky': handler raised" in caplog.text
    assert "ValueError: bad 0" in caplog.text


def test_a_raising_batch_handler_does_not_kill_the_stage(rt):
    later = Recorder()

    class Batchy(seda.EventHandler):
        def init(self, ctx):
            self.out = ctx.runtime.sink("later")

        def handle_events(self, events):
            if "boom" in events:
                raise RuntimeError("boom")
            self.out.enqueue_many(events)

    rt.add_stage("later", later)
    sink = rt.add_stage("b", Batchy(), batch=1).sink
    rt.start()
    sink.enqueue_many(["boom", "ok"])
    assert later.wait(1) == ["ok"]
    assert rt.stats()["b"]["errors"] == 1


class Overlap(seda.EventHandler):
    """Counts how many threads are inside the handler at once."""

    def __init__(self, total: int) -> None:
        self.inside = 0
        self.most = 0
        self.count = 0
        self.total = total
        self.done = threading.Event()
        self.lock = threading.Lock()

    def handle_events(self, events):
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        sum(range(2000))                          # stay inside a little
        with self.lock:
            self.inside -= 1
            self.count += len(events)
            if self.count == self.total:
                self.done.set()


def test_single_threaded_decorator_and_attribute(rt):
    @seda.single_threaded
    class Decorated(Overlap):
        pass

    class Attribute(Overlap):
        single_threaded = True

    with pytest.raises(ValueError, match="single-threaded"):
        rt.add_stage("bad", Decorated(1), threads=4)
    handlers = [Decorated(4000), Attribute(4000)]
    sinks = [rt.add_stage(f"s{i}", h, batch=1).sink for i, h in enumerate(handlers)]
    rt.start()
    feeders = [threading.Thread(target=lambda s=sink: [s.enqueue(i) for i in range(1000)])
               for sink in sinks for _ in range(4)]
    for t in feeders:
        t.start()
    for t in feeders:
        t.join()
    for handler in handlers:
        assert handler.done.wait(WAIT)
        assert handler.most == 1


def test_a_pool_really_runs_threads_in_parallel(rt):
    """The contrast to the single-threaded test: without the guarantee, threads overlap."""
    barrier = threading.Barrier(3, timeout=WAIT)
    passed = []

    class Meet(seda.EventHandler):
        def handle_event(self, ev):
            barrier.wait()              # only returns once three handlers are inside at once
            passed.append(ev)

    sink = rt.add_stage("m", Meet(), threads=3, batch=1).sink
    rt.start()
    sink.enqueue_many([1, 2, 3])
    rt.stop()
    assert sorted(passed) == [1, 2, 3]


class KeyedCheck(seda.EventHandler):
    """Records per-key order and fails if two threads ever hold the same key."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active: set = set()
        self.order: dict = {}
        self.clash = False

    def handle_events(self, events):
        key = events[0][0]
        with self.lock:
            if key in self.active or any(e[0] != key for e in events):
                self.clash = True
            self.active.add(key)
        sum(range(500))
        with self.lock:
            self.order.setdefault(key, []).extend(e[1] for e in events)
            self.active.discard(key)


@settings(max_examples=25, deadline=None)
@given(keys=st.lists(st.integers(0, 5), min_size=1, max_size=300),
       batch=st.integers(1, 8), threads=st.integers(1, 4))
def test_keyed_dispatch_orders_each_key_and_never_overlaps_it(keys, batch, threads):
    handler = KeyedCheck()
    with seda.Runtime() as runtime:
        sink = runtime.add_stage("k", handler, threads=threads, batch=batch,
                                 key=lambda ev: ev[0]).sink
        for i, k in enumerate(keys):
            sink.enqueue((k, i))
    expected: dict = {}
    for i, k in enumerate(keys):
        expected.setdefault(k, []).append(i)
    assert not handler.clash
    assert handler.order == expected


def test_keyed_dispatch_runs_different_keys_in_parallel(rt):
    barrier = threading.Barrier(2, timeout=WAIT)
    met = []

    class Meet(seda.EventHandler):
        def handle_event(self, ev):
            barrier.wait()
            met.append(ev)

    sink = rt.add_stage("m", Meet(), threads=2, key=lambda ev: ev).sink
    rt.start()
    sink.enqueue_many(["a", "b"])
    rt.stop()
    assert sorted(met) == ["a", "b"]
