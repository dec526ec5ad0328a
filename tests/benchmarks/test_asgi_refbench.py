"""The ASGI refbench script: its table from runs, and its quick mode against real servers."""

from __future__ import annotations

import shutil

import pytest

from benchmarks import asgi_refbench


def test_the_table_has_medians_and_haboobs_ratio_to_uvicorn():
    runs = [{(s, a, 64): (rps, 2.0) for s, rps in (("haboob", 300.0), ("uvicorn", 100.0))
             for a in asgi_refbench.APPS},
            {(s, a, 64): (rps, 4.0) for s, rps in (("haboob", 500.0), ("uvicorn", 100.0))
             for a in asgi_refbench.APPS}]
    text = asgi_refbench.table(runs, ["haboob", "uvicorn"], (64,))
    assert "| plain ASGI | 64 | 400 (3.0) | 100 (3.0) | 4.00x |" in text
    assert "| FastAPI | 64 |" in text


def test_quick_mode_measures_haboob_and_uvicorn_and_writes_nothing(capsys, monkeypatch):
    if shutil.which("wrk") is None or shutil.which("taskset") is None:
        pytest.skip("wrk and taskset measure the servers")
    pytest.importorskip("uvicorn", reason="the bench extra is not installed")
    monkeypatch.setattr(asgi_refbench, "result_path", lambda name: pytest.fail("wrote " + name))
    assert asgi_refbench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| plain ASGI | 16 |" in out and "| FastAPI | 16 |" in out and "x |" in out
