"""AdaptiveConcurrency, a gradient concurrency limit, step by step."""

from __future__ import annotations

import math

import pytest

from seda.control import AdaptiveConcurrency

from tests.helpers.fakes import FakeStage


def test_adaptive_concurrency_shrinks_when_latency_rises_and_probes_when_not():
    stage = FakeStage()
    ac = AdaptiveConcurrency(initial=20, smoothing=0.5, tolerance=1.0)
    ac.attach(stage)
    ac.observe([], [], [0.01] * 10)
    ac.tick(0)                                      # at the minimum: gradient 1, probe up
    grown = 0.5 * 20 + 0.5 * (20 + math.sqrt(20))
    assert ac.limit == pytest.approx(grown)
    ac.observe([], [], [0.04] * 10)                 # four times slower: gradient floors at 0.5
    ac.tick(1)
    assert ac.limit == pytest.approx(0.5 * grown + 0.5 * (grown * 0.5 + math.sqrt(grown)))
    stage.queue = math.ceil(ac.limit)
    assert not ac.accept(None)
    stage.queue = math.ceil(ac.limit) - 1
    assert ac.accept(None)
