"""Haboob's and nginx's CPU per request on refbench's 1 KB file, split into user and system
time: where each server's time goes when both keep their core busy (issue 20).

    python -m benchmarks.cpu_split [--runs 8] [--seconds 6] [--conns 64] [--close]
        [--python PY ...]

Each run starts nginx (one worker, sendfile, an open-file cache) and then Haboob, each pinned
to core 0 with wrk on core 1, warms it for 2 s, and reads the server's user and system time
(``/proc/<pid>/stat``, its workers' included) around one measured run. The runs alternate
servers minutes apart at most, so each ratio compares like with like; medians are printed.
``--close`` sends ``Connection: close`` with every request (a new connection each), and
"busy" then tells whether the server kept its core busy or waited for the client.
``--python`` (repeatable) runs Haboob under each interpreter given (a venv's python with
pyseda installed) in every run, to compare interpreter builds; by default, this one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks import wrk
from benchmarks.haboob_instructions import site
from benchmarks.serving import free_port, server
from benchmarks.steal import Steal
from benchmarks.webstudy.servers import nginx_command

TICK = os.sysconf("SC_CLK_TCK")


def times(pid: int) -> tuple[float, float]:
    """User and system seconds of ``pid`` and its children (nginx's worker) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    user, system = int(fields[11]) / TICK, int(fields[12]) / TICK
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        for child in f.read().split():
            more = times(int(child))
            user, system = user + more[0], system + more[1]
    return user, system


def one(name: str, work: Path, conns: int, seconds: int,
        python: str = sys.executable, headers: tuple[str, ...] = ()) -> dict[str, float]:
    """One measured run of ``name`` ("nginx" or "haboob", under ``python``) over the file in
    ``work``/www: its rate, p99 and µs a request."""
    port, path = free_port(), "/index.html"
    if name == "nginx":
        cmd = nginx_command(str(work / "www"), port, work, open_files=1000)
    else:
        cmd = [python, "-m", "haboob", "--bind", f"127.0.0.1:{port}",
               "--root", str(work / "www")]
    url = f"http://127.0.0.1:{port}{path}"
    with server(cmd, port) as proc:
        wrk.measure(url, conns, 2, headers=headers)
        user, system = times(proc.pid)
        m = wrk.measure(url, conns, seconds, headers=headers)
        after = times(proc.pid)
    per = 1e6 / m.requests
    return {"rps": m.rps, "p99_ms": m.p99_ms, "user_us": (after[0] - user) * per,
            "system_us": (after[1] - system) * per,
            "busy": (after[0] - user + after[1] - system) / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--conns", type=int, default=64)
    parser.add_argument("--close", action="store_true",
                        help="a new connection for every request")
    parser.add_argument("--python", action="append", help="run Haboob under this interpreter")
    args = parser.parse_args()
    headers = ("Connection: close",) if args.close else ()
    pythons = args.python or [sys.executable]
    # Haboob's name in the report: "haboob", or with its interpreter when there are several
    names = {"haboob" if len(pythons) == 1 else f"haboob ({py})": py for py in pythons}
    runs: dict[str, list[dict[str, float]]] = {"nginx": [], **{name: [] for name in names}}
    with tempfile.TemporaryDirectory(prefix="cpu-split-") as tmp, Steal() as steal:
        work = Path(tmp)
        work.chmod(0o755)                      # nginx's worker reads the file as nobody
        site(None, work)                       # refbench's 1 KB file, in work/www
        for i in range(args.runs):
            for name, done in runs.items():
                if name == "nginx":
                    done.append(one(name, work, args.conns, args.seconds, headers=headers))
                else:
                    done.append(one("haboob", work, args.conns, args.seconds, names[name],
                                    headers))
                r = done[-1]
                print(f"run {i + 1} {name}: {r['rps']:,.0f} req/s, p99 {r['p99_ms']:.2f} ms, "
                      f"user {r['user_us']:.2f} µs, system {r['system_us']:.2f} µs a request, "
                      f"busy {r['busy']:.0%}", flush=True)
    for name, done in runs.items():
        med = {k: statistics.median(r[k] for r in done) for k in done[0]}
        print(f"{name} (medians of {args.runs}): {med['rps']:,.0f} req/s, p99 "
              f"{med['p99_ms']:.2f} ms, user {med['user_us']:.2f} + system "
              f"{med['system_us']:.2f} = {med['user_us'] + med['system_us']:.2f} µs a request, "
              f"busy {med['busy']:.0%}")
    for name in names:
        ratios = [h["rps"] / n["rps"] for h, n in zip(runs[name], runs["nginx"], strict=True)]
        print(f"{name} / nginx, median of each run's: {statistics.median(ratios):.2f}x")
    print(steal.sentence())


if __name__ == "__main__":
    main()
