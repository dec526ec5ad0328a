"""The spike machinery: who is there when, and what a run's answers come to."""

from __future__ import annotations

from benchmarks.arashi_spike import Timeline, intervals, series, summary


def test_each_user_visits_while_the_schedule_has_room_for_it():
    phases = [(10.0, {"users": 2}), (5.0, {"users": 4, "high": 1}), (10.0, {"users": 2})]
    assert sorted(intervals(phases, "users")) == [(0.0, 25.0), (0.0, 25.0), (10.0, 15.0),
                                                  (10.0, 15.0)]
    assert intervals(phases, "high") == [(10.0, 15.0)]
    back = [(1.0, {"u": 1}), (1.0, {}), (1.0, {"u": 1})]
    assert intervals(back, "u") == [(0.0, 1.0), (2.0, 3.0)]          # two visits, two logins
    assert intervals(phases, "nobody") == []


ROWS = [  # (done, group, kind, status, seconds)
    (0.5, "users", "login", 303, 0.050),
    (1.2, "users", "folders", 200, 0.010),
    (1.4, "users", "folders", 503, 0.002),
    (1.6, "high", "show", 200, 0.300),
    (1.8, "users", "search", 500, 0.040),
    (2.5, "users", "show", 200, 0.020),
]


def test_a_window_of_answers_comes_to_p90_refusals_and_goodput():
    s = summary(ROWS, 1.0, 2.0, capacity=4.0)
    assert s["requests"] == 4 and s["refused"] == 0.25
    assert s["p90_ms"] == 300.0 and s["refusal_p90_ms"] == 2.0
    assert s["goodput"] == 2.0 and s["goodput_c"] == 0.5 and s["errors"] == {"500": 1}
    assert s["types"]["folders"] == {"count": 2, "p90_ms": 10.0, "refused": 0.5}
    users = summary(ROWS, 0.0, 3.0, None, group="users")
    assert users["requests"] == 5 and users["goodput_c"] is None
    assert "show" in users["types"] and users["types"]["show"]["p90_ms"] == 20.0
    nothing = summary(ROWS, 10.0, 20.0, 4.0)
    assert nothing["p90_ms"] is None and nothing["refused"] is None


def test_series_bins_answers_by_the_second_they_came():
    s = series(ROWS, 3.0)
    assert s["t"] == [0, 1, 2]
    assert s["p90_ms"] == [50.0, 300.0, 20.0] and s["goodput"] == [1, 2, 1]
    assert s["refused"] == [0.0, 0.25, 0.0]
    assert series(ROWS, 3.0, kind="folders")["refused"] == [None, 0.5, None]
    assert series(ROWS, 3.0, group="high")["p90_ms"] == [None, 300.0, None]


def test_a_refusal_must_say_so():
    timeline = Timeline(0.0)
    busy = b"<h1>Busy</h1><p>Please try again in a moment.</p>"
    timeline.refusal({"retry-after": "1", "content-type": "text/html; charset=utf-8"}, busy)
    assert timeline.bad_refusals == 0
    timeline.refusal({"content-type": "text/html"}, busy)                  # no Retry-After
    timeline.refusal({"retry-after": "1", "content-type": "text/plain"}, b"busy")
    assert timeline.bad_refusals == 2 and timeline.refusals == 3
