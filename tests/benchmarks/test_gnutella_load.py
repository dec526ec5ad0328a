"""The Gnutella load generator against a router in this process: every type it sends comes
back out and is timed, answers follow the path of what they answer, and its quick mode runs."""

from __future__ import annotations

import pytest

pytest.importorskip("hdrh", reason="the bench extra is not installed")

from benchmarks import gnutella_load

from tests.helpers.servent import running


def test_every_type_goes_through_and_is_timed():
    with running() as (_, service):
        r = gnutella_load.load(service.address, 2000, 0.5, connections=3, drain=5.0)
    assert set(r.sent) == {"ping", "pong", "query", "query_hit", "push"}, r.sent
    assert r.loss == 0, r.summary()
    assert r.received == r.sent
    assert all(p["p50"] > 0 for p in r.latency.values())
    assert 0.10 < r.sent["query"] / r.sent_total < 0.20          # the thesis's 15 %


def test_the_mix_is_kept_when_answers_have_something_to_answer():
    with running() as (_, service):
        r = gnutella_load.load(service.address, 4000, 0.5, connections=2, drain=5.0)
    share = {k: v / r.sent_total for k, v in r.sent.items()}
    for kind, expected in (("ping", 0.40), ("pong", 0.30), ("query_hit", 0.10)):
        assert abs(share[kind] - expected) < 0.06, share


def test_peak_quick_mode_runs_a_router_process(capsys, monkeypatch):
    monkeypatch.setattr(gnutella_load, "pin_to_core_1", lambda: None)   # not pytest itself
    assert gnutella_load.main(["peak", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "| 1,000 |" in out and "0.00%" in out


def test_help(capsys):
    with pytest.raises(SystemExit) as done:
        gnutella_load.main(["--help"])
    assert done.value.code == 0 and "peak" in capsys.readouterr().out
