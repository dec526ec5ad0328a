"""The ASGI refbench script: its table from runs, and its quick mode against real servers."""

from __future__ import annotations

import http.client
import shutil
import sys

import pytest

from benchmarks import asgi_refbench
from benchmarks.serving import free_port, server


def test_the_table_has_medians_and_the_ratios_to_uvicorn():
    servers = (("haboob", 300.0, 500.0), ("uvicorn", 100.0, 100.0), ("bound", 600.0, 800.0))
    runs = [{(s, a, 64): (rps[i], 2.0 * (i + 1)) for s, *rps in servers
             for a in asgi_refbench.APPS} for i in (0, 1)]
    text = asgi_refbench.table(runs, ["haboob", "uvicorn"], (64,))
    assert "| plain ASGI | 64 | 400 (3.0) | 100 (3.0) | 4.00x |" in text
    assert "| FastAPI | 64 |" in text
    text = asgi_refbench.table(runs, ["haboob", "uvicorn", "bound"], (64,))
    assert "bound req/s (p99 ms) | haboob / uvicorn | bound / uvicorn |" in text
    assert "| plain ASGI | 64 | 400 (3.0) | 100 (3.0) | 700 (3.0) | 4.00x | 7.00x |" in text


def test_the_bound_answers_an_asgi_application():
    """The staged bound (baselines/staged_asgi.py) serves refbench's application."""
    port = free_port()
    cmd = [sys.executable, "-m", "benchmarks.baselines.staged_asgi",
           "benchmarks.asgi_apps:hello", "--bind", f"127.0.0.1:{port}"]
    with server(cmd, port):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        for _ in range(3):                       # keep-alive
            conn.request("GET", "/x?y=1")
            r = conn.getresponse()
            assert r.status == 200 and len(r.read()) == 1024
        conn.close()


def test_quick_mode_measures_haboob_and_uvicorn_and_writes_nothing(capsys, monkeypatch):
    if shutil.which("wrk") is None or shutil.which("taskset") is None:
        pytest.skip("wrk and taskset measure the servers")
    pytest.importorskip("uvicorn", reason="the bench extra is not installed")
    monkeypatch.setattr(asgi_refbench, "result_path", lambda name: pytest.fail("wrote " + name))
    assert asgi_refbench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "| plain ASGI | 16 |" in out and "| FastAPI | 16 |" in out and "x |" in out
