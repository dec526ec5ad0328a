"""Stages whose handler runs in worker processes."""

from __future__ import annotations

import logging
import os

import pytest

from tests.helpers.recorder import Recorder
from tests.helpers.workers import BadInit, Square


def test_events_run_in_other_processes_and_come_back(rt, recorder):
    rt.add_stage("collect", recorder)
    rt.add_stage("square", Square(), processes=2, batch=4)
    rt.start()
    rt.sink("square").enqueue_many(range(200))
    got = recorder.wait(200)
    assert sorted((n, sq) for n, sq, _ in got) == [(n, n * n) for n in range(200)]
    pids = {pid for *_, pid in got}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2
    assert rt.stats()["square"]["threads"] == 2
    assert rt.stats()["square"]["manager"] == "processes"
    assert rt.stage_graph() == [("square", "collect", 200)]


def test_unpicklable_event_fails_at_enqueue(rt, recorder):
    rt.add_stage("collect", recorder)
    sink = rt.add_stage("square", Square(), processes=1).sink
    with pytest.raises(TypeError, match=r"stage 'square'.*picklable"):
        sink.enqueue(lambda: 1)
    assert len(sink) == 0


def test_parent_rejection_reaches_the_child(rt):
    collect, overflow = Recorder(), Recorder()
    rt.add_stage("collect", collect, predicate=lambda ev: ev[0] % 2 == 0)
    rt.add_stage("overflow", overflow)
    rt.add_stage("square", Square(), processes=1, params={"overflow": True})
    rt.start()
    rt.sink("square").enqueue_many(range(10))
    assert sorted(overflow.wait(5)) == [1, 3, 5, 7, 9]
    assert sorted(n for n, *_ in collect.wait(5)) == [0, 2, 4, 6, 8]


def test_errors_and_crashes_are_counted_and_the_pool_recovers(rt, recorder, caplog):
    rt.add_stage("collect", recorder)
    sink = rt.add_stage("square", Square(), processes=1, batch=1).sink
    rt.start()
    with caplog.at_level(logging.ERROR, logger="seda"):
        sink.enqueue_many(["raise", 2, "crash", 3])
        assert sorted(n for n, *_ in recorder.wait(2)) == [2, 3]
    assert rt.stats()["square"]["errors"] == 2
    assert "ValueError: asked to raise" in caplog.text
    assert "died" in caplog.text


def test_init_failure_in_a_worker_is_reported_at_start(rt):
    rt.add_stage("bad", BadInit(), processes=1)
    with pytest.raises(RuntimeError, match=r"(?s)'bad'.*no-such-stage"):
        rt.start()


def test_keyed_process_stage_keeps_per_key_order(rt, recorder):
    rt.add_stage("collect", recorder)
    rt.add_stage("square", Square(), processes=2, batch=3, key=lambda n: n % 3)
    rt.start()
    rt.sink("square").enqueue_many(range(60))
    got = [n for n, *_ in recorder.wait(60)]
    for k in range(3):
        assert [n for n in got if n % 3 == k] == list(range(k, 60, 3))
