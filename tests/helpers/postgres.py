"""The PostgreSQL server of the Arashi tests that run against both backends: one throwaway
server (``benchmarks/pg_server.py``: Debian's ``postgresql`` package, ``initdb`` in a temporary
directory, a Unix socket only, as an unprivileged user when run as root) for the whole test
session, started by the first test that asks, stopped and removed when the session's process
exits; each test gets a database of its own.

Where PostgreSQL is not installed or cannot start, ``database_url("postgresql", ...)`` skips the
test, saying why (``make test`` installs the package where apt-get can run as root).
"""

from __future__ import annotations

import atexit
import itertools
import subprocess
from pathlib import Path

import pytest

from arashi.db import database_url as sqlite_url
from benchmarks.pg_server import PgServer

BACKENDS = ["sqlite", "postgresql"]

_server: PgServer | None = None
_failure: str | None = None
_names = itertools.count(1)


def server() -> PgServer:
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
                _server = PgServer(shared_buffers="32MB")
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
    return server().new_database(f"arashi_test_{next(_names)}")
