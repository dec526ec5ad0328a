"""Haboob before and after a change, beside gunicorn: requests per second and CPU time per
request on a cached 1 KB file and on a WSGI hello world (and, with ``--mix``, a SPECweb99 file
set larger than the page cache), alternating builds in one session so that both see the same
machine.

    python -m benchmarks.haboob_ab --before /tmp/old/src [--runs 5] [--seconds 5] [--conns 64]
        [--mix [--mix-mb 2000]]

``--before`` is another checkout's ``src/`` (e.g. ``git worktree add /tmp/old <commit>``); the
after build is this checkout's. Each server is pinned to core 0 and wrk to core 1, keep-alive,
one process each (gunicorn: ``-k gthread --threads 8``, one worker). Every run measures every
server once, in turn; the table gives medians and the median of the per-run ratios. The CPU
time per request (the server's user and system time over the measured run, from /proc) moves
far less with the machine's other tenants than the requests per second do.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks import wrk
from benchmarks.loadgen import make_fileset, specweb99
from benchmarks.serving import REPO, cpu_seconds, free_port, server
from benchmarks.steal import Steal

APP = "benchmarks.wsgi_apps:hello"
MIX_PATHS = 600_000          # the mix's sequence of paths; each run starts at its own place


def commands(root: Path, before: Path, mix: Path | None
             ) -> dict[str, tuple[list[str], dict, str, Path | None]]:
    """name -> (command with {port}, environment, path to request, wrk script or None)."""
    py, here = sys.executable, dict(os.environ, PYTHONPATH=f"{REPO / 'src'}:{REPO}")
    old = dict(os.environ, PYTHONPATH=f"{before}:{REPO}")
    haboob = [py, "-m", "haboob", "--bind", "127.0.0.1:{port}"]
    gunicorn = [str(Path(py).with_name("gunicorn")), "-k", "gthread", "--threads", "8",
                "-b", "127.0.0.1:{port}", APP]
    servers = {
        "file before": ([*haboob, "--root", str(root)], old, "/index.html", None),
        "file after": ([*haboob, "--root", str(root)], here, "/index.html", None),
        "wsgi before": ([*haboob, APP], old, "/", None),
        "wsgi after": ([*haboob, APP], here, "/", None),
        "wsgi gunicorn": (gunicorn, here, "/", None),
    }
    if mix is not None:
        site = [*haboob, "--root", str(root / "mix")]
        servers["mix before"] = (site, old, "/", mix)
        servers["mix after"] = (site, here, "/", mix)
    return servers


def the_mix(root: Path, megabytes: int) -> Path:
    """A SPECweb99 file set of ``megabytes`` under root/mix, and a wrk script taking its paths
    in turn, drawn as SPECweb99 draws them (as ``haboob_static`` does)."""
    dirs = make_fileset(root / "mix", megabytes * 2**20)
    draw, rng = specweb99(dirs).path, random.Random(7)
    return wrk.path_script([draw(rng) for _ in range(MIX_PATHS)], root)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other build's src/")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--conns", type=int, default=64)
    parser.add_argument("--mix", action="store_true", help="also a SPECweb99 file set")
    parser.add_argument("--mix-mb", type=int, default=2000,
                        help="its size, MiB (Haboob's page cache: 200)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="haboob-ab-") as tmp, Steal() as steal:
        root = Path(tmp)
        rng = random.Random(7)                    # the same 1 KB file as refbench.sh
        (root / "index.html").write_bytes(bytes(rng.choice(b"abcdefghij") for _ in range(1024)))
        mix = the_mix(root, args.mix_mb) if args.mix else None
        servers = commands(root, args.before.resolve(), mix)
        runs: list[dict[str, tuple[float, float]]] = []
        for i in range(args.runs):
            run = {}
            for name, (cmd, env, path, script) in servers.items():
                port = free_port()
                url = f"http://127.0.0.1:{port}{path}"
                start = (i + 1) * MIX_PATHS // (args.runs + 2)
                with server([c.format(port=port) for c in cmd], port, env) as proc:
                    wrk.measure(url, args.conns, 1, script)                # warm up
                    cpu = cpu_seconds(proc.pid)
                    m = wrk.measure(url, args.conns, args.seconds, script, start=start)
                    cpu = cpu_seconds(proc.pid) - cpu
                run[name] = (m.rps, cpu / m.requests * 1e6)
            runs.append(run)
            print(f"run {i + 1}: " + ", ".join(f"{k}={v[0]:.0f} ({v[1]:.1f} us)"
                                               for k, v in run.items()), flush=True)

    def median(name: str, field: int = 0) -> float:
        return statistics.median(r[name][field] for r in runs)

    def ratio(a: str, b: str, field: int = 0) -> float:
        return statistics.median(r[a][field] / r[b][field] for r in runs)

    print("\n| workload | before req/s (CPU us/req) | after req/s (CPU us/req) | after / before "
          "| CPU after / before | gunicorn req/s | after / gunicorn |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    for label, key in (("1 KB file", "file"), ("WSGI hello", "wsgi"), ("SPECweb99 mix", "mix")):
        if f"{key} after" not in servers:
            continue
        before, after = f"{key} before", f"{key} after"
        row = (f"| {label} | {median(before):,.0f} ({median(before, 1):.1f}) | "
               f"{median(after):,.0f} ({median(after, 1):.1f}) | {ratio(after, before):.2f} | "
               f"{ratio(after, before, 1):.2f} |")
        if key == "wsgi":
            row += f" {median('wsgi gunicorn'):,.0f} | {ratio(after, 'wsgi gunicorn'):.2f} |"
        else:
            row += " | |"
        print(row)
    print(f"\nMedians of {args.runs} runs, {args.seconds} s each, {args.conns} connections. "
          + steal.sentence())


if __name__ == "__main__":
    main()
