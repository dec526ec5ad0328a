"""Command line of the web-server study: what to measure, how long, where the results go."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from benchmarks.results import RESULTS
from benchmarks.webstudy import plots, tables
from benchmarks.webstudy.servers import CANDIDATES
from benchmarks.webstudy.study import Settings, highlighted, run, write_json

CLIENTS = "1,4,16,64,256,1024"


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 120 else f"{seconds:g} s"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.webstudy",
        description="Haboob beside other web servers, as in the thesis's Fig. 37-40.",
        epilog=f"servers: {', '.join(CANDIDATES)}. Example: python -m benchmarks.webstudy "
               f"--servers haboob,sped --clients 1,64 --duration 10 --out /tmp/study")
    parser.add_argument("--servers", default=",".join(CANDIDATES),
                        help="comma-separated (default: all)")
    parser.add_argument("--clients", type=_ints, default=_ints(CLIENTS),
                        help=f"client counts, comma-separated (default {CLIENTS})")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per run (30)")
    parser.add_argument("--think-ms", type=float, default=20.0, help="client think time (20)")
    parser.add_argument("--requests-per-conn", type=int, default=5,
                        help="requests before a client reconnects (5)")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds before a response counts as an error (60)")
    parser.add_argument("--fileset-mb", type=float, default=100.0,
                        help="SPECweb99 file set size (100)")
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help="directory for webstudy.md, .json and .png (docs/results)")
    parser.add_argument("--cpu", type=int, default=1,
                        help="core for the load generator; servers run on core 0 (1)")
    args = parser.parse_args(argv)
    args.servers = args.servers.split(",")
    unknown = [s for s in args.servers if s not in CANDIDATES]
    if unknown:
        parser.error(f"unknown server {', '.join(unknown)}; known: {', '.join(CANDIDATES)}")
    if args.duration <= 0 or not args.clients or min(args.clients) < 1:
        parser.error("--duration and --clients must be positive")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    settings = Settings(args.servers, args.clients, args.duration, args.think_ms,
                        args.requests_per_conn, args.timeout, args.fileset_mb)
    print(f"{len(args.servers)} servers x {len(args.clients)} client counts x "
          f"{args.duration:g} s = {_duration(settings.load_seconds())} of load, plus start-up",
          flush=True)
    if args.cpu in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {args.cpu})
    else:
        print(f"core {args.cpu} is not available: the load generator is not pinned")
    args.out.mkdir(parents=True, exist_ok=True)
    results = run(settings, args.out, lambda line: print(line, flush=True))
    write_json(results, args.out / "webstudy.json")
    names = ["webstudy_throughput.png"]
    plots.throughput(results, args.out / names[0])
    for clients in highlighted(args.clients):
        names.append(f"webstudy_cdf_{clients}.png")
        plots.cdf(results, clients, args.out / names[-1])
    command = shlex.join(["python", "-m", "benchmarks.webstudy",
                          *(argv if argv is not None else sys.argv[1:])])
    (args.out / "webstudy.md").write_text(tables.markdown(results, command, names))
    print(f"wrote {args.out / 'webstudy.md'}, webstudy.json and {', '.join(names)}")


if __name__ == "__main__":
    main()
