"""The overload runner on its quick configuration: data made, capacity measured, a spike of
users against ``arashi serve --admission bound`` with a target small enough that it must
refuse, and the table, the figure and the JSON written; every run's options as the experiment
names them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.arashi_overload import EXPERIMENTS, controller, main

PNG = b"\x89PNG\r\n\x1a\n"


def test_each_run_is_named_by_the_server_options_it_gets():
    assert controller("none", 1.0) == []
    assert controller("rtc", 1.0) == ["--target-p90", "1000", "--admission", "rtc"]
    assert controller("bound@front", 0.5) == ["--target-p90", "500", "--admission", "bound",
                                              "--admission-at", "front"]
    assert controller("degrade", 1.0)[-3:] == ["--admission", "none", "--degrade"]
    assert set(EXPERIMENTS) == {"fig52", "fig53", "fig54", "fig55", "fig56", "fig58",
                                "frontdoor"}


def test_an_unknown_run_is_refused(capsys):
    assert main(["--experiment", "fig55", "--admission", "fast"]) == 2
    assert "fig55 has no run fast" in capsys.readouterr().err


@pytest.mark.timeout(60)
def test_a_quick_spike_refuses_with_the_page_and_writes_its_results(tmp_path: Path):
    out = tmp_path / "results"
    assert main(["--experiment", "fig55", "--quick", "--admission", "bound", "--target-ms",
                 "20", "--out", str(out)]) == 0
    doc = json.loads((out / "arashi_overload_fig55.json").read_text())
    assert doc["quick"] and doc["target_s"] == 0.02 and doc["capacity"] > 0
    (run,) = doc["runs"]
    assert run["label"] == "bound"
    assert run["refusal_pages"] > 0 and run["bad_refusal_pages"] == 0     # each page looked at
    users = run["series"]["users"]
    assert len(users["t"]) == 6 and sum(users["goodput"]) > 10
    assert any(r for r in users["refused"] if r), users["refused"]   # 20 ms: it must refuse
    stages = run["samples"][-1][1]
    assert stages["arashi.login"]["admission"]["target_ms"] == 20.0
    table = (out / "arashi_overload_fig55.md").read_text()
    assert "| bound |" in table and "refusal p90 (ms)" in table
    assert (out / "arashi_overload_fig55.png").read_bytes().startswith(PNG)
