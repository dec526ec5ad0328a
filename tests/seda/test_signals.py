"""System-wide signals: delivered by type to subscribers of it and of its bases, and
StagesInitialized once every stage has run init."""

from __future__ import annotations

import seda

from tests.helpers.recorder import Recorder


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
