"""The thesis's response-time controllers (7.2.1, 7.2.3): step by step with a fake clock, then
holding a target under real overload."""

from __future__ import annotations

import time

import pytest

import seda
from seda.control import MulticlassResponseTimeController, ResponseTimeController
from seda.control.response_time import Rounds, p90

from tests.helpers import WAIT
from tests.helpers.fakes import FakeClock, FakeStage


def test_p90_is_the_ninetieth_sample():
    assert p90([float(i) for i in range(100, 0, -1)]) == 90.0
    assert p90([5.0]) == 5.0


def test_a_round_ends_after_nreq_samples_or_timeout_seconds():
    rounds = Rounds(nreq=3, timeout=1.0)
    assert not rounds.due(0.0, 0)                   # the first look starts the first round
    assert not rounds.due(0.5, 2)
    assert rounds.due(0.6, 3)                       # nreq samples
    assert not rounds.due(1.5, 0)
    assert rounds.due(1.6, 0)                       # timeout since the last round ended
    with pytest.raises(ValueError, match="nreq"):
        Rounds(nreq=0, timeout=1.0)


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


class Slow(seda.EventHandler):
    """5 ms per event: a capacity of about 200 events/s on one thread."""

    def handle_event(self, ev):
        time.sleep(0.005)


def offer(sink, rate: float, seconds: float) -> int:
    """Open-loop arrivals at ``rate``/s for ``seconds``; returns how many were rejected."""
    rejected, start, sent = 0, time.monotonic(), 0
    while (elapsed := time.monotonic() - start) < seconds:
        due = int(elapsed * rate)
        for _ in range(due - sent):
            rejected += not sink.enqueue_lossy(sent)
        sent = due
        time.sleep(0.002)       # pacing of the load generator, not a wait for a result
    return rejected


def test_response_time_controller_holds_a_target_under_overload(rt):
    target = 0.05
    # rate_max near capacity so the first cut (1.2x per round of nreq samples) is short; from
    # the default 5000/s it takes seconds, and then the additive climb back takes longer still
    # (measured in benchmarks/overload_spike.py).
    ctl = ResponseTimeController(target, nreq=10, timeout=0.2, rate_max=300)
    stage = rt.add_stage("slow", Slow(), predicate=ctl, batch=1)
    rt.start()
    rejected = offer(stage.sink, 600, 2.5)      # three times what the stage can do
    late = []
    stage.observe(lambda events, waits, responses: late.extend(responses))
    rejected += offer(stage.sink, 600, 1.5)
    assert rejected > 1000                      # most of the excess was turned away at once
    assert len(stage.sink) < 20                 # without control: 1600 queued by now
    assert len(late) >= 5                       # still admitting
    assert sorted(late)[int(0.9 * len(late))] < target
    assert rt.stats()["slow"]["control"]["admission"]["rejected"] == rejected


def test_without_control_the_same_load_queues_up(rt):
    stage = rt.add_stage("slow", Slow())
    rt.start()
    offer(stage.sink, 600, 1.0)
    assert len(stage.sink) > 200                # the contrast: a queue growing without bound
    stage.sink.predicate = seda.control.QueueThreshold(1)    # shed the rest to end quickly
    rt.stage("slow").destroy(timeout=WAIT)
