"""Servers under test as child processes: pinned to core 0, ready once they accept."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(cmd: list[str], port: int, env: dict[str, str] | None = None,
           ) -> Iterator[subprocess.Popen]:
    """Run ``cmd`` from the repository on core 0 until the block ends; its port must accept
    within 30 s. Yields the process (its pid is the server's: taskset execs it)."""
    proc = subprocess.Popen(["taskset", "-c", "0", *cmd], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{cmd[0]} did not start")
            time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
