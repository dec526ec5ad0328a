"""The schema, as numbered migrations applied in order and recorded in the database
(``schema_migrations``): a data directory made by an older version is brought up to date by
``migrate``, and never migrated twice. Add a migration at the end; never edit one released.

Every message and folder row carries its ``user_id``, and a message's folder is referenced by
``(user_id, folder_id)``: the database itself refuses a message filed in another user's folder.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .db import DatabaseError, Pool


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sqlite: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "users, folders, messages", """
        CREATE TABLE users (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            password TEXT NOT NULL,
            created REAL NOT NULL
        );
        CREATE TABLE folders (
            id INTEGER PRIMARY KEY,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            UNIQUE (user_id, name),
            UNIQUE (user_id, id)
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            folder_id INTEGER NOT NULL,
            received REAL NOT NULL,
            date REAL,
            sender TEXT NOT NULL DEFAULT '',
            subject TEXT NOT NULL DEFAULT '',
            size INTEGER NOT NULL,
            flags TEXT NOT NULL DEFAULT '',
            envelope_from TEXT,
            raw BLOB NOT NULL,
            FOREIGN KEY (user_id, folder_id) REFERENCES folders(user_id, id) ON DELETE CASCADE
        );
        CREATE INDEX messages_by_date ON messages (user_id, folder_id, date);
        CREATE INDEX messages_by_sender ON messages (user_id, folder_id, sender);
        CREATE INDEX messages_by_subject ON messages (user_id, folder_id, subject)
    """),
    Migration(2, "web sessions", """
        CREATE TABLE sessions (
            key_hash TEXT PRIMARY KEY,
            user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            csrf TEXT NOT NULL,
            created REAL NOT NULL,
            expires REAL NOT NULL
        );
        CREATE INDEX sessions_by_expiry ON sessions (expires)
    """),
)

LATEST = MIGRATIONS[-1].version

_TRACK = """CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied REAL NOT NULL)"""


def version(pool: Pool) -> int:
    """The schema version of the database; 0 for one never migrated."""
    with pool.transaction() as tx:
        if pool.dialect == "sqlite":
            found = tx.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                               ("schema_migrations",)).fetchone()
            if found is None:
                return 0
        row = tx.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return row[0] or 0


def migrate(pool: Pool) -> list[Migration]:
    """Apply the migrations the database has not had, each in its own transaction; the ones
    applied. A database newer than this code is refused rather than guessed at."""
    done = []
    with pool.transaction(write=True) as tx:
        tx.execute(_TRACK)
    for migration in MIGRATIONS:
        with pool.transaction(write=True) as tx:
            row = tx.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
            current = row[0] or 0
            if current > LATEST:
                raise DatabaseError(f"the database has schema version {current}, newer than "
                                    f"this arashi knows ({LATEST})")
            if migration.version <= current:
                continue
            tx.executescript(getattr(migration, pool.dialect))
            tx.execute("INSERT INTO schema_migrations (version, name, applied) VALUES (?, ?, ?)",
                       (migration.version, migration.name, time.time()))
        done.append(migration)
    return done
