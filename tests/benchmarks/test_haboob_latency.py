"""The latency benchmark: wrk's percentiles read from a real run against Haboob."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks import wrk
from benchmarks.haboob_latency import command
from benchmarks.serving import free_port, server


def test_a_run_gives_the_percentiles_asked_for_in_order(tmp_path: Path) -> None:
    missing = [t for t in ("wrk", "taskset") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the real run needs {', '.join(missing)}")
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.html").write_bytes(b"x" * 1024)
    port = free_port()
    cmd, env = command("haboob", tmp_path, port, None)
    with server(cmd, port, env):
        m, dist = wrk.distribution(f"http://127.0.0.1:{port}/index.html", 4, 1, tmp_path,
                                   (50, 99, 99.9))
    assert m.rps > 0 and m.errors == {}
    assert list(dist) == [50.0, 99.0, 99.9, 100.0]       # (100: the longest request)
    assert 0 < dist[50.0] <= dist[99.0] <= dist[99.9] <= dist[100.0]
