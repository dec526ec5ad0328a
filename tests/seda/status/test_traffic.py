"""Traffic over the last minute from cumulative counters sampled once a second: rates, lost
responses, and counters the HTTP stage may add later."""

from __future__ import annotations

from seda.status.traffic import Traffic, counters, tally


def test_rates_are_over_the_last_minute_of_samples():
    traffic = Traffic()
    for t in range(0, 121):                                 # 10 responses a second, 2 minutes
        traffic.sample(float(t), {"200": 10.0 * t, "dropped": float(t // 60)})
    now = {"200": 1200.0, "dropped": 2.0}
    summary = traffic.summary(120.0, now, 7)
    assert summary["window_s"] == 60 and summary["requests_per_s"] == 10
    assert summary["recent"]["responses"] == {"200": 600} and summary["connections"] == 7
    assert summary["recent"]["errors"]["dropped"] == 1 and summary["total"]["requests"] == 1200

    fresh = Traffic()
    fresh.sample(0.0, {"200": 0.0})
    assert fresh.summary(0.0, {"200": 0.0}, 0)["requests_per_s"] == 0      # no time yet



def test_lost_responses_and_unknown_counters():
    stats = {"http": {"errors": 1, "handler": {
        "connections": 3, "responses": {"200": 900, "503": 4}, "shed": 4, "dropped": 742,
        "aborted": 2, "streams": 1, "mode": "fast", "draining": True}},
        "haboob.miss": {"errors": 2}}
    flat = counters(stats, "http")
    assert "connections" not in flat and "mode" not in flat and "draining" not in flat
    counted = tally(flat)
    assert counted["errors"] == {"5xx": 4, "dropped": 742, "aborted": 2, "handler": 3,
                                 "total": 751}
    assert counted["counts"] == {"shed": 4, "dropped": 742, "aborted": 2, "streams": 1}
    assert counted["requests"] == 904
    assert counters({}, "http") == {"handler errors": 0}   # no HTTP stage (yet)
