"""ResponseTimeBound: a queue bound from Little's law, tuned by the measured p90, per class, step
by step."""

from __future__ import annotations

import pytest

from seda.control import ResponseTimeBound

from tests.helpers.fakes import FakeStage


def test_response_time_bound_sizes_the_queue_by_littles_law_and_tunes_it_by_p90():
    stage = FakeStage()
    stage.manager.size = 2
    rb = ResponseTimeBound(0.1, nreq=10)
    rb.attach(stage)
    assert stage.observers == [rb.observe] and rb.accept(None)    # nothing measured yet
    rb.tick(0.0)
    # two threads, 10 ms of service each: 200 events/s; waits 40 ms, p90 50 ms (under target)
    rb.observe(list(range(10)), [0.04] * 10, [0.05] * 10)
    rb.tick(0.01)
    assert rb.capacity == pytest.approx(200) and rb.classes[0].bound == pytest.approx(20)
    stage.queue = 19
    assert rb.accept(None)
    stage.queue = 20
    assert not rb.accept(None) and rb.rejected == 1
    rb.observe(list(range(10)), [0.19] * 10, [0.2] * 10)          # p90 200 ms: cur 95 ms
    rb.tick(0.02)
    assert rb.classes[0].share == 1.0                             # err -0.05: in the dead band
    rb.observe(list(range(10)), [0.19] * 10, [0.2] * 10)          # cur 126.5 ms: over target
    rb.tick(0.03)
    assert rb.classes[0].share == pytest.approx(1 / 1.2)
    assert rb.classes[0].bound == pytest.approx(200 * 0.1 / 1.2)
    stage.queue = 0
    for t in range(4, 8):                                         # idle rounds: samples of 0
        rb.tick(t * 1.0)
    assert rb.classes[0].share == 1.0                             # recovered, never above 1


def test_response_time_bound_cuts_lower_classes_before_the_one_missing_its_target():
    stage = FakeStage()
    rb = ResponseTimeBound(classify=lambda ev: ev, targets={0: 0.1, 1: 0.1}, nreq=1, alpha=0)
    rb.attach(stage)
    rb.tick(0.0)
    rb.observe([1, 0], [0.0, 0.0], [0.3, 0.01])                   # the high class is late
    rb.tick(0.01)
    assert rb.classes[0].share == pytest.approx(0.1) and rb.classes[1].share == 1.0
    assert rb.accept(7) is True                                   # unknown: lowest class
    rb.observe([1], [0.0], [0.3])
    rb.tick(0.02)
    assert rb.classes[0].share == rb.share_min                    # the low class first
    rb.observe([1], [0.0], [0.3])
    rb.tick(0.03)
    assert rb.classes[1].share == pytest.approx(1 / 1.2)          # then its own
    assert rb.state()["shares"] == {"0": rb.share_min, "1": pytest.approx(1 / 1.2)}


def test_response_time_bound_rejects_bad_parameters():
    with pytest.raises(ValueError):
        ResponseTimeBound()
    with pytest.raises(ValueError):
        ResponseTimeBound(targets={0: 0.1})
    with pytest.raises(ValueError):
        ResponseTimeBound(-1.0)


def test_a_stage_slower_than_its_target_still_lets_one_wait():
    stage = FakeStage()
    rb = ResponseTimeBound(0.1, nreq=1)
    rb.attach(stage)
    rb.tick(0.0)
    rb.observe([1], [0.0], [1.0])                     # one thread, 1 s each: 1 event/s
    rb.tick(0.01)
    assert rb.capacity == pytest.approx(1) and rb.state()["bound"] == 1
    assert rb.accept(None)
    stage.queue = 1
    assert not rb.accept(None)


def test_a_cold_stage_admits_what_it_serves_at_once_until_its_first_events_are_served():
    stage = FakeStage()
    stage.manager.size = 2
    rb = ResponseTimeBound(0.1)                       # a round needs 100 samples or 1 s
    rb.attach(stage)
    rb.tick(0.0)
    stage.queue = 1
    assert rb.accept(None)
    stage.queue = 2                                   # a crowd at a cold stage: two run, no more
    assert not rb.accept(None) and rb.capacity is None
    rb.observe([1], [0.0], [0.01])                    # the first event served, 10 ms
    rb.tick(0.001)                                    # mid-round: the capacity is sized at once
    assert rb.capacity == pytest.approx(200) and rb.state()["bound"] == pytest.approx(20)
    assert rb.accept(None)
