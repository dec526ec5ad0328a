"""Migrations are applied in order, once, and recorded, on both backends; the SQLite pool is
in WAL mode."""

import threading

import pytest

from arashi.db import DatabaseError, open_pool, to_pyformat
from arashi.migrations import LATEST, MIGRATIONS, migrate, version

from tests.helpers.postgres import BACKENDS, database_url


@pytest.mark.parametrize("backend", BACKENDS)
def test_migrations_run_once_and_are_recorded(tmp_path, backend):
    pool = open_pool(database_url(backend, tmp_path))
    try:
        assert version(pool) == 0
        assert [m.version for m in migrate(pool)] == [m.version for m in MIGRATIONS]
        assert version(pool) == LATEST
        assert migrate(pool) == []
        with pool.transaction() as tx:
            if backend == "sqlite":
                assert tx.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            rows = tx.execute("SELECT version, name FROM schema_migrations").fetchall()
        assert rows == [(m.version, m.name) for m in MIGRATIONS]
    finally:
        pool.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_writers_take_turns_as_under_begin_immediate(tmp_path, backend):
    """Two write transactions never overlap: the second starts when the first has ended."""
    pool = open_pool(database_url(backend, tmp_path))
    try:
        migrate(pool)
        inside, events = threading.Event(), []

        def first():
            with pool.transaction(write=True) as tx:
                tx.execute("SELECT 1")
                inside.set()
                threading.Event().wait(0.3)
                events.append("first ends")

        t = threading.Thread(target=first)
        t.start()
        inside.wait(5)
        with pool.transaction(write=True) as tx:
            events.append("second starts")
            tx.execute("SELECT 1")
        t.join()
        assert events == ["first ends", "second starts"]
        with pytest.raises(DatabaseError), pool.transaction() as tx:
            tx.execute("SELECT no_such_column FROM users")
        with pool.transaction() as tx:                      # the pool is still usable
            assert tx.execute("SELECT COUNT(*) FROM users").fetchone()[0] == 0
    finally:
        pool.close()


def test_placeholders_are_translated_outside_quotes_only():
    assert to_pyformat("SELECT ? WHERE a LIKE '?%' AND \"b?\" = ? -- ?\n") == (
        "SELECT %s WHERE a LIKE '?%' AND \"b?\" = %s -- ?\n")
    assert to_pyformat("SELECT 100 % ?") == "SELECT 100 %% %s"


def test_a_database_that_cannot_be_reached_is_one_line():
    with pytest.raises(DatabaseError, match="cannot open the database postgresql://u:\\*\\*\\*@"):
        open_pool(f"postgresql://u:secret@/none?host={'/nonexistent-arashi-dir'}")
