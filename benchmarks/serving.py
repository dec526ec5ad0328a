"""Servers under test as child processes: pinned to core 0, ready once they accept."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cpu_seconds(pid: int) -> float:
    """User and system CPU time process ``pid`` and its live children (a gunicorn's workers)
    have used so far, threads included: read before and after a run, the work per request,
    which a shared machine's noise moves far less than the requests per second."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()   # (the name may hold spaces)
    total = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = [int(child) for child in f.read().split()]
    except OSError:                                     # gone, or no such file here
        children = []
    for child in children:
        with contextlib.suppress(OSError):             # (it may have exited meanwhile)
            total += cpu_seconds(child)
    return total


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(cmd: list[str], port: int, env: dict[str, str] | None = None,
           ) -> Iterator[subprocess.Popen]:
    """Run ``cmd`` from the repository on core 0 until the block ends; its port must accept
    within 30 s. Yields the process (its pid is the server's: taskset execs it). A server that
    does not start is reported with the end of what it wrote to standard error."""
    # a file, not a pipe: a chatty server never blocks on it
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(["taskset", "-c", "0", *cmd], cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=errors, env=env)
        try:
            deadline = time.monotonic() + 30
            while True:
                with contextlib.suppress(OSError), \
                        socket.create_connection(("127.0.0.1", port), 1):
                    break
                if time.monotonic() > deadline or proc.poll() is not None:
                    errors.seek(0)
                    said = errors.read()[-2000:].decode(errors="replace").strip()
                    why = "exited" if proc.poll() is not None else "did not accept in 30 s"
                    raise RuntimeError(f"{cmd[0]} did not start ({why}): "
                                       f"{said or 'nothing on stderr'}")
                time.sleep(0.1)
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
