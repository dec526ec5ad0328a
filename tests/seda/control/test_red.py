"""Random early detection: refusal probability between the two thresholds."""

from __future__ import annotations

import random

import pytest

from seda.control import RED

from tests.helpers.fakes import FakeStage


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
