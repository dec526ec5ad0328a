"""Thread pool and batching controllers (thesis 5.4), step by step and for real."""

from __future__ import annotations

import random
import threading

import pytest

import seda
from seda.control import BatchingController, ThreadPoolController

from conftest import WAIT
from fakes import FakeStage


def drive(controller, stage, rates, queue=None):
    """One tick per second; ``rates`` events handled in each second."""
    controller.tick(0.0)
    seen = []
    for t, rate in enumerate(rates, start=1):
        stage.processed += rate
        if queue is not None:
            stage.queue = queue
        controller.tick(float(t))
        seen.append(stage.manager.size if isinstance(controller, ThreadPoolController)
                    else stage.batch)
    return seen


def test_thread_pool_grows_on_backlog_and_resets_on_thrashing():
    stage = FakeStage()
    ctl = ThreadPoolController(rng=random.Random(1))
    ctl.attach(stage)
    assert stage.manager.idle_timeout == 5.0 and stage.manager.min_size == 1
    # EWMA 100, 130, 181, 216.7, 166.7, 116.7: the best (181 at 3 threads) is beaten by less
    # than 20 %, then throughput falls 20 % below it: back to 3 less randint(0, 4) == 1.
    assert drive(ctl, stage, [100, 200, 300, 300, 50, 0], queue=500) == [2, 3, 4, 5, 6, 2]
    assert ctl.best == pytest.approx(181.0) and ctl.best_size == 3 and ctl.resets == 1


def test_thread_pool_without_thrash_detection_grows_to_max_only_on_backlog():
    stage = FakeStage()
    ctl = ThreadPoolController(max=3, thrash_detect=False)
    ctl.attach(stage)
    assert drive(ctl, stage, [100, 0, 0, 0], queue=101) == [2, 3, 3, 3]
    assert drive(ctl, stage, [100], queue=100) == [3]        # at the threshold: no growth


def test_batching_controller_follows_the_thesis_rules():
    stage = FakeStage()
    ctl = BatchingController()
    ctl.attach(stage)
    assert stage.batch == 1000
    # within 10 % of the best: -20 %; below: +20 %; below half of it: back to max
    assert drive(ctl, stage, [1000, 1000, 950, 850, 950, 400]) == [800, 640, 512, 615, 492, 1000]
    assert drive(ctl, stage, [0]) == [1000]                   # nothing handled: no change


@pytest.mark.parametrize("bad", [dict(min=0), dict(min=5, max=4), dict(period=0)])
def test_thread_pool_controller_rejects_bad_bounds(bad):
    with pytest.raises(ValueError):
        ThreadPoolController(**bad)


class Watched(ThreadPoolController):
    """Lets a test wait for the controller's next decisions instead of sleeping."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.ticked = threading.Condition()

    def tick(self, now: float) -> None:
        super().tick(now)
        with self.ticked:
            self.ticked.notify_all()

    def wait_until(self, condition) -> None:
        with self.ticked:
            assert self.ticked.wait_for(condition, WAIT), self.state()


def test_a_real_pool_grows_under_backlog_and_shrinks_when_idle(rt):
    gate = threading.Event()

    class Blocked(seda.EventHandler):
        def handle_event(self, ev):
            gate.wait(WAIT)

    ctl = Watched(min=1, max=4, period=0.02, queue_threshold=5, idle_timeout=0.1,
                  thrash_detect=False)
    stage = rt.add_stage("blocked", Blocked(), threads=ctl, batch=1)
    rt.start()
    stage.sink.enqueue_many(range(100))
    ctl.wait_until(lambda: stage.manager.thread_count() == 4)
    assert rt.stats()["blocked"]["control"]["threads"]["threads"] == 4
    gate.set()
    ctl.wait_until(lambda: stage.manager.thread_count() == 1)   # idle threads left
    assert stage.processed == 100


def test_controllers_need_the_right_kind_of_stage(rt):
    with pytest.raises(ValueError, match="sizes a thread pool"):
        rt.add_stage("loop", seda.EventHandler(), blocking=False, threads=ThreadPoolController())

    @seda.single_threaded
    class One(seda.EventHandler):
        pass

    with pytest.raises(ValueError, match="single-threaded"):
        rt.add_stage("one", One(), threads=ThreadPoolController())
