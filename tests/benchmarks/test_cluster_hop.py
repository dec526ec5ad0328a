"""The cluster benchmark, in a short run: every measurement comes out, and the report says it."""

from __future__ import annotations

from benchmarks.cluster_hop import report, run

from tests.helpers import redis_server


def test_a_short_run_measures_rates_hops_and_recovery():
    result = run(redis_server.server().url, events=3000, hops=50, threads=1, claim_idle=0.3)
    assert set(result["rates"]) == {1, 2, 3} and all(r > 0 for r in result["rates"].values())
    assert result["local_us"] > 0 and result["cluster_us"] > 0
    assert 0 < result["recovery_s"] < 30
    text = report(result)
    assert "events/s" in text and "recovery after SIGKILL" in text
