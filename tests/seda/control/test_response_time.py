"""Admission predicates and the response-time controllers (thesis 7.2), step by step."""

from __future__ import annotations

import math
import random

import pytest

from seda.control import (
    RED,
    AdaptiveConcurrency,
    Degrader,
    MulticlassResponseTimeController,
    QueueDelay,
    ResponseTimeBound,
    ResponseTimeController,
    TokenBucket,
)
from seda.control.response_time import p90

from tests.helpers.fakes import FakeClock, FakeStage


def test_token_bucket_rate_and_depth():
    clock = FakeClock()
    bucket = TokenBucket(rate=10, depth=2, clock=clock)
    assert [bucket.accept() for _ in range(3)] == [True, True, False]
    clock.now = 0.1                      # one token earned
    assert [bucket.accept(), bucket.accept()] == [True, False]
    clock.now = 10.0                     # never more than depth
    assert [bucket.accept() for _ in range(3)] == [True, True, False]
    bucket.set_rate(0)
    clock.now = 20.0
    assert not bucket.accept()


def test_p90_is_the_ninetieth_sample():
    assert p90([float(i) for i in range(100, 0, -1)]) == 90.0
    assert p90([5.0]) == 5.0


def feed(ctl, value, n=100):
    for _ in range(n):
        ctl.report(value)


def test_response_time_controller_follows_figure_50():
    clock = FakeClock()
    ctl = ResponseTimeController(target=1.0, measure=False, clock=clock)
    ctl.attach(FakeStage())
    ctl.tick(0.0)
    seen = []
    for t, samp in enumerate([2.0, 2.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], start=1):
        feed(ctl, samp)
        ctl.tick(t * 0.01)                       # nreq samples: runs before the timeout
        seen.append((ctl.p90, ctl.rate))
    expected = [(2.0, 4166.666667), (2.0, 3472.222222), (1.43, 2893.518519),
                (1.031, 2411.265432), (0.7517, 2411.265432), (0.55619, 2411.265432),
                (0.419333, 2412.226766), (0.323533, 2413.3797)]
    assert seen == [pytest.approx(e, rel=1e-6) for e in expected]


def test_response_time_controller_waits_for_nreq_or_timeout_and_treats_idle_as_fast():
    stage = FakeStage()
    ctl = ResponseTimeController(target=1.0, nreq=100, timeout=1.0, measure=False)
    ctl.attach(stage)
    ctl.tick(0.0)
    feed(ctl, 5.0, n=10)
    ctl.tick(0.5)
    assert ctl.p90 is None                       # 10 samples, timeout not reached
    ctl.tick(1.0)
    assert ctl.p90 == 5.0 and ctl.rate == pytest.approx(5000 / 1.2)
    stage.queue = 3
    ctl.tick(2.0)                                # no samples, events waiting: no information
    assert ctl.p90 == 5.0
    stage.queue = 0
    ctl.tick(3.0)                                # idle: counts as a sample of 0
    assert ctl.p90 == pytest.approx(3.5)


def test_rate_bounds_and_the_bucket_follow_the_rate():
    clock = FakeClock()
    ctl = ResponseTimeController(target=0.1, measure=False, rate_min=2.0, clock=clock)
    ctl.attach(FakeStage())
    ctl.tick(0.0)
    for t in range(1, 80):
        feed(ctl, 10.0)
        ctl.tick(t * 0.01)
    assert ctl.rate == 2.0                       # floored at rate_min
    clock.now = 100.0
    admitted = sum(ctl.accept(None) for _ in range(10))
    assert admitted == 1 and ctl.rejected == 9   # depth: 100 ms of 2/s, rounded up to 1
    clock.now = 100.5                            # half a second at 2/s: one more
    assert [ctl.accept(None), ctl.accept(None)] == [True, False]
    ctl.disable()
    assert all(ctl.accept(None) for _ in range(10))
    ctl.enable()
    assert not ctl.accept(None)


def test_wait_for_threads_keeps_admission_off_until_the_pool_is_full():
    stage = FakeStage()

    class Pool:
        size, max = 2, 4

    stage.thread_control = Pool()
    ctl = ResponseTimeController(target=1.0, measure=False, wait_for_threads=True,
                                 rate_max=1.0, depth=1.0, clock=FakeClock())
    ctl.attach(stage)
    ctl.tick(0.0)
    assert all(ctl.accept(None) for _ in range(5))
    Pool.size = 4
    ctl.tick(0.01)
    assert [ctl.accept(None) for _ in range(2)] == [True, False]


def test_multiclass_cuts_lower_classes_first_then_its_own_after_lc_thresh():
    ctl = MulticlassResponseTimeController(lambda ev: ev, {0: 1.0, 1: 1.0}, lc_thresh=3,
                                           measure=False, rate_min=0.05)
    ctl.attach(FakeStage())
    ctl.tick(0.0)
    rates = []
    for t in range(1, 10):
        for _ in range(100):
            ctl.report(5.0, 1)                   # the high class misses its target
            ctl.report(0.01, 0)                  # the low class is fast, but held down
        ctl.tick(t * 0.01)
        rates.append((ctl.rates[0], ctl.rates[1]))
    low = [5000 / 10 ** k for k in range(1, 6)] + [0.05] * 4
    assert [r[0] for r in rates] == pytest.approx([max(0.05, x) for x in low])
    # the low class reaches rate_min at round 5; rounds 6-8 count lc up to 3; round 8 cuts
    assert [r[1] for r in rates] == pytest.approx([5000] * 7 + [5000 / 1.2] * 2)


def test_multiclass_unknown_class_is_the_lowest():
    ctl = MulticlassResponseTimeController(lambda ev: ev, {1: 1.0, 2: 1.0}, measure=False)
    ctl.attach(FakeStage())
    ctl.loops[1].set_rate(0.05)
    ctl.loops[1].bucket.tokens = 0
    assert not ctl.accept("no such class") and ctl.accept(2)


def test_degrader_lowers_quality_then_readmits_at_the_bottom():
    ctl = ResponseTimeController(target=1.0, measure=False, enabled=False)
    ctl.attach(FakeStage())
    deg = Degrader(ctl, min_quality=0.5, decrease=0.5, increase=0.25)
    ctl.tick(0.0)
    feed(ctl, 3.0)
    ctl.tick(0.01)
    assert not ctl.admitting and ctl.p90 == 3.0 and ctl.rate == 5000  # off: measures only
    deg.tick(1.0)
    assert deg.quality == 0.5 and not ctl.enabled
    deg.tick(2.0)
    assert ctl.enabled                                         # lowest quality, still slow
    for t in range(3, 20):                                     # admission brings it down
        feed(ctl, 0.01)
        ctl.tick(t)
    deg.tick(21.0)                                             # met, nothing rejected: off
    assert not ctl.enabled and deg.quality == 0.75
    deg.tick(22.0)
    assert deg.quality == 1.0


def test_red_probability_between_thresholds():
    stage = FakeStage()
    red = RED(min_th=10, max_th=30, max_p=0.5, weight=1.0, rng=random.Random(3))
    red.attach(stage)
    stage.queue = 5
    red.tick(0)
    assert red.p == 0 and all(red.accept(None) for _ in range(100))
    stage.queue = 20
    red.tick(0)
    assert red.p == pytest.approx(0.25)
    assert 10 < sum(not red.accept(None) for _ in range(200)) < 90
    stage.queue = 30
    red.tick(0)
    assert not any(red.accept(None) for _ in range(50))


def test_queue_delay_bounds_bursts_and_tightens_on_a_standing_queue():
    stage = FakeStage()
    qd = QueueDelay(target=0.005, interval=0.1)
    qd.attach(stage)
    assert stage.observers == [qd.observe]
    assert qd.accept(None)                                         # nothing measured yet
    qd.tick(0.0)
    qd.observe([1, 2, 3], [0.0, 0.02, 0.03], [0.0, 0.02, 0.03])   # a burst that drained
    stage.processed += 200                                         # 2000 events/s
    qd.tick(0.1)
    assert not qd.shedding and qd.bound == pytest.approx(200)      # one interval's worth
    qd.observe([1, 2], [0.02, 0.03], [0.02, 0.03])                 # never below target
    stage.processed += 200
    qd.tick(0.2)
    assert qd.shedding and qd.bound == pytest.approx(10)           # target's worth
    stage.queue = 9
    assert qd.accept(None)
    stage.queue = 10
    assert not qd.accept(None)
    stage.queue = 0
    stage.processed += 200
    qd.tick(0.3)                                                   # no samples, empty: idle
    assert not qd.shedding and qd.bound == pytest.approx(200)
    qd.tick(0.4)                                                   # nothing drained at all
    assert qd.bound == 0 and qd.accept(None)                       # still admits the next


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
    assert rb.capacity == pytest.approx(200) and rb.bounds[0] == pytest.approx(20)
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
    assert rb.bounds[0] == pytest.approx(200 * 0.1 / 1.2)
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


def test_adaptive_concurrency_shrinks_when_latency_rises_and_probes_when_not():
    stage = FakeStage()
    ac = AdaptiveConcurrency(initial=20, smoothing=0.5, tolerance=1.0)
    ac.attach(stage)
    ac.observe([], [], [0.01] * 10)
    ac.tick(0)                                      # at the minimum: gradient 1, probe up
    grown = 0.5 * 20 + 0.5 * (20 + math.sqrt(20))
    assert ac.limit == pytest.approx(grown)
    ac.observe([], [], [0.04] * 10)                 # four times slower: gradient floors at 0.5
    ac.tick(1)
    assert ac.limit == pytest.approx(0.5 * grown + 0.5 * (grown * 0.5 + math.sqrt(grown)))
    stage.queue = math.ceil(ac.limit)
    assert not ac.accept(None)
    stage.queue = math.ceil(ac.limit) - 1
    assert ac.accept(None)
