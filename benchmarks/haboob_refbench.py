"""Haboob beside nginx and uvicorn, as the project is judged, repeated for medians.

    python benchmarks/haboob_refbench.py [--runs 5] [--seconds 6]

Runs ../shared/tools/refbench.sh (each server pinned to core 0, wrk to core 1, keep-alive, the
same 1 KB file) ``--runs`` times and reports the median requests per second and p99 of each
server at 64 and 1024 connections, and the median of haboob's per-run ratios to uvicorn and to
nginx (ratios within one run compare servers measured minutes apart, not hours). Writes
docs/results/haboob_refbench.md.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from pathlib import Path

from results import result_path
from steal import Steal

HERE = Path(__file__).resolve().parent
REFBENCH = HERE.parent.parent / "shared" / "tools" / "refbench.sh"
SERVERS, CONNS = ("nginx", "uvicorn", "haboob"), (64, 1024)   # refbench.sh's defaults
LINE = re.compile(r"^(\S+)\s+conns=(\d+)\s+rps=([\d.]+)\s+p99=([\d.]+)(us|ms|s)", re.M)
MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def one_run(seconds: int) -> dict[tuple[str, int], tuple[float, float]]:
    """(requests/s, p99 ms) of each server at each connection count."""
    haboob = Path(sys.executable).with_name("haboob")
    done = subprocess.run(
        ["bash", str(REFBENCH), "--only", "nginx,uvicorn", "--seconds", str(seconds),
         "--name", "haboob", "--cmd", f"{haboob} --root {{root}} --bind 127.0.0.1:{{port}}"],
        capture_output=True, text=True, timeout=900)
    found = {(name, int(conns)): (float(rps), float(p99) * MS[unit])
             for name, conns, rps, p99, unit in LINE.findall(done.stdout)}
    wanted = {(name, conns) for name in SERVERS for conns in CONNS}
    if not wanted <= found.keys() or not all(rps for rps, _ in found.values()):
        raise RuntimeError(f"refbench measured nothing for some server:\n{done.stdout}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=6, help="per point (whole seconds)")
    args = parser.parse_args()
    runs = []
    with Steal() as steal:
        for i in range(args.runs):
            runs.append(one_run(args.seconds))
            print(f"run {i + 1}: " + ", ".join(f"{k[0]}@{k[1]}={v[0]:.0f} (p99 {v[1]:.2f} ms)"
                                               for k, v in sorted(runs[-1].items())),
                  flush=True)
    rows = []
    for conns in CONNS:
        med = {s: statistics.median(r[(s, conns)][0] for r in runs) for s in SERVERS}
        p99 = {s: statistics.median(r[(s, conns)][1] for r in runs) for s in SERVERS}
        vs_uvicorn = statistics.median(r[("haboob", conns)][0] / r[("uvicorn", conns)][0]
                                       for r in runs)
        ratios = [r[("haboob", conns)][0] / r[("nginx", conns)][0] for r in runs]
        rows.append(f"| {conns} | {med['nginx']:,.0f} ({p99['nginx']:.2f}) | "
                    f"{med['uvicorn']:,.0f} ({p99['uvicorn']:.2f}) | "
                    f"{med['haboob']:,.0f} ({p99['haboob']:.2f}) | {vs_uvicorn:.2f}x | "
                    f"{statistics.median(ratios):.2f}x | "
                    f"{', '.join(f'{x:.2f}' for x in ratios)} |")
    table = ("| connections | nginx req/s (p99 ms) | uvicorn req/s (p99 ms) "
             "| haboob req/s (p99 ms) | haboob / uvicorn | haboob / nginx | each run's "
             "haboob / nginx |\n|---:|---:|---:|---:|---:|---:|---|\n" + "\n".join(rows) +
             f"\n\nMedians of {args.runs} refbench runs of {args.seconds} s per point; the "
             "ratios are medians of each run's. Targets: 2x uvicorn and 0.6x nginx (issue 5), "
             f"1.0x nginx with a p99 no worse (issue 20). {steal.sentence()}\n")
    result_path("haboob_refbench.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
