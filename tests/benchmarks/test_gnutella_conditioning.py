"""The Fig. 41/42 script's parts: one point with the query delay and the controller, the
router's profile read back, and ``seda.model plan`` run on it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("hdrh", reason="the bench extra is not installed")

from benchmarks import gnutella_conditioning as fig


def test_one_point_with_the_controller_keeps_its_profile_and_plans(tmp_path: Path):
    keep = tmp_path / "router.jsonl"
    row = fig.one("controller", 200, 1.0, 0, keep)
    assert row["loss"] == 0 and row["query"]["mean"] >= fig.DELAY_MS
    assert row["ping"]["mean"] < fig.DELAY_MS          # pings do not wait behind queries
    series = fig.profile_series(keep)
    assert series and {"t", "queue", "threads"} <= series[0].keys()
    planned = fig.plan(keep, 1000)
    assert "gnutella.router" in planned["text"] and planned["router"]["threads"] >= 1


def test_help(capsys):
    with pytest.raises(SystemExit) as done:
        fig.main(["--help"])
    assert done.value.code == 0 and "--quick" in capsys.readouterr().out
