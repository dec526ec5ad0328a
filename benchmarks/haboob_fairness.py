"""Haboob's fairness under many clients (thesis 6.1.4, Fig. 37-39): 1024 closed-loop clients,
each requesting, thinking 20 ms, and reconnecting after 5 requests, over a SPECweb99 file set.
Targets: Jain's fairness index over per-client request counts >= 0.95, no errors, maximum
response time <= 2 s.

    python -m benchmarks.haboob_fairness [--clients 1024] [--duration 30] [--fileset-mb 100]

Haboob on core 0, the load generator on core 1. Writes docs/results/haboob_fairness.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from benchmarks.loadgen import closed_loop, make_fileset, specweb99
from benchmarks.results import result_path
from benchmarks.serving import free_port, server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=1024)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--fileset-mb", type=float, default=100.0)
    args = parser.parse_args()
    os.sched_setaffinity(0, {1})
    with tempfile.TemporaryDirectory() as root:
        make_fileset(root, int(args.fileset_mb * 2**20))
        port = free_port()
        cmd = [sys.executable, "-m", "haboob", "--root", root, "--bind", f"127.0.0.1:{port}"]
        with server(cmd, port):
            r = closed_loop(f"http://127.0.0.1:{port}/", clients=args.clients, think_ms=20,
                            requests_per_conn=5, duration=args.duration,
                            workload=specweb99(root=root))
    print(r.summary())
    e = r.errors
    verdict = (f"Jain {r.fairness:.3f} ({'meets' if r.fairness >= 0.95 else 'misses'} >= 0.95), "
               f"errors {e.total} ({'meets' if e.total == 0 else 'misses'} 0), max "
               f"{r.max_ms:.0f} ms ({'meets' if r.max_ms <= 2000 else 'misses'} <= 2000 ms)")
    counts = sorted(r.per_client)
    text = (f"# Haboob fairness, {args.clients} clients\n\nClosed loop: {args.clients} clients, "
            f"20 ms think time, 5 requests per connection (response time includes the connect),"
            f" {args.duration:g} s, SPECweb99 file set of {args.fileset_mb:g} MB. Haboob on core"
            f" 0, load generator on core 1.\n\n"
            f"| req/s | Mbit/s | mean ms | p50 ms | p90 ms | p99 ms | max ms | errors | Jain "
            f"| requests per client (min / median / max) |\n"
            f"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
            f"| {r.throughput:.0f} | {r.mbit_s:.0f} | {r.mean_ms:.1f} | {r.p50_ms:.1f} | "
            f"{r.p90_ms:.1f} | {r.p99_ms:.1f} | {r.max_ms:.0f} | {e.total} | {r.fairness:.3f} | "
            f"{counts[0]} / {counts[len(counts) // 2]} / {counts[-1]} |\n\n{verdict}\n")
    result_path("haboob_fairness.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
