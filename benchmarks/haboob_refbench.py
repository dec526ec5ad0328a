"""Haboob beside nginx and uvicorn, as the project is judged, repeated for medians.

    python benchmarks/haboob_refbench.py [--runs 5] [--seconds 6]

Runs ../shared/tools/refbench.sh (each server pinned to core 0, wrk to core 1, keep-alive, the
same 1 KB file) ``--runs`` times and reports the median requests per second of each server at
64 and 1024 connections, and the median of haboob's per-run ratios to uvicorn and to nginx
(ratios within one run compare servers measured minutes apart, not hours). Writes
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

HERE = Path(__file__).resolve().parent
REFBENCH = HERE.parent.parent / "shared" / "tools" / "refbench.sh"
SERVERS, CONNS = ("nginx", "uvicorn", "haboob"), (64, 1024)   # refbench.sh's defaults
LINE = re.compile(r"^(\S+)\s+conns=(\d+)\s+rps=([\d.]+)", re.M)


def one_run(seconds: int) -> dict[tuple[str, int], float]:
    haboob = Path(sys.executable).with_name("haboob")
    done = subprocess.run(
        ["bash", str(REFBENCH), "--only", "nginx,uvicorn", "--seconds", str(seconds),
         "--name", "haboob", "--cmd", f"{haboob} --root {{root}} --bind 127.0.0.1:{{port}}"],
        capture_output=True, text=True, timeout=900)
    found = {(name, int(conns)): float(rps) for name, conns, rps in LINE.findall(done.stdout)}
    wanted = {(name, conns) for name in SERVERS for conns in CONNS}
    if not wanted <= found.keys() or not all(found.values()):
        raise RuntimeError(f"refbench measured nothing for some server:\n{done.stdout}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=6, help="per point (whole seconds)")
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        runs.append(one_run(args.seconds))
        print(f"run {i + 1}: " + ", ".join(f"{k[0]}@{k[1]}={v:.0f}" for k, v in
                                           sorted(runs[-1].items())), flush=True)
    rows = []
    for conns in CONNS:
        med = {s: statistics.median(r[(s, conns)] for r in runs) for s in SERVERS}
        vs_uvicorn = statistics.median(r[("haboob", conns)] / r[("uvicorn", conns)] for r in runs)
        vs_nginx = statistics.median(r[("haboob", conns)] / r[("nginx", conns)] for r in runs)
        rows.append(f"| {conns} | {med['nginx']:,.0f} | {med['uvicorn']:,.0f} | "
                    f"{med['haboob']:,.0f} | {vs_uvicorn:.2f}x (target >= 2) | "
                    f"{vs_nginx:.2f}x (target >= 0.6) |")
    table = ("| connections | nginx req/s | uvicorn req/s | haboob req/s | haboob / uvicorn "
             "| haboob / nginx |\n|---:|---:|---:|---:|---:|---:|\n" + "\n".join(rows) +
             f"\n\nMedians of {args.runs} refbench runs of {args.seconds} s per point.\n")
    result_path("haboob_refbench.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
