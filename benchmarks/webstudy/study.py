"""Running the study: one SPECweb99 file set, then for each server a start on core 0 and one
closed-loop run per client count from this process (pinned to another core by the caller)."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import resource
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.loadgen import closed_loop, make_fileset, specweb99
from benchmarks.serving import free_port, server
from benchmarks.webstudy.servers import CANDIDATES

THESIS_POINTS = (64, 1024)          # the client counts of the thesis's Fig. 38-40
CDF_STEP = 1.05                     # keep CDF points at least 5 % apart in response time


@dataclass(frozen=True)
class Settings:
    servers: list[str]
    clients: list[int]
    duration: float                 # seconds per run
    think_ms: float = 20.0          # the thesis's client think time
    requests_per_conn: int = 5      # and its requests per connection before reconnecting
    timeout: float = 60.0           # a response slower than this is an error
    fileset_mb: float = 100.0

    def load_seconds(self) -> float:
        """How long the load runs in all: servers x client counts x duration."""
        return len(self.servers) * len(self.clients) * self.duration


def highlighted(clients: list[int]) -> list[int]:
    """The client counts shown as CDFs and in the summary table: the thesis's 64 and 1024 where
    measured, else the largest measured."""
    return [c for c in THESIS_POINTS if c in clients] or [max(clients)]


def thin_cdf(points: list[list[float]]) -> list[list[float]]:
    """The CDF with one point, the last, of each span of ``CDF_STEP`` in time: its shape on a
    log axis in a few hundred points instead of thousands, every point a measured one."""
    kept: list[list[float]] = []
    start = 0.0
    for point in points:
        if kept and point[0] < start * CDF_STEP:
            kept[-1] = point
        else:
            kept.append(point)
            start = point[0]
    return kept


def _raise_fd_limit() -> None:
    """1024 clients need more descriptors than a default soft limit; servers inherit it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def write_json(results: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(results) + "\n")


def run(settings: Settings, out: Path, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Measure every server in ``settings``; the raw results go to ``out``/webstudy.json after
    each run, so a study cut short keeps what it measured."""
    results: dict[str, Any] = {
        "settings": asdict(settings),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Linux "
                   f"{platform.release()}, Python {platform.python_version()}",
        "servers": {}, "skipped": {}}
    _raise_fd_limit()
    with tempfile.TemporaryDirectory(prefix="webstudy-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)           # nginx's worker runs as nobody and must read the files
        root = work / "www"
        make_fileset(root, int(settings.fileset_mb * 2**20))
        env = dict(os.environ, BASELINE_ROOT=str(root))    # for baselines/apps.py
        workload = specweb99(root=root)
        for name in settings.servers:
            candidate = CANDIDATES[name]
            if why := candidate.missing():
                log(f"skip {name}: {why}")
                results["skipped"][name] = why
                continue
            port = free_port()
            with contextlib.ExitStack() as running:
                try:
                    command = candidate.command(str(root), port, work)
                    running.enter_context(server(command, port, env))
                except RuntimeError as e:
                    log(f"skip {name}: {e}")
                    results["skipped"][name] = str(e)
                    continue
                runs: list[dict[str, Any]] = []
                results["servers"][name] = {"what": candidate.what, "runs": runs}
                for clients in settings.clients:
                    report = closed_loop(f"http://127.0.0.1:{port}/", clients=clients,
                                         think_ms=settings.think_ms,
                                         requests_per_conn=settings.requests_per_conn,
                                         duration=settings.duration, timeout=settings.timeout,
                                         workload=workload)
                    log(f"{name}: {report.summary()}")
                    raw = report.to_dict()
                    raw["cdf"] = thin_cdf(raw["cdf"])
                    runs.append(raw)
                    write_json(results, out / "webstudy.json")
    return results
