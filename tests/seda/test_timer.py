"""The timer thread and system-wide signals."""

from __future__ import annotations

import time

import pytest

import seda

from tests.helpers.recorder import Recorder


def test_timer_delivers_in_deadline_order_and_cancel_works(rt, recorder):
    sink = rt.add_stage("r", recorder).sink
    rt.start()
    start = time.monotonic()
    rt.timer.schedule(0.06, sink, "late")
    cancelled = rt.timer.schedule(0.02, sink, "cancelled")
    rt.timer.schedule(0.01, sink, "early")
    cancelled.cancel()
    assert recorder.wait(2) == ["early", "late"]
    assert time.monotonic() - start >= 0.06
    assert rt.timer.pending() == 0


def test_timer_drops_rejected_events(rt, recorder):
    refusing = rt.add_stage("no", Recorder(), predicate=lambda ev: False).sink
    sink = rt.add_stage("r", recorder).sink
    rt.start()
    rt.timer.schedule(0.0, refusing, "dropped")
    rt.timer.schedule(0.01, sink, "kept")
    assert recorder.wait(1) == ["kept"]
    assert rt.timer.dropped == 1


def test_timer_rejects_bad_delays(rt, recorder):
    sink = rt.add_stage("r", recorder).sink
    for bad in (-1, float("nan")):
        with pytest.raises(ValueError, match="delay"):
            rt.timer.schedule(bad, sink, 1)


class Alarm:
    pass


class FireAlarm(Alarm):
    pass


def test_signals_reach_subscribers_of_the_type_and_its_bases(rt):
    everything, fires = Recorder(), Recorder()
    rt.add_stage("all", everything)
    rt.add_stage("fires", fires)
    rt.signals.subscribe(Alarm, rt.sink("all"))
    rt.signals.subscribe(FireAlarm, rt.sink("fires"))
    rt.signals.subscribe(FireAlarm, rt.sink("all"))           # still delivered once
    rt.start()
    alarm, fire = Alarm(), FireAlarm()
    assert rt.signals.publish(alarm) == 1
    assert rt.signals.publish(fire) == 2
    assert everything.wait(2) == [alarm, fire]
    assert fires.wait(1) == [fire]
    rt.signals.unsubscribe(Alarm, rt.sink("all"))
    rt.signals.unsubscribe(FireAlarm, rt.sink("all"))
    assert rt.signals.publish(Alarm()) == 0


def test_stages_initialized_is_published_once_after_every_init(rt, recorder):
    order = []

    class Early(seda.EventHandler):
        def init(self, ctx):
            order.append("init")
            ctx.runtime.signals.subscribe(seda.StagesInitialized, ctx.stage.sink)

        def handle_event(self, ev):
            order.append(ev)

    rt.add_stage("early", Early())
    rt.add_stage("other", recorder)
    rt.start()
    rt.stop()
    assert order[0] == "init" and len(order) == 2
    assert isinstance(order[1], seda.StagesInitialized)
    assert order[1].stages == ("early", "other")
