"""ASGI applications on Haboob beside uvicorn (uvloop, httptools) and hypercorn (issue 19):
refbench's plain ASGI application and the same 1 KB answer through FastAPI, keep-alive, at 64
and 1024 connections; each server alone on core 0, wrk on core 1, repeated for medians.

    python -m benchmarks.asgi_refbench [--runs 5] [--seconds 6] [--only haboob,uvicorn]
    python -m benchmarks.asgi_refbench --quick     # one 1 s run at 16 connections: it works

Reports each server's median requests per second and p99 for each application, and the
median of Haboob's per-run ratios to uvicorn (goals: at least 2x on the plain application,
ahead on FastAPI). Beside them, ``bound``: the least a staged ASGI server can do
(baselines/staged_asgi.py, Haboob's design with none of a server's duties), and its ratio.
Writes asgi_refbench.md in docs/results/ (not with --quick). Needs wrk and taskset; hypercorn
is measured where it is installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys

from benchmarks.results import result_path
from benchmarks.serving import free_port, server
from benchmarks.steal import Steal
from benchmarks.wrk import measure

APPS = {"plain ASGI": "benchmarks.asgi_apps:hello", "FastAPI": "benchmarks.fastapi_apps:hello"}
CONNS = (64, 1024)


def servers(app: str, port: int) -> dict[str, list[str]]:
    """The command of each server for application ``app`` (module:attribute)."""
    bind = f"127.0.0.1:{port}"
    out = {"haboob": [sys.executable, "-m", "haboob", app, "--bind", bind, "--no-status"],
           "uvicorn": [sys.executable, "-m", "uvicorn", app, "--host", "127.0.0.1",
                       "--port", str(port), "--loop", "uvloop", "--http", "httptools",
                       "--no-access-log", "--log-level", "warning"]}
    if importlib.util.find_spec("hypercorn") is not None:
        out["hypercorn"] = [sys.executable, "-m", "hypercorn", app, "--bind", bind,
                            "--worker-class", "uvloop", "--log-level", "warning"]
    out["bound"] = [sys.executable, "-m", "benchmarks.baselines.staged_asgi", app, "--bind", bind]
    return out


def one_run(names: list[str], conns: tuple[int, ...], seconds: int,
            warm: bool = True) -> dict[tuple[str, str, int], tuple[float, float]]:
    """(server, application, connections) -> (requests/s, p99 ms), every server once, each
    first warmed up (``warm``) for a second: imports, caches, the first connections."""
    found = {}
    for label, app in APPS.items():
        port = free_port()
        for name, cmd in servers(app, port).items():
            if name not in names:
                continue
            with server(cmd, port):
                if warm:
                    measure(f"http://127.0.0.1:{port}/", 16, 1)
                for c in conns:
                    done = measure(f"http://127.0.0.1:{port}/", c, seconds)
                    found[(name, label, c)] = (done.rps, done.p99_ms)
    return found


def table(runs: list[dict], names: list[str], conns: tuple[int, ...]) -> str:
    """Medians over the runs, and Haboob's (and the bound's) per-run ratio to uvicorn."""
    against = [n for n in ("haboob", "bound") if n in names] if "uvicorn" in names else []
    columns = [f"{n} req/s (p99 ms)" for n in names] + [f"{n} / uvicorn" for n in against]
    rows = ["| application | connections | " + " | ".join(columns) + " |",
            "|---|---:|" + "---:|" * (len(names) + len(against))]
    for label in APPS:
        for c in conns:
            cells = []
            for n in names:
                rps = statistics.median(r[(n, label, c)][0] for r in runs)
                p99 = statistics.median(r[(n, label, c)][1] for r in runs)
                cells.append(f"{rps:,.0f} ({p99:.1f})")
            for n in against:
                ratio = statistics.median(r[(n, label, c)][0] / r[("uvicorn", label, c)][0]
                                          for r in runs)
                cells.append(f"{ratio:.2f}x")
            rows.append(f"| {label} | {c} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=6, help="per point (whole seconds)")
    parser.add_argument("--only", help="servers to measure, comma-separated")
    parser.add_argument("--quick", action="store_true",
                        help="Haboob and uvicorn, one 1 s run at 16 connections, nothing written")
    args = parser.parse_args(argv)
    for tool in ("wrk", "taskset"):
        if shutil.which(tool) is None:
            parser.error(f"{tool} is needed (Debian: apt-get install {tool})")
    known = list(servers("app:app", 0))
    names = args.only.split(",") if args.only else known
    if args.quick:
        names, conns, runs_wanted, seconds = ["haboob", "uvicorn"], (16,), 1, 1
    else:
        conns, runs_wanted, seconds = CONNS, args.runs, args.seconds
    unknown = set(names) - set(known)
    if unknown:
        parser.error(f"unknown or missing servers {sorted(unknown)}; these can run: {known}")
    runs = []
    with Steal() as steal:
        for i in range(runs_wanted):
            runs.append(one_run(names, conns, seconds, warm=not args.quick))
            print(f"run {i + 1}: " + ", ".join(f"{k[0]}/{k[1]}@{k[2]}={v[0]:.0f}"
                                               for k, v in sorted(runs[-1].items())),
                  flush=True)
    text = table(runs, names, conns)
    if not args.quick:
        text += (f"\nMedians of {runs_wanted} runs of {seconds} s per point; each server "
                 "alone on core 0, wrk -t1 on core 1, keep-alive, a 1 KB answer. "
                 f"{steal.sentence()}\n")
        result_path("asgi_refbench.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
