"""Database access through a pool of connections (thesis 6.3.3): each stage's threads take a
connection for one transaction and give it back. ``open_pool`` picks the backend from a URL;
callers see only ``Pool.transaction()``: SQLite (``sqlite:///PATH``) or PostgreSQL
(``postgresql://...``, psycopg 3 and psycopg_pool) behind the same interface.

SQL is written once, with ``?`` placeholders and parameters only (never values in the text);
the PostgreSQL transaction translates them to psycopg's ``%s`` once per statement (cached).
"""

from __future__ import annotations

import functools
import queue
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
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


_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|\?|%")


@functools.lru_cache(maxsize=1024)
def to_pyformat(sql: str) -> str:
    """``sql`` with ``?`` placeholders as psycopg's ``%s`` (and a literal ``%`` as ``%%``);
    quoted strings, quoted names and comments are left as they are."""
    def one(m: re.Match[str]) -> str:
        token = m.group()
        return "%s" if token == "?" else "%%" if token == "%" else token
    return _TOKENS.sub(one, sql)


class _PostgresTransaction:
    __slots__ = ("conn",)
    dialect = "postgresql"

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(to_pyformat(sql), tuple(params))

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> Any:
        cur = self.conn.cursor()
        cur.executemany(to_pyformat(sql), rows)
        return cur

    def executescript(self, sql: str) -> None:
        for statement in sql.split(";"):
            if statement.strip():
                self.conn.execute(statement)


WRITE_LOCK = 0x61726173           # the advisory lock every write transaction holds ("aras")


class PostgresPool:
    """Connections to one PostgreSQL database (psycopg_pool), ``size`` at most. A read
    transaction is REPEATABLE READ, READ ONLY: one snapshot, as SQLite's WAL readers see. A
    write transaction takes a transaction-scoped advisory lock first, so writers run one at a
    time, as under SQLite's BEGIN IMMEDIATE: the store's check-then-write steps (a user or
    folder name taken? the folder still there?) and ``migrate`` rely on it."""

    dialect = "postgresql"

    def __init__(self, url: str, size: int = 8, timeout: float = 30.0) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
            from psycopg_pool import PoolTimeout as _Timeout
        except ImportError:
            raise DatabaseError("the PostgreSQL backend needs psycopg and psycopg_pool "
                                "(pip install 'pyseda[arashi]')") from None
        self.url, self.size, self.timeout = url, size, timeout
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self._timeout_error = _Timeout
        try:        # one connection first: fails here, at once, saying why, if it cannot
            first = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise DatabaseError(f"cannot open the database {_safe(url)}: {reason}") from None
        first.close()
        self._pool = ConnectionPool(url, min_size=1, max_size=size, timeout=timeout,
                                    kwargs={"autocommit": True}, open=False)
        try:
            self._pool.open(wait=True, timeout=min(timeout, 10.0))
        except _Timeout:
            self._pool.close()
            raise DatabaseError(f"cannot open the database {_safe(url)}") from None

    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[_PostgresTransaction]:
        if self._pool.closed:
            raise DatabaseError("the database pool is closed")
        try:
            conn = self._pool.getconn()
        except self._timeout_error:
            raise PoolTimeout(f"no database connection free in {self.timeout} s") from None
        try:
            try:
                if write:
                    conn.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                else:
                    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                try:
                    yield _PostgresTransaction(conn)
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except self._errors as exc:
                if not conn.closed:
                    with suppress(self._errors):
                        conn.execute("ROLLBACK")
                raise DatabaseError(f"database error: {exc}") from exc
        finally:
            self._pool.putconn(conn)

    def close(self) -> None:
        self._pool.close()


def _safe(url: str) -> str:
    """``url`` without a password, for messages."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def database_url(data: str | Path | None = None, url: str | None = None) -> str:
    """The URL of a data directory's database, or ``url`` as given."""
    if url is not None:
        return url
    if data is None:
        raise DatabaseError("give a data directory or a database URL")
    return f"sqlite:///{Path(data).resolve() / DB_FILE}"


def open_pool(url: str, size: int = 8) -> Pool:
    """A pool for ``url``: ``sqlite:///ABSOLUTE/PATH`` (the file is created if missing) or
    ``postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DBNAME[?host=/SOCKET/DIR]`` (the database
    must exist; ``arashi init --db URL`` makes the tables)."""
    if url.startswith("sqlite:///"):
        return SQLitePool(url.removeprefix("sqlite://"), size=size)
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresPool(url, size=size)
    raise DatabaseError(f"unknown database URL {_safe(url)!r} (sqlite:///PATH or "
                        "postgresql://...)")
