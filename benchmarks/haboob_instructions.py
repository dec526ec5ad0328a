"""Instructions per request of Haboob answering a cached 1 KB file: a repeatable measure of the
work per request on a machine whose timings wander by 2x between runs.

    python -m benchmarks.haboob_instructions [--conns 64] [--seconds 8] [--src DIR]
                                            [--app MODULE:NAME] [--keep FILE]
                                            [--syscalls] [--tls] [--close]

With ``--app module:name`` the same is measured for a WSGI or ASGI application answering ``/``
(Haboob tells which, as it does when serving one); ``--keep FILE`` keeps the callgrind output
for ``callgrind_annotate``. ``--tls`` serves it over TLS, and leaves out the handshakes of
wrk's connections (made afresh for the measured run, a few million instructions each: too many
for the few thousand requests valgrind allows). ``--syscalls`` counts system calls and context
switches per request instead (``perf stat`` on the server, no valgrind): the cost of the hops
between threads, which callgrind does not see. ``--close`` sends ``Connection: close`` with
every request: the cost of a connection's whole life, accept to close.

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
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks import certs, wrk
from benchmarks.serving import REPO, free_port, server


def site(app: str | None, work: Path, tls: bool = False) -> tuple[list[str], str]:
    """Haboob's arguments and the URL path to ask for (after ``http[s]://host:port``): the
    1 KB file, or ``app`` at ``/``; over TLS with a throwaway certificate if ``tls``."""
    args = []
    if tls:
        _, cert, key = certs.make(work)
        args = ["--certfile", str(cert), "--keyfile", str(key)]
    if app:
        return [*args, app], "/"
    (work / "www").mkdir()
    rng = random.Random(7)                        # the same 1 KB file as refbench.sh
    (work / "www" / "index.html").write_bytes(bytes(rng.choice(b"abcdefghij")
                                                    for _ in range(1024)))
    return [*args, "--root", str(work / "www")], "/index.html"


def measure(src: Path, app: str | None, conns: int, seconds: int,
            keep: Path | None = None, tls: bool = False,
            headers: tuple[str, ...] = ()) -> tuple[int, int]:
    """(instructions, requests) of one measured run: the 1 KB file, or ``app`` (a WSGI or ASGI
    app, module:name, importable from this checkout) at ``/``."""
    with tempfile.TemporaryDirectory(prefix="haboob-instr-") as tmp:
        work = Path(tmp)
        args, path = site(app, work, tls)
        port, out = free_port(), work / "callgrind.out"
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
               f"--callgrind-out-file={out}", sys.executable, "-m", "haboob",
               "--bind", f"127.0.0.1:{port}", *args]
        env = dict(os.environ, PYTHONPATH=f"{src}:{REPO}")
        with server(cmd, port, env) as proc:
            url = f"{'https' if tls else 'http'}://127.0.0.1:{port}{path}"
            wrk.measure(url, conns, 2, headers=headers)   # warm: the cache, the code paths
            control = ["callgrind_control", str(proc.pid)]
            subprocess.run([*control, "--instr=on"], check=True, capture_output=True)
            requests = wrk.measure(url, conns, seconds, headers=headers).requests
            subprocess.run([*control, "--instr=off"], check=True, capture_output=True)
            subprocess.run([*control, "--dump"], check=True, capture_output=True)
            dumps = sorted(work.glob("callgrind.out*"), key=lambda p: p.stat().st_mtime)
            text = dumps[-1].read_text(errors="replace")
            if keep is not None:
                shutil.copy(dumps[-1], keep)
        total = int(re.search(r"^totals:\s+(\d+)", text, re.M).group(1))
        if tls:
            total -= handshakes(dumps[-1])
        return total, requests


def handshakes(dump: Path) -> int:
    """Instructions spent in TLS handshakes (the ssl module's do_handshake, inclusive)."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(dump)], check=True,
                          capture_output=True, text=True).stdout
    spent = [int(m.group(1).replace(",", "")) for m in
             re.finditer(r"^\s*([\d,]+) .*_ssl__SSLSocket_do_handshake", text, re.M)]
    return max(spent, default=0)


# What a request costs the kernel. A write is a wake-up here: sockets are sent to with sendto,
# so a write is a byte for a sleeping event loop (the socket loop's pipe, uvloop's eventfd).
SYSCALL_EVENTS = {"raw_syscalls:sys_enter": "system calls", "syscalls:sys_enter_write":
                  "wake-ups (writes)", "syscalls:sys_enter_futex": "futex calls",
                  "syscalls:sys_enter_sendto": "sends", "context-switches": "context switches"}


def count_syscalls(src: Path, app: str | None, conns: int, seconds: int,
                   tls: bool = False, headers: tuple[str, ...] = ()
                   ) -> tuple[dict[str, dict[str, int]], int]:
    """({"socket loop" | "other threads": {event: count}}, requests) of one wrk run, counted by
    ``perf stat --per-thread``. The socket loop is the thread that sends."""
    with tempfile.TemporaryDirectory(prefix="haboob-sys-") as tmp:
        work = Path(tmp)
        args, path = site(app, work, tls)
        port, out = free_port(), work / "perf.csv"
        cmd = [sys.executable, "-m", "haboob", "--bind", f"127.0.0.1:{port}", *args]
        env = dict(os.environ, PYTHONPATH=f"{src}:{REPO}")
        with server(cmd, port, env) as proc:
            url = f"{'https' if tls else 'http'}://127.0.0.1:{port}{path}"
            wrk.measure(url, conns, 2, headers=headers)   # warm, as for the instructions
            perf = subprocess.Popen(["perf", "stat", "--per-thread", "-x,", "-o", str(out),
                                     "-e", ",".join(SYSCALL_EVENTS), "-p", str(proc.pid)])
            requests = wrk.measure(url, conns, seconds, headers=headers).requests
            perf.send_signal(signal.SIGINT)
            perf.wait(30)
        threads: dict[str, dict[str, int]] = {}
        for line in out.read_text().splitlines():
            fields = line.split(",")
            if len(fields) > 3 and fields[3] in SYSCALL_EVENTS and fields[1].isdigit():
                threads.setdefault(fields[0], {})[fields[3]] = int(fields[1])
    loop = max(threads, key=lambda t: threads[t].get("syscalls:sys_enter_sendto", 0))
    others = {e: sum(t.get(e, 0) for name, t in threads.items() if name != loop)
              for e in SYSCALL_EVENTS}
    return {"socket loop": threads[loop], "other threads": others}, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conns", type=int, default=64)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--src", type=Path, default=REPO / "src",
                        help="the src/ directory to measure (default: this checkout's)")
    parser.add_argument("--app", help="a WSGI or ASGI app to measure instead of the file, "
                        "e.g. benchmarks.wsgi_apps:hello or benchmarks.asgi_apps:hello")
    parser.add_argument("--keep", type=Path, help="copy the callgrind output here")
    parser.add_argument("--tls", action="store_true", help="over TLS (a throwaway certificate)")
    parser.add_argument("--syscalls", action="store_true",
                        help="count system calls and context switches instead (perf stat)")
    parser.add_argument("--close", action="store_true",
                        help="a new connection for every request (Connection: close)")
    args = parser.parse_args()
    headers = ("Connection: close",) if args.close else ()
    tools = ("perf", "wrk") if args.syscalls else ("valgrind", "callgrind_control", "wrk")
    for tool in tools:
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is needed (apt-get install valgrind linux-perf wrk)")
    if args.syscalls:
        counts, requests = count_syscalls(args.src.resolve(), args.app, args.conns,
                                          args.seconds, args.tls, headers)
        print(f"{args.src}: {requests} requests ({args.conns} connections), per request:")
        for event, label in SYSCALL_EVENTS.items():
            loop, other = (counts[t].get(event, 0) / requests for t in counts)
            print(f"  {label:18} {loop + other:7.2f}  (socket loop {loop:.2f}, "
                  f"other threads {other:.2f})")
        return
    total, requests = measure(args.src.resolve(), args.app, args.conns, args.seconds,
                              args.keep, args.tls, headers)
    print(f"{args.src}: {requests} requests, {total:,} instructions, "
          f"{total // requests:,} per request ({args.conns} connections)")


if __name__ == "__main__":
    main()
