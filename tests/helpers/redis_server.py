"""A throwaway Redis server for the cluster tests (not named redis.py: a script run from this
directory would import it for the client library): Debian's ``redis-server`` on a free loopback
port, its own temporary directory, the append-only file on and synced at every write (so a
server killed with SIGKILL loses nothing it acknowledged: what the restart tests rely on).

``server()`` is one server for the whole test session, started by the first test that asks and
stopped when the session's process exits; ``Server()`` is a server of one's own, for a test that
kills or restarts it. Where ``redis-server`` or the ``redis`` client library is missing, or the
server cannot start, the test is skipped, saying why (``make test`` installs the package where
apt-get can run as root).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import WAIT


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _binary() -> str | None:
    return shutil.which("redis-server") or next(
        (p for p in ("/usr/bin/redis-server", "/usr/sbin/redis-server") if os.path.exists(p)),
        None)


class Server:
    """One ``redis-server`` process; ``kill``/``start`` restart it on the same port and data."""

    def __init__(self) -> None:
        binary = _binary()
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install "
                               "redis-server)")
        self.binary = binary
        self.dir = Path(tempfile.mkdtemp(prefix="seda-redis-"))
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        try:
            self.start()
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (again, after ``kill``: it reloads its append-only file)."""
        argv = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
                "--dir", str(self.dir), "--appendonly", "yes", "--appendfsync", "always",
                "--save", "", "--daemonize", "no", "--logfile", str(self.dir / "log")]
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        deadline = time.monotonic() + WAIT
        while not self.ping():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self._abandon()
                log = self.dir / "log"
                tail = log.read_text(errors="replace")[-600:] if log.exists() else ""
                raise RuntimeError(f"redis-server did not start on port {self.port}: {tail}")
            time.sleep(0.02)

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
                s.sendall(b"PING\r\n")
                return s.recv(64).startswith(b"+PONG")
        except OSError:
            return False

    def client(self, **options: Any) -> Any:
        import redis
        return redis.Redis.from_url(self.url, **options)

    def kill(self) -> None:
        """SIGKILL: no chance to save anything beyond what the append-only file holds."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(WAIT)
        self.proc = None

    def _abandon(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)
        self.proc = None

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._abandon()
        shutil.rmtree(self.dir, ignore_errors=True)


_server: Server | None = None
_failure: str | None = None


def _check() -> str | None:
    try:
        import redis  # noqa: F401
    except ImportError:
        return "the redis client library is not installed (pip install -e '.[cluster]')"
    if _binary() is None:
        return "redis-server is not installed (Debian: apt-get install redis-server)"
    return None


def own_server() -> Server:
    """A server of the calling test's own (to kill and restart); skips where it cannot run.
    The caller stops it."""
    problem = _check()
    if problem is None:
        try:
            return Server()
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            problem = f"cannot start redis-server: {exc}"
    pytest.skip(f"cluster queue not tested: {problem}")


def server() -> Server:
    """The session's server, started on first use, emptied for each caller; skips the calling
    test where Redis cannot run."""
    global _server, _failure
    if _server is None and _failure is None:
        _failure = _check()
        if _failure is None:
            try:
                _server = Server()
                atexit.register(_server.stop)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                _failure = f"cannot start redis-server: {exc}"
    if _server is None:
        pytest.skip(f"cluster queue not tested: {_failure}")
    with _server.client() as client:
        client.flushall()
    return _server
