"""Instructions per request of Haboob answering a cached 1 KB file: a repeatable measure of the
work per request on a machine whose timings wander by 2x between runs.

    python -m benchmarks.haboob_instructions [--conns 64] [--seconds 8] [--src DIR]
                                            [--app MODULE:NAME] [--keep FILE]

With ``--app module:name`` the same is measured for a WSGI application answering ``/``;
``--keep FILE`` keeps the callgrind output for ``callgrind_annotate``.

Haboob runs under ``valgrind --tool=callgrind`` on core 0 with instrumentation off. After a
warm-up, instrumentation is switched on for one wrk run on core 1, off again, and the count is
dumped: user-space instructions (the kernel's share of send and recv is not counted) divided by
the requests wrk completed. Two runs of the same build agree within a few per cent, whatever else
the machine is doing, so a change to the hot path can be judged by one run before and one after.
``--src`` measures another checkout's ``src/`` (a git worktree of the commit before a change).
Timer work (the once-a-second sweep) is spread over the few requests valgrind's slowness allows,
so counts at 1024 connections read high; compare like with like.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.serving import REPO, free_port, server


def wrk(port: int, path: str, conns: int, seconds: int) -> int:
    """Requests completed by one wrk run from core 1."""
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{seconds}s",
                          f"http://127.0.0.1:{port}{path}"],
                         capture_output=True, text=True, check=True).stdout
    return int(re.search(r"(\d+) requests in", out).group(1))


def measure(src: Path, app: str | None, conns: int, seconds: int,
            keep: Path | None = None) -> tuple[int, int]:
    """(instructions, requests) of one measured run: the 1 KB file, or ``app`` (a WSGI app,
    module:name, importable from this checkout) at ``/``."""
    with tempfile.TemporaryDirectory(prefix="haboob-instr-") as tmp:
        work = Path(tmp)
        (work / "www").mkdir()
        rng = random.Random(7)                    # the same 1 KB file as refbench.sh
        (work / "www" / "index.html").write_bytes(bytes(rng.choice(b"abcdefghij")
                                                        for _ in range(1024)))
        port, out = free_port(), work / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
               f"--callgrind-out-file={out}", sys.executable, "-m", "haboob",
               "--bind", f"127.0.0.1:{port}",
               *([app] if app else ["--root", str(work / "www")])]
        path = "/" if app else "/index.html"
        env = dict(os.environ, PYTHONPATH=f"{src}:{REPO}")
        with server(cmd, port, env) as proc:
            wrk(port, path, conns, 2)                   # warm: the cache, the code paths
            control = ["callgrind_control", str(proc.pid)]
            subprocess.run([*control, "--instr=on"], check=True, capture_output=True)
            requests = wrk(port, path, conns, seconds)
            subprocess.run([*control, "--instr=off"], check=True, capture_output=True)
            subprocess.run([*control, "--dump"], check=True, capture_output=True)
            dumps = sorted(work.glob("callgrind.out*"), key=lambda p: p.stat().st_mtime)
            text = dumps[-1].read_text(errors="replace")
            if keep is not None:
                shutil.copy(dumps[-1], keep)
        total = int(re.search(r"^totals:\s+(\d+)", text, re.M).group(1))
        return total, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conns", type=int, default=64)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--src", type=Path, default=REPO / "src",
                        help="the src/ directory to measure (default: this checkout's)")
    parser.add_argument("--app", help="a WSGI app to measure instead of the file, e.g. "
                        "benchmarks.wsgi_apps:hello")
    parser.add_argument("--keep", type=Path, help="copy the callgrind output here")
    args = parser.parse_args()
    for tool in ("valgrind", "callgrind_control", "wrk"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is needed (apt-get install valgrind wrk)")
    total, requests = measure(args.src.resolve(), args.app, args.conns, args.seconds,
                              args.keep)
    print(f"{args.src}: {requests} requests, {total:,} instructions, "
          f"{total // requests:,} per request ({args.conns} connections)")


if __name__ == "__main__":
    main()
