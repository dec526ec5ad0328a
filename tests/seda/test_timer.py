"""The timer thread: events enqueued when due, in deadline order; cancelled and rejected ones
not."""

from __future__ import annotations

import time

import pytest

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




def test_pending_counts_the_events_neither_fired_nor_cancelled(rt, recorder):
    sink = rt.add_stage("r", recorder).sink
    rt.start()
    later = [rt.timer.schedule(60.0, sink, n) for n in range(3)]   # not due during the test
    soon = rt.timer.schedule(0.0, sink, "soon")
    later[0].cancel()
    assert recorder.wait(1) == ["soon"]
    assert rt.timer.pending() == 2 and not soon.cancelled
