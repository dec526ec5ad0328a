"""The web-server study's runner: a short real run writes its table, raw results and plots; a
server that is missing or will not start is skipped with its reason."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from benchmarks.serving import REPO
from benchmarks.webstudy import servers
from benchmarks.webstudy.__main__ import parse
from benchmarks.webstudy.servers import Candidate, nginx_conf
from benchmarks.webstudy.study import Settings, highlighted, run, thin_cdf

PNG = b"\x89PNG\r\n\x1a\n"


def test_a_short_study_writes_its_table_results_and_plots(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.webstudy", "--duration", "1", "--clients", "1,4",
         "--servers", "sped,haboob", "--fileset-mb", "1", "--out", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines()[0] == ("2 servers x 2 client counts x 1 s = 4 s of load, "
                                   "plus start-up")
    results = json.loads((tmp_path / "webstudy.json").read_text())
    for name in ("sped", "haboob"):
        runs = results["servers"][name]["runs"]
        assert [r["clients"] for r in runs] == [1, 4]
        for r in runs:
            assert r["requests"] > 0 and r["errors"]["total"] == 0, (name, r["errors"])
            assert r["cdf"][-1][1] == pytest.approx(1.0)
    table = (tmp_path / "webstudy.md").read_text()
    assert "| sped | 4 |" in table and "| haboob | 1 |" in table
    assert "--servers sped,haboob" in table
    for png in ("webstudy_throughput.png", "webstudy_cdf_4.png"):
        assert (tmp_path / png).read_bytes().startswith(PNG)
        assert f"]({png})" in table


def test_missing_and_failing_servers_are_skipped_with_their_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(servers.CANDIDATES, "absent", Candidate(
        "absent", "needs a module nobody has", lambda root, port, work: ["true"],
        ("no_such_module_for_the_study",)))
    monkeypatch.setitem(servers.CANDIDATES, "broken", Candidate(
        "broken", "exits at once", lambda root, port, work: [sys.executable, "-c", "1"]))
    lines: list[str] = []
    results = run(Settings(["absent", "broken"], [1], 1.0, fileset_mb=0.1), tmp_path,
                  lines.append)
    assert results["servers"] == {}
    assert "no_such_module_for_the_study not installed" in results["skipped"]["absent"]
    assert "did not start" in results["skipped"]["broken"]
    assert [line.split(":")[0] for line in lines] == ["skip absent", "skip broken"]


def test_the_command_line_checks_servers_and_sizes_the_run() -> None:
    args = parse(["--servers", "haboob,nginx", "--clients", "1,64", "--duration", "2"])
    assert (args.servers, args.clients, args.duration) == (["haboob", "nginx"], [1, 64], 2.0)
    assert Settings(args.servers, args.clients, args.duration).load_seconds() == 8.0
    with pytest.raises(SystemExit):
        parse(["--servers", "haboob,apache"])


def test_cdfs_at_the_thesis_client_counts_or_the_largest() -> None:
    assert highlighted([1, 4, 16, 64, 256, 1024]) == [64, 1024]
    assert highlighted([1, 4]) == [4]


def test_thin_cdf_keeps_the_shape_in_fewer_points() -> None:
    points = [[1.0 + i / 1000, (i + 1) / 1001] for i in range(1000)] + [[50.0, 1.0]]
    thin = thin_cdf(points)
    assert len(thin) < 20 and thin[-1] == [50.0, 1.0]
    assert all(point in points for point in thin)
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in pairwise(thin))


def test_nginx_runs_one_worker_without_access_log_and_with_the_baseline_types() -> None:
    conf = nginx_conf("/srv/www", 8080, Path("/tmp/w"))
    assert "worker_processes 1;" in conf and "access_log off;" in conf
    assert "listen 127.0.0.1:8080;" in conf and "root /srv/www;" in conf
    assert "text/html html;" in conf and "default_type application/octet-stream;" in conf
