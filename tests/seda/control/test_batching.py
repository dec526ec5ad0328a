"""The batching controller (thesis 5.4.2), step by step."""

from __future__ import annotations

from seda.control import BatchingController

from tests.helpers.fakes import FakeStage, drive


def test_batching_controller_follows_the_thesis_rules():
    stage = FakeStage()
    ctl = BatchingController()
    ctl.attach(stage)
    assert stage.batch == 1000
    # within 10 % of the best: -20 %; below: +20 %; below half of it: back to max
    rates = [1000, 1000, 950, 850, 950, 400]
    assert drive(ctl, stage, rates, read=lambda: stage.batch) == [800, 640, 512, 615, 492, 1000]
    assert drive(ctl, stage, [0], read=lambda: stage.batch) == [1000]   # nothing handled
