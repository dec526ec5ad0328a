"""Haboob holding many idle keep-alive connections: memory, and whether a new request is
still answered promptly (issue 5: 10 000 connections, RSS <= 150 MB, answer within 200 ms).

    python benchmarks/haboob_idle.py [--connections 10000]

The server runs in its own process on core 0; this process (core 1) opens the connections,
makes one request on each, leaves them idle, then reads the server's resident memory and
times a request on a fresh connection. Writes docs/results/haboob_idle.md.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import result_path

REQUEST = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def request(port: int, sock: socket.socket | None = None) -> float:
    """Seconds for one request and its whole response."""
    start = time.perf_counter()
    s = sock or socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(REQUEST)
    got = b""
    while not got.endswith(b"x" * 16):
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError(f"the server closed the connection after {got[:80]!r}")
        got += chunk
    if sock is None:
        s.close()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=10_000)
    args = parser.parse_args()
    os.sched_setaffinity(0, {1})
    root = tempfile.mkdtemp()
    Path(root, "index.html").write_bytes(b"x" * 1024)
    port = 19877
    haboob = Path(sys.executable).with_name("haboob")
    server = subprocess.Popen(["taskset", "-c", "0", str(haboob), "--root", root, "--bind",
                               f"127.0.0.1:{port}"], stdout=subprocess.PIPE, text=True)
    held: list[socket.socket] = []
    try:
        server.stdout.readline()
        baseline = rss_mb(server.pid)
        start = time.monotonic()
        for _ in range(args.connections):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            request(port, s)                 # one request each, then idle
            held.append(s)
        opened = time.monotonic() - start
        rss = rss_mb(server.pid)
        fresh = sorted(request(port) for _ in range(20))
        rows = [("connections held", f"{len(held)} (opened in {opened:.1f} s)"),
                ("server RSS idle before", f"{baseline:.1f} MB"),
                ("server RSS holding them", f"{rss:.1f} MB (target <= 150 MB)"),
                ("per connection", f"{(rss - baseline) * 1024 / len(held):.1f} KB"),
                ("a new request, median of 20", f"{fresh[10] * 1000:.1f} ms"),
                ("a new request, slowest of 20", f"{fresh[-1] * 1000:.1f} ms (target <= 200)")]
    finally:
        for s in held:
            s.close()
        server.terminate()
        server.wait(30)
    table = "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows) + "\n"
    result_path("haboob_idle.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
