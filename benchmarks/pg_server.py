"""A throwaway PostgreSQL server, for the Arashi benchmarks and (through
``tests/helpers/postgres.py``, which adds pytest's skipping) the tests: Debian's
``postgresql`` package (``/usr/lib/postgresql/N/bin``, or ``initdb`` on the PATH), a cluster
made by ``initdb`` in a temporary directory, listening on a Unix socket in that directory only
(no TCP port), with ``fsync=off``. Run as root, it runs as the unprivileged system user
``arashi-pg`` (made with ``useradd`` when missing; ``nobody`` failing that), as PostgreSQL
insists. ``cores`` pins the server (and so every backend process it forks) with ``taskset``.
Failing to start raises RuntimeError (or ImportError without psycopg), saying why.

    with PgServer(cores="0") as pg:
        url = pg.new_database("run1", template="loaded")
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

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
    import pwd
    with contextlib.suppress(KeyError):
        pwd.getpwnam(USER)
        return USER
    made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                           "/usr/sbin/nologin", USER], capture_output=True)
    return USER if made.returncode == 0 else "nobody"


class PgServer:
    def __init__(self, cores: str | None = None, max_connections: int = 300,
                 shared_buffers: str = "128MB") -> None:
        bindir = _bin()
        if bindir is None:
            raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        import psycopg  # noqa: F401  (fail before initdb when the client is missing)
        self.user = _account()
        self.dir = Path(tempfile.mkdtemp(prefix="arashi-pg-"))
        self.data = self.dir / "data"
        self.pg_ctl = bindir / "pg_ctl"
        self.running = False
        try:
            if self.user is not None:
                shutil.chown(self.dir, self.user)
            os.chmod(self.dir, 0o755)
            self._run([str(bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                       "--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync"])
            options = (f"-k {self.dir} -c listen_addresses='' -c fsync=off "
                       f"-c max_connections={max_connections} "
                       f"-c shared_buffers={shared_buffers}")
            start = [str(self.pg_ctl), "-D", str(self.data), "-o", options, "-l",
                     str(self.dir / "log"), "-w", "-t", "60", "start"]
            self._run(["taskset", "-c", cores, *start] if cores else start)
            self.running = True
        except BaseException:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise

    def _run(self, argv: list[str]) -> None:
        if self.user is not None:
            argv = ["runuser", "-u", self.user, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=self.dir, timeout=120)
        if done.returncode != 0:
            log = self.dir / "log"
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            said = (done.stderr or done.stdout).strip()[-800:]
            raise RuntimeError(f"{' '.join(argv[:6])} failed: {said} {tail}")

    def url(self, name: str = "postgres") -> str:
        return f"postgresql://postgres@/{name}?host={self.dir}"

    def _admin(self, sql: str) -> None:
        import psycopg
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self, name: str, template: str | None = None) -> str:
        """A database ``name`` (empty, or a copy of ``template``); its URL."""
        self._admin(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
        return self.url(name)

    def drop_database(self, name: str) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        if self.running:
            self.running = False
            with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
                self._run([str(self.pg_ctl), "-D", str(self.data), "-m", "fast", "-w", "stop"])
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> PgServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
