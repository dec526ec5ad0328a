"""Haboob under a load spike (issue 5; thesis 7.3 in a web server): a WSGI application burning
5 ms of CPU per request, open-loop Poisson arrivals at half its capacity, then 4x its capacity,
then half again. With ``--target-p90 100`` admitted requests should keep p90 <= 300 ms with
goodput >= 60 % of capacity, and the rest get immediate 503s. The same spike on Haboob without
admission control and on gunicorn (one sync worker) for contrast. With ``--asgi``, the same
on an ASGI application burning its 5 ms on the event loop (issue 19): Haboob with and without
admission control beside uvicorn, which has none.

    python -m benchmarks.haboob_overload [--spike 30] [--calm 10] [--asgi]

Servers on core 0, the load generator on core 1. Writes docs/results/haboob_overload.md
(haboob_overload_asgi.md with --asgi).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from benchmarks.loadgen import closed_loop, open_loop
from benchmarks.results import result_path
from benchmarks.serving import free_port, server

APP = "benchmarks.wsgi_apps:burn"
ASGI_APP = "benchmarks.asgi_apps:burn"


def servers(port: int, target_ms: float) -> dict[str, list[str]]:
    haboob = [sys.executable, "-m", "haboob", APP, "--bind", f"127.0.0.1:{port}"]
    out = {f"haboob --target-p90 {target_ms:g}": [*haboob, "--target-p90", str(target_ms)],
           f"haboob --target-p90 {target_ms:g} --threads 2": [*haboob, "--target-p90",
                                                               str(target_ms), "--threads", "2"],
           "haboob (no admission control)": haboob}
    if importlib.util.find_spec("gunicorn") is not None:      # the bench extra has it
        out["gunicorn (1 sync worker)"] = [sys.executable, "-m", "gunicorn", "-w", "1", "-b",
                                           f"127.0.0.1:{port}", "--backlog", "2048", APP]
    return out


def asgi_servers(port: int, target_ms: float) -> dict[str, list[str]]:
    haboob = [sys.executable, "-m", "haboob", ASGI_APP, "--bind", f"127.0.0.1:{port}"]
    out = {f"haboob --target-p90 {target_ms:g}": [*haboob, "--target-p90", str(target_ms)],
           "haboob (no admission control)": haboob}
    if importlib.util.find_spec("uvicorn") is not None:      # the bench extra has it
        out["uvicorn (uvloop, httptools)"] = [
            sys.executable, "-m", "uvicorn", ASGI_APP, "--host", "127.0.0.1", "--port",
            str(port), "--loop", "uvloop", "--http", "httptools", "--backlog", "2048",
            "--no-access-log", "--log-level", "warning"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spike", type=float, default=30.0, help="seconds at 4x capacity")
    parser.add_argument("--calm", type=float, default=10.0, help="seconds at half before/after")
    parser.add_argument("--target-ms", type=float, default=100.0)
    parser.add_argument("--factor", type=float, default=4.0)
    parser.add_argument("--only", help="run only the servers whose name contains this")
    parser.add_argument("--asgi", action="store_true",
                        help="an ASGI application, Haboob beside uvicorn")
    args = parser.parse_args()
    os.sched_setaffinity(0, {1})
    port = free_port()
    rows = []
    capacity = None
    commands = (asgi_servers if args.asgi else servers)(port, args.target_ms)
    for name, cmd in commands.items():
        if args.only and args.only not in name:
            continue
        with server(cmd, port):
            url = f"http://127.0.0.1:{port}/"
            if capacity is None:          # the application's capacity, on Haboob, unloaded
                probe = closed_loop(url, clients=4, think_ms=0, requests_per_conn=0,
                                    duration=10)
                print(f"capacity: {probe.summary()}", flush=True)
                capacity = probe.throughput
                if not capacity:
                    raise RuntimeError("the capacity probe got no responses")
            phases = [("before", 0.5, args.calm), ("spike", args.factor, args.spike),
                      ("after", 0.5, args.calm)]
            for phase, factor, seconds in phases:
                r = open_loop(url, rate=factor * capacity, max_conns=4000, duration=seconds,
                              timeout=30, seed=len(rows))
                e = r.errors
                print(f"{name} {phase}: {r.summary()}", flush=True)
                rows.append(f"| {name} | {phase} ({factor:g}C) | {r.p90_ms:.0f} | "
                            f"{r.max_ms:.0f} | {r.throughput / capacity:.2f} | {e.rejected} | "
                            f"{r.rejected_p90_ms:.1f} | {e.total - e.rejected} |")
    table = ("| server | phase | p90 ms (2xx) | max ms (2xx) | goodput / C | 503s | "
             "503 p90 ms | other errors |\n|---|---|---:|---:|---:|---:|---:|---:|\n" +
             "\n".join(rows))
    kind = "An ASGI application" if args.asgi else "A WSGI application"
    text = (f"# Haboob under a {args.factor:g}x spike\n\n{kind}: 5 ms of CPU per "
            f"request, capacity C = {capacity:.0f} req/s (measured on Haboob, 4 clients, "
            f"no think time). Open-loop Poisson arrivals: {args.calm:g} s at 0.5C, "
            f"{args.spike:g} s at {args.factor:g}C, {args.calm:g} s at 0.5C. Target p90 "
            f"{args.target_ms:g} ms. Server on core 0, load generator on core 1.\n\n{table}\n")
    result_path("haboob_overload_asgi.md" if args.asgi else "haboob_overload.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
