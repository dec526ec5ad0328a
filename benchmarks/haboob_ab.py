"""Haboob before and after a change, beside gunicorn: requests per second on a cached 1 KB file
and on a WSGI hello world, alternating builds in one session so that both see the same machine.

    python -m benchmarks.haboob_ab --before /tmp/old/src [--runs 5] [--seconds 5] [--conns 64]

``--before`` is another checkout's ``src/`` (e.g. ``git worktree add /tmp/old <commit>``); the
after build is this checkout's. Each server is pinned to core 0 and wrk to core 1, keep-alive,
one process each (gunicorn: ``-k gthread --threads 8``, one worker). Every run measures every
server once, in turn; the table gives medians and the median of the per-run ratios.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.serving import REPO, free_port, server
from benchmarks.wrk import measure

APP = "benchmarks.wsgi_apps:hello"


def commands(root: Path, before: Path) -> dict[str, tuple[list[str], dict, str]]:
    """name -> (command with {port}, environment, path to request)."""
    py, here = sys.executable, dict(os.environ, PYTHONPATH=f"{REPO / 'src'}:{REPO}")
    old = dict(os.environ, PYTHONPATH=f"{before}:{REPO}")
    haboob = [py, "-m", "haboob", "--bind", "127.0.0.1:{port}"]
    gunicorn = [str(Path(py).with_name("gunicorn")), "-k", "gthread", "--threads", "8",
                "-b", "127.0.0.1:{port}", APP]
    return {
        "file before": ([*haboob, "--root", str(root)], old, "/index.html"),
        "file after": ([*haboob, "--root", str(root)], here, "/index.html"),
        "wsgi before": ([*haboob, APP], old, "/"),
        "wsgi after": ([*haboob, APP], here, "/"),
        "wsgi gunicorn": (gunicorn, here, "/"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other build's src/")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--conns", type=int, default=64)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="haboob-ab-") as tmp:
        root = Path(tmp)
        rng = random.Random(7)                    # the same 1 KB file as refbench.sh
        (root / "index.html").write_bytes(bytes(rng.choice(b"abcdefghij") for _ in range(1024)))
        servers = commands(root, args.before.resolve())
        runs: list[dict[str, float]] = []
        for i in range(args.runs):
            run = {}
            for name, (cmd, env, path) in servers.items():
                port = free_port()
                url = f"http://127.0.0.1:{port}{path}"
                with server([c.format(port=port) for c in cmd], port, env):
                    measure(url, args.conns, 1)                       # warm up
                    run[name] = measure(url, args.conns, args.seconds).rps
            runs.append(run)
            print(f"run {i + 1}: " + ", ".join(f"{k}={v:.0f}" for k, v in run.items()),
                  flush=True)

    def median(name: str) -> float:
        return statistics.median(r[name] for r in runs)

    def ratio(a: str, b: str) -> float:
        return statistics.median(r[a] / r[b] for r in runs)

    print("\n| workload | before req/s | after req/s | after / before | gunicorn req/s "
          "| after / gunicorn |\n|---|---:|---:|---:|---:|---:|")
    print(f"| 1 KB file | {median('file before'):,.0f} | {median('file after'):,.0f} | "
          f"{ratio('file after', 'file before'):.2f} | | |")
    print(f"| WSGI hello | {median('wsgi before'):,.0f} | {median('wsgi after'):,.0f} | "
          f"{ratio('wsgi after', 'wsgi before'):.2f} | {median('wsgi gunicorn'):,.0f} | "
          f"{ratio('wsgi after', 'wsgi gunicorn'):.2f} |")
    print(f"\nMedians of {args.runs} runs, {args.seconds} s each, {args.conns} connections.")


if __name__ == "__main__":
    main()
