"""The static-workload benchmark: wrk's output read, the LRU estimate of the mix, the table from
runs, and a tiny real run of every kind of workload against Haboob, nginx and uvicorn."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from benchmarks import wrk
from benchmarks.haboob_static import Settings, lru_misses, markdown
from benchmarks.serving import REPO
from benchmarks.webstudy.servers import nginx_binary

WRK_OUTPUT = """Running 1s test @ http://127.0.0.1:8000/100k.html
  1 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   412.00us  100.00us   2.10ms   90.00%
    Req/Sec    19.10k     1.00k   20.00k    80.00%
  Latency Distribution
     50%  400.00us
     75%  450.00us
     90%  500.00us
     99%    1.25ms
  19100 requests in 1.00s, 1.83GB read
  Socket errors: connect 0, read 3, write 0, timeout 2
  Non-2xx or 3xx responses: 4
Requests/sec:  19100.50
Transfer/sec:      1.83GB
"""


def test_wrk_output_gives_rate_p99_bytes_and_the_errors_that_happened() -> None:
    m = wrk.parse(WRK_OUTPUT)
    assert (m.rps, m.p99_ms, m.requests) == (19100.5, 1.25, 19100)
    assert m.mib_s == pytest.approx(1.83 * 1024)
    assert m.errors == {"read": 3, "timeout": 2, "non-2xx": 4}
    with pytest.raises(RuntimeError, match="measured nothing"):
        wrk.parse("unable to connect to 127.0.0.1:8000 Connection refused\n")


def test_the_lru_estimate_misses_what_a_small_cache_cannot_hold(tmp_path: Path) -> None:
    for name in "abc":
        (tmp_path / name).write_bytes(b"x" * 10)
    (tmp_path / "big").write_bytes(b"x" * 40)
    cycle = ["/a", "/b", "/c"]
    assert lru_misses(cycle * 3, tmp_path, 30) == (0.0, 0.0)      # all fit
    assert lru_misses(cycle * 3, tmp_path, 20) == (1.0, 1.0)      # LRU of 2 over a cycle of 3
    requests, volume = lru_misses(["/a", "/big"] * 2, tmp_path, 30)  # "big" is never kept
    assert (requests, volume) == (0.5, 0.8)


def _record(workload: str, server: str, conns: int, rps: float, **more: object) -> dict:
    return {"workload": workload, "server": server, "conns": conns, "rps": rps, "p99_ms": 2.0,
            "mib_s": rps / 10, "requests": int(rps), "errors": {}, **more}


def test_the_table_has_medians_ratios_the_mix_and_the_errors() -> None:
    settings = Settings(["100k", "specweb"], ["nginx", "uvicorn", "haboob"], [64], 2, 6, 1,
                        1000.0, 200.0)
    runs = [[_record("100k", "nginx", 64, 1000), _record("100k", "uvicorn", 64, 500),
             _record("100k", "haboob", 64, 900),
             _record("specweb", "nginx", 64, 800),
             _record("specweb", "haboob", 64, 400, miss_events=40)],
            [_record("100k", "nginx", 64, 2000), _record("100k", "uvicorn", 64, 500),
             _record("100k", "haboob", 64, 1000),
             _record("specweb", "nginx", 64, 800),
             {**_record("specweb", "haboob", 64, 800, miss_events=40),
              "errors": {"timeout": 3}}]]
    results = {"date": "2026-11-23 10:00", "machine": "x86_64", "command": "python -m x",
               "settings": asdict(settings), "tls": {"nginx": "TLSv1.3 X"},
               "mix": {"fileset_mb": 1000.0, "dirs": 200, "cache_mb": 200.0, "paths": 10,
                       "lru_request_misses": 0.1, "lru_byte_misses": 0.5}, "runs": runs}
    text = markdown(results)
    # medians of 1000 and 2000, 500 and 500, 900 and 1000; ratios 0.9 and 0.5 -> 0.70
    assert "| 100 KB file | 64 | 1,500 (2.0) | 500 (2.0) | 950 (2.0) | 0.70x | 1.90x |" in text
    assert "| SPECweb99 mix | 64 | 800 (2.0) | - | 600 (2.0) | 0.75x | - |" in text
    assert "| 64 | 80.0 | 60.0 | 0.075 |" in text     # MiB/s, and 40/400 and 40/800 events
    assert "misses 10.0% of the requests and 50.0% of the bytes" in text
    assert "nginx TLSv1.3 X" in text
    assert "- haboob, SPECweb99 mix, 64 connections, run 2: timeout 3" in text


def test_a_tiny_run_measures_every_kind_of_workload(tmp_path: Path) -> None:
    missing = [t for t in ("wrk", "taskset") if shutil.which(t) is None]
    missing += [] if nginx_binary() else ["nginx"]
    missing += [m for m in ("uvicorn", "uvloop") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the real run needs {', '.join(missing)}")
    subprocess.run(
        [sys.executable, "-m", "benchmarks.haboob_static", "--runs", "1", "--seconds", "1",
         "--conns", "8", "--warmup", "0", "--workloads", "100k,close,tls-1k,specweb",
         "--fileset-mb", "1", "--cache-mb", "1", "--out", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=True)
    results = json.loads((tmp_path / "haboob_static.json").read_text())
    (run,) = results["runs"]
    measured = {(r["workload"], r["server"]): r for r in run}
    assert set(measured) == {(w, s) for w in ("100k", "close", "tls-1k") for s in
                             ("nginx", "uvicorn", "haboob")} | {("specweb", "nginx"),
                                                               ("specweb", "haboob")}
    for point, r in measured.items():
        assert r["rps"] > 0 and r["errors"] == {}, (point, r)
    # 100 KB answers: the bytes per request say the file was sent, not an error page
    for s in ("nginx", "uvicorn", "haboob"):
        r = measured[("100k", s)]
        assert r["mib_s"] * 2**20 / r["rps"] == pytest.approx(100 * 1024, rel=0.02)
    assert set(results["tls"]) == {"nginx", "uvicorn", "haboob"}
    # the same certificate and the same protocol version on every server
    assert len({v.split()[0] for v in results["tls"].values()}) == 1, results["tls"]
    # a file set of about 5 MiB over a 1 MiB cache: Haboob misses, and counts what of that
    # crossed to its pool (none, if the kernel had every file cached: loaded on the loop)
    assert results["mix"]["fileset_mb"] > 4 and results["mix"]["lru_request_misses"] > 0
    assert isinstance(measured[("specweb", "haboob")]["miss_events"], int)
    table = (tmp_path / "haboob_static.md").read_text()
    assert "| TLS, 1 KB file | 8 |" in table and "| SPECweb99 mix | 8 |" in table
