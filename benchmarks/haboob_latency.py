"""Haboob's latency distribution beside nginx's, on refbench's 1 KB file: not just the p99
refbench reports, but p50 to p99.9 and the longest request, which tell a tail that comes from
a share of requests waiting a second round of the loop from one that comes from pauses.

    python -m benchmarks.haboob_latency [--runs 3] [--seconds 5] [--conns 64,1024]
        [--before /tmp/old/src]

Each server alone on core 0 (nginx: one worker, sendfile, ``open_file_cache``), wrk on core 1,
keep-alive, a second of warm-up per start; every run measures every server in turn. With
``--before`` (another checkout's ``src/``) that build of Haboob is measured too. Medians per
server and connection count go to docs/results/haboob_latency.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks import wrk
from benchmarks.asgi_apps import BODY
from benchmarks.results import result_path
from benchmarks.serving import REPO, free_port, server
from benchmarks.steal import Steal
from benchmarks.webstudy.servers import nginx_command

POINTS = (50, 90, 95, 99, 99.9)


def command(name: str, work: Path, port: int, before: Path | None
            ) -> tuple[list[str], dict[str, str] | None]:
    """Server ``name``'s command line for ``port``, and its environment (None: this one's)."""
    root = str(work / "www")
    if name == "nginx":
        return nginx_command(root, port, work, open_files=1000), None
    src = before if name == "haboob before" else REPO / "src"
    return ([sys.executable, "-m", "haboob", "--root", root, "--bind", f"127.0.0.1:{port}"],
            dict(os.environ, PYTHONPATH=f"{src}:{REPO}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--conns", default="64,1024", help="connection counts, comma separated")
    parser.add_argument("--before", type=Path, help="another build's src/, measured too")
    args = parser.parse_args()
    conns = [int(c) for c in args.conns.split(",")]
    # (server, conns) -> one (req/s, {percentile: ms}) per run
    seen: dict[tuple[str, int], list[tuple[float, dict[float, float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="haboob-latency-") as tmp, Steal() as steal:
        work = Path(tmp)
        work.chmod(0o755)                      # nginx's worker runs as nobody
        (work / "www").mkdir()
        (work / "www" / "index.html").write_bytes(BODY)
        before = args.before.resolve() if args.before else None
        names = ["nginx", "haboob"] + (["haboob before"] if before else [])
        for i in range(args.runs):
            for name in names:
                port = free_port()
                url = f"http://127.0.0.1:{port}/index.html"
                cmd, env = command(name, work, port, before)
                with server(cmd, port, env):
                    wrk.measure(url, 64, 1)    # warm up
                    for c in conns:
                        m, dist = wrk.distribution(url, c, args.seconds, work, POINTS)
                        seen.setdefault((name, c), []).append((m.rps, dist))
                        print(f"run {i + 1}: {name}@{c}: {m.rps:,.0f} req/s, "
                              + ", ".join(f"p{p:g} {ms:.3f}" for p, ms in dist.items()),
                              flush=True)
    header = "".join(f" p{p:g} |" for p in POINTS)
    lines = [f"| server | connections | req/s |{header} longest |",
             "|---|---:|---:|" + "---:|" * (len(POINTS) + 1)]
    for (name, c), runs in sorted(seen.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cells = [statistics.median(d[p] for _, d in runs) for p in (*POINTS, 100)]
        lines.append(f"| {name} | {c} | {statistics.median(r for r, _ in runs):,.0f} | "
                     + " | ".join(f"{ms:.3f}" for ms in cells) + " |")
    table = ("\n".join(lines) + f"\n\nMilliseconds; medians of {args.runs} runs of "
             f"{args.seconds} s per point, each server alone on core 0, wrk -t1 on core 1, "
             f"keep-alive, refbench's 1 KB file. {steal.sentence()}\n")
    result_path("haboob_latency.md").write_text(
        "# Haboob's latency distribution beside nginx's\n\n"
        "    python -m benchmarks.haboob_latency " + " ".join(sys.argv[1:]) + "\n\n" + table)
    print(table)


if __name__ == "__main__":
    main()
