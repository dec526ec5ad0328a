"""The slow-reader experiment: a short run with the threshold closes the silent neighbour and
serves the others; its report and figure are written."""

from __future__ import annotations

from pathlib import Path

from benchmarks.gnutella_slow_reader import experiment, plot, report

PNG = b"\x89PNG\r\n\x1a\n"


def test_a_short_run_closes_the_silent_neighbour_and_draws_the_figure(tmp_path: Path):
    # 6.5 MB, more than the loopback buffers take (a few MB): the rest waits in the router
    run = experiment(64 * 1024, seconds=1.0, rate=200.0, every=0.1)
    assert run["closed"] == {"slow reader": 1}
    assert run["reader_got"] == run["queries_sent"] > 0 and run["reader_got_each_once"]
    # past the threshold at most one write more (a batch of the router, joined)
    assert max(s["pending"] for s in run["samples"]) < 64 * 1024 + 2**20
    assert "slow reader" in report([run])
    plot([run], str(tmp_path / "fig.png"))
    assert (tmp_path / "fig.png").read_bytes().startswith(PNG)
