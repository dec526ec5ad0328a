"""Migrations are applied in order, once, and recorded; the pool is SQLite in WAL mode."""

from arashi.db import database_url, open_pool
from arashi.migrations import LATEST, MIGRATIONS, migrate, version


def test_migrations_run_once_and_are_recorded(tmp_path):
    pool = open_pool(database_url(tmp_path))
    try:
        assert version(pool) == 0
        assert [m.version for m in migrate(pool)] == [m.version for m in MIGRATIONS]
        assert version(pool) == LATEST
        assert migrate(pool) == []
        with pool.transaction() as tx:
            assert tx.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            rows = tx.execute("SELECT version, name FROM schema_migrations").fetchall()
        assert rows == [(m.version, m.name) for m in MIGRATIONS]
    finally:
        pool.close()
