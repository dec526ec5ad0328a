"""QueueDelay, CoDel's standing-queue signal as an admission predicate, step by step."""

from __future__ import annotations

import pytest

from seda.control import QueueDelay

from tests.helpers.fakes import FakeStage


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
    assert qd.bound == 1 and qd.accept(None)                       # still admits the next
