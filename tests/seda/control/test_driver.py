"""Controllers on a running runtime: a response-time target held under real overload, and
predicates swapped at run time."""

from __future__ import annotations

import threading
import time

import seda
from seda.control import QueueDelay, ResponseTimeController, TokenBucket

from tests.helpers import WAIT
from tests.helpers.recorder import Recorder


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
    # (measured in benchmarks/overload_response_time.py).
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


def test_predicates_can_be_swapped_at_run_time(rt):
    end = Recorder()
    stage = rt.add_stage("end", end)
    rt.start()
    qd = QueueDelay()
    stage.sink.predicate = qd
    assert qd.observe in stage.observers and qd in rt.control
    stage.sink.enqueue("timed")
    assert end.wait(1) == ["timed"]             # observed stages still deliver the event
    stage.sink.predicate = TokenBucket(rate=0, depth=1)
    assert qd.observe not in stage.observers and qd.stage is None and qd not in rt.control
    assert stage.sink.enqueue_lossy("one") and not stage.sink.enqueue_lossy("two")
    assert end.wait(2) == ["timed", "one"]


def test_a_raising_controller_is_logged_and_the_others_go_on(rt, caplog):
    ticked = threading.Event()

    class Broken(seda.control.Controller):
        period = 0.01

        def tick(self, now):
            raise RuntimeError("broken controller")

    class Fine(seda.control.Controller):
        period = 0.01
        count = 0

        def tick(self, now):
            self.count += 1
            if self.count == 3:
                ticked.set()

    rt.add_controller(Broken())
    rt.add_controller(Fine())
    rt.start()
    assert ticked.wait(WAIT)
    rt.stop()
    assert "controller Broken raised" in caplog.text


def test_controller_state_appears_in_stats_and_profiler_samples(rt, tmp_path):
    import json

    from seda.control import BatchingController, ThreadPoolController

    rt.add_stage("s", Recorder(), threads=ThreadPoolController(max=3),
                 batch=BatchingController(max=100), predicate=ResponseTimeController(0.1))
    path = tmp_path / "profile.jsonl"
    rt.start()
    rt.start_profiler(path, interval=60)          # the first sample is written at once
    rt.stop()
    control = json.loads(path.read_text().splitlines()[0])["stages"]["s"]["control"]
    assert set(control) == {"threads", "batch", "admission"}
    assert control["threads"]["max"] == 3 and control["batch"]["batch"] == 100
    assert control["admission"]["target_ms"] == 100.0
