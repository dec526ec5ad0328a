"""The control thread: controllers ticked on a running runtime, a raising one logged while the
others go on, and their state in the stats and the profiler's samples."""

from __future__ import annotations

import threading
import time

import seda
from seda.control import ResponseTimeController

from tests.helpers import WAIT
from tests.helpers.recorder import Recorder


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


def test_a_late_tick_is_not_followed_at_once_by_another(rt):
    """A tick held up three periods (here by a slow tick; in a server, by the GIL) would have
    the next one measure a few microseconds: it comes at least half a period later."""
    times: list[float] = []
    seen = threading.Event()

    class Slow(seda.control.Controller):
        period = 0.05

        def tick(self, now):
            times.append(now)
            if len(times) == 1:
                time.sleep(3 * self.period)          # a tick that runs long, not a wait for one
            if len(times) == 3:
                seen.set()

    rt.add_controller(Slow())
    rt.start()
    assert seen.wait(WAIT)
    assert times[2] - times[1] >= Slow.period / 2
