"""The degrader (thesis 7.2.2): quality lowered while the target is missed, admission control
at the lowest quality."""

from __future__ import annotations

from seda.control import Degrader, ResponseTimeController

from tests.helpers.fakes import FakeStage


def test_degrader_lowers_quality_then_readmits_at_the_bottom():
    ctl = ResponseTimeController(target=1.0, measure=False, enabled=False)
    ctl.attach(FakeStage())
    deg = Degrader(ctl, min_quality=0.5, decrease=0.5, increase=0.25)
    ctl.tick(0.0)
    for _ in range(100):
        ctl.report(3.0)
    ctl.tick(0.01)
    assert not ctl.admitting and ctl.p90 == 3.0 and ctl.rate == 5000  # off: measures only
    deg.tick(1.0)
    assert deg.quality == 0.5 and not ctl.enabled
    deg.tick(2.0)
    assert ctl.enabled                                         # lowest quality, still slow
    for t in range(3, 20):                                     # admission brings it down
        for _ in range(100):
            ctl.report(0.01)
        ctl.tick(t)
    deg.tick(21.0)                                             # met, nothing rejected: off
    assert not ctl.enabled and deg.quality == 0.75
    deg.tick(22.0)
    assert deg.quality == 1.0
