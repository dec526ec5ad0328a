"""Command line: ``python -m benchmarks.loadgen closed|open|fileset ...`` (see --help)."""

from __future__ import annotations

import argparse
import os
import sys
from urllib.parse import urlsplit

from .client import closed_loop, open_loop
from .workloads import Workload, fixed, make_fileset, make_webstone_fileset, specweb99, webstone

EXAMPLES = """\
examples:
  # the thesis's closed loop: 1024 clients, 20 ms think, 5 requests per connection
  python -m benchmarks.loadgen closed --url http://127.0.0.1:8000/ --clients 1024 \\
      --think-ms 20 --requests-per-conn 5 --duration 30 --json out.json --cdf out.csv
  # SPECweb99 static mix over a 100 MB file set served from /tmp/spec
  python -m benchmarks.loadgen fileset --kind specweb99 --root /tmp/spec --total-mb 100
  python -m benchmarks.loadgen closed --url http://127.0.0.1:8000/ --workload specweb99 \\
      --root /tmp/spec --duration 30
  # open loop: 2000 Poisson arrivals per second, pinned to core 1
  python -m benchmarks.loadgen open --url http://127.0.0.1:8000/ --rate 2000 --cpu 1
  # raw keep-alive throughput, as wrk measures it
  python -m benchmarks.loadgen closed --url http://127.0.0.1:8080/ --clients 64 \\
      --think-ms 0 --requests-per-conn 0 --duration 5 --cpu 1
"""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", required=True, help="http://host:port/path; the path is the fixed "
                   "workload's path, or the prefix of the file set's paths")
    p.add_argument("--duration", type=float, default=30.0, help="seconds (default 30)")
    p.add_argument("--workload", choices=("fixed", "specweb99", "webstone"), default="fixed")
    p.add_argument("--root", help="file set directory (specweb99: counts its directories)")
    p.add_argument("--dirs", type=int, help="specweb99 directories, instead of counting --root")
    p.add_argument("--dir-dist", choices=("zipf", "uniform"), default="zipf",
                   help="how specweb99 picks a directory (default zipf)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request (default 10)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-requests", type=int, help="stop after issuing this many requests")
    p.add_argument("--json", help="write the full report here")
    p.add_argument("--cdf", help="write the response-time CDF here as CSV (ms,fraction)")
    p.add_argument("--cpu", type=int, help="pin the generator to this core")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when it is a tty and the run >= 3 s)")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.loadgen",
                                 description="HTTP load generator (closed or open loop).",
                                 epilog=EXAMPLES,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    closed = sub.add_parser("closed", help="N clients: request, wait, think, repeat",
                            epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(closed)
    closed.add_argument("--clients", type=int, default=1024)
    closed.add_argument("--think-ms", type=float, default=20.0)
    closed.add_argument("--requests-per-conn", type=int, default=5,
                        help="reconnect after this many requests (0: only when the server closes)")
    opened = sub.add_parser("open", help="Poisson arrivals at a fixed rate",
                            epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(opened)
    opened.add_argument("--rate", type=float, required=True, help="arrivals per second")
    opened.add_argument("--max-conns", type=int, default=1024, help="socket cap (default 1024)")
    fileset = sub.add_parser("fileset", help="write a specweb99 or webstone file set")
    fileset.add_argument("--kind", choices=("specweb99", "webstone"), required=True)
    fileset.add_argument("--root", required=True)
    fileset.add_argument("--total-mb", type=float, default=100.0,
                         help="specweb99 size in MB (default 100)")
    return ap


def _workload(args: argparse.Namespace) -> Workload:
    path = urlsplit(args.url).path or "/"
    if args.workload == "fixed":
        return fixed(path)
    if args.workload == "webstone":
        return webstone(path)
    if args.dirs is None and args.root is None:
        raise SystemExit("--workload specweb99 needs --root or --dirs")
    return specweb99(args.dirs, root=args.root, prefix=path, dir_dist=args.dir_dist)


def main(argv: list[str] | None = None) -> int:
    """Run one command; prints the one-line summary, and writes JSON and CDF files when asked."""
    args = parser().parse_args(argv)
    if args.command == "fileset":
        if args.kind == "webstone":
            make_webstone_fileset(args.root)
            print(f"webstone: 4 files in {args.root}")
        else:
            dirs = make_fileset(args.root, int(args.total_mb * 1024 * 1024))
            print(f"specweb99: {dirs} directories in {args.root}")
        return 0
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    common = dict(duration=args.duration, workload=_workload(args), timeout=args.timeout,
                  seed=args.seed, max_requests=args.max_requests, progress=args.progress)
    if args.command == "closed":
        report = closed_loop(args.url, clients=args.clients, think_ms=args.think_ms,
                             requests_per_conn=args.requests_per_conn, **common)
    else:
        report = open_loop(args.url, rate=args.rate, max_conns=args.max_conns, **common)
    print(report.summary())
    if args.json:
        report.write_json(args.json)
    if args.cdf:
        report.write_cdf(args.cdf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
