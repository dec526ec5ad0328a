"""A throwaway PostgreSQL server for the Arashi tests that run against both backends: Debian's
``postgresql`` package (``/usr/lib/postgresql/N/bin``, or ``initdb`` on the PATH), a cluster
made by ``initdb`` in a temporary directory, and the server listening on a Unix socket in that
directory only (no TCP port). Run as root, it runs as an unprivileged system user
(``arashi-pg``, made with ``useradd`` when missing; ``nobody`` failing that), as PostgreSQL
insists. One server for the whole test session, started by the first test that asks, stopped
and removed when the session's process exits; each test gets a database of its own.

Where PostgreSQL is not installed or cannot start, ``database_url("postgresql", ...)`` skips the
test, saying why (``make test`` installs the package where apt-get can run as root).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from arashi.db import database_url as sqlite_url

BACKENDS = ["sqlite", "postgresql"]
USER = "arashi-pg"


def _bin() -> Path | None:
    """The directory of initdb, pg_ctl and postgres: the newest Debian version, or the PATH's."""
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    if versions:
        return versions[-1].parent
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _account() -> str | None:
    """The user to run PostgreSQL as (None: as ourselves, who are not root)."""
    if os.geteuid() != 0:
        return None
    try:
        import pwd
        pwd.getpwnam(USER)
        return USER
    except KeyError:
        pass
    made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                           "/usr/sbin/nologin", USER], capture_output=True)
    return USER if made.returncode == 0 else "nobody"


class Server:
    def __init__(self) -> None:
        bindir = _bin()
        if bindir is None:
            raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        self.user = _account()
        self.dir = Path(tempfile.mkdtemp(prefix="arashi-pg-"))
        self.data = self.dir / "data"
        self.pg_ctl = bindir / "pg_ctl"
        self._names = itertools.count(1)
        try:
            if self.user is not None:
                shutil.chown(self.dir, self.user)
            os.chmod(self.dir, 0o755)
            self._run([str(bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                       "--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync"])
            options = (f"-k {self.dir} -c listen_addresses='' -c fsync=off "
                       "-c max_connections=300 -c shared_buffers=32MB")
            self._run([str(self.pg_ctl), "-D", str(self.data), "-o", options, "-l",
                       str(self.dir / "log"), "-w", "-t", "60", "start"])
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise
        self.running = True

    def _run(self, argv: list[str]) -> None:
        if self.user is not None:
            argv = ["runuser", "-u", self.user, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=self.dir, timeout=120)
        if done.returncode != 0:
            log = self.dir / "log"
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            name = Path(argv[0 if self.user is None else 3]).name
            said = (done.stderr or done.stdout).strip()[-800:]
            raise RuntimeError(f"{name} failed: {said} {tail}")

    def url(self, name: str = "postgres") -> str:
        return f"postgresql://postgres@/{name}?host={self.dir}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg
        name = f"arashi_test_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        if getattr(self, "running", False):
            self.running = False
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._run([str(self.pg_ctl), "-D", str(self.data), "-m", "immediate", "-w",
                           "stop"])
        shutil.rmtree(self.dir, ignore_errors=True)


_server: Server | None = None
_failure: str | None = None


def server() -> Server:
    """The session's server, started on first use; skips the calling test where it cannot."""
    global _server, _failure
    if _server is None and _failure is None:
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError:
            _failure = "psycopg or psycopg_pool is not installed (pip install -e '.[test]')"
        else:
            try:
                _server = Server()
                atexit.register(_server.stop)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                _failure = f"cannot start a PostgreSQL server: {exc}"
    if _server is None:
        pytest.skip(f"PostgreSQL backend not tested: {_failure}")
    return _server


def database_url(backend: str, data: Path) -> str:
    """A URL for an empty database of ``backend``: SQLite's in the data directory ``data``
    (made), or a new database on the session's PostgreSQL server."""
    if backend == "sqlite":
        data.mkdir(parents=True, exist_ok=True)
        return sqlite_url(data)
    return server().new_database()
