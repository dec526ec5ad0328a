"""Database access through a pool of connections (thesis 6.3.3): each stage's threads take a
connection for one transaction and give it back. ``open_pool`` picks the backend from a URL;
callers see only ``Pool.transaction()``, so a PostgreSQL pool (psycopg + psycopg_pool) can be
added beside the SQLite one without changing them.

SQL is written once, with ``?`` placeholders and parameters only (never values in the text);
a backend whose driver uses another placeholder style translates them in its ``Transaction``.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

DB_FILE = "arashi.db"        # the SQLite database inside a data directory
BUSY_MS = 10_000             # how long SQLite waits for another writer before giving up


class DatabaseError(Exception):
    """The database cannot be opened or used (the message says why, in a line)."""


class PoolTimeout(DatabaseError):
    """No connection came free in time: every one is in use."""


class Transaction(Protocol):
    """One transaction on one connection: committed when the ``with`` block ends normally,
    rolled back when it raises."""

    dialect: str

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...
    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any: ...
    def executescript(self, sql: str) -> None: ...


class Pool(Protocol):
    """What every backend offers: transactions on pooled connections, and ``close``."""

    dialect: str
    url: str

    def transaction(self, write: bool = False) -> Any: ...   # a context manager -> Transaction
    def close(self) -> None: ...


class _SQLiteTransaction:
    __slots__ = ("conn",)
    dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> sqlite3.Cursor:
        return self.conn.executemany(sql, rows)

    def executescript(self, sql: str) -> None:
        # statement by statement: executescript would commit the transaction we are in
        for statement in sql.split(";"):
            if statement.strip():
                self.conn.execute(statement)


class SQLitePool:
    """Connections to one SQLite file in WAL mode (readers never wait for the writer), with
    ``synchronous=FULL`` so that a committed transaction survives a crash of the machine too,
    and foreign keys enforced. ``size`` connections at most; ``transaction`` waits up to
    ``timeout`` seconds for one."""

    dialect = "sqlite"

    def __init__(self, path: str | Path, size: int = 8, timeout: float = 30.0) -> None:
        self.path, self.size, self.timeout = Path(path), size, timeout
        self.url = f"sqlite:///{self.path}"
        self._idle: queue.LifoQueue[sqlite3.Connection] = queue.LifoQueue()
        self._opened = 0
        self._closed = False
        self._lock = threading.Lock()
        self._idle.put(self._connect())          # fails here, at once, if it cannot open

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise DatabaseError(f"cannot open the database {self.path}: {exc}") from None
        self._opened += 1
        return conn

    def _take(self) -> sqlite3.Connection:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            if self._opened < self.size:
                return self._connect()
        try:
            return self._idle.get(timeout=self.timeout)
        except queue.Empty:
            raise PoolTimeout(f"no database connection free in {self.timeout} s") from None

    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[_SQLiteTransaction]:
        """A transaction; ``write=True`` takes the write lock at the start (BEGIN IMMEDIATE),
        so a writer waits for another there rather than failing at its first write."""
        if self._closed:
            raise DatabaseError("the database pool is closed")
        conn = self._take()
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield _SQLiteTransaction(conn)
            except BaseException:
                conn.rollback()
                raise
            conn.commit()
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.rollback()
            raise DatabaseError(f"database error: {exc}") from exc
        finally:
            self._idle.put(conn)

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


def database_url(data: str | Path | None = None, url: str | None = None) -> str:
    """The URL of a data directory's database, or ``url`` as given."""
    if url is not None:
        return url
    if data is None:
        raise DatabaseError("give a data directory or a database URL")
    return f"sqlite:///{Path(data).resolve() / DB_FILE}"


def open_pool(url: str, size: int = 8) -> Pool:
    """A pool for ``url``: ``sqlite:///ABSOLUTE/PATH`` (the file is created if missing).
    ``postgresql://...`` is where the PostgreSQL backend goes (issue 16); not yet here."""
    if url.startswith("sqlite:///"):
        return SQLitePool(url.removeprefix("sqlite://"), size=size)
    if url.startswith(("postgresql://", "postgres://")):
        raise DatabaseError("the PostgreSQL backend is not available yet: use a data directory")
    raise DatabaseError(f"unknown database URL {url!r} (sqlite:///PATH)")
