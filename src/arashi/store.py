"""The mail store: users, their folders and their messages, over a connection pool.

Every call about folders or messages takes the user's id first, and every query it runs is
scoped by it (``WHERE user_id = ?``): a folder or message id of another user is not found,
exactly as an id that does not exist, so nothing tells a user that another's mail exists.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .db import Pool, Transaction
from .headers import Summary, summarize
from .passwords import hash_password, verify_password

INBOX = "INBOX"
NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")     # user names: the local part of an address
MAX_FOLDER_NAME = 100
SORTS = {"date": "date", "sender": "sender", "subject": "subject", "size": "size"}
_SUMMARY = "id, folder_id, received, date, sender, subject, size, flags"


class StoreError(ValueError):
    """A request the store refuses: a bad name, a duplicate, a folder that cannot go."""


class NotFound(StoreError):
    """No such user, folder or message — for this user."""


@dataclass(frozen=True)
class Folder:
    id: int
    name: str
    count: int


@dataclass(frozen=True)
class MessageInfo:
    """What a message list shows: the parsed fields, not the message."""

    id: int
    folder_id: int
    received: float
    date: float | None
    sender: str
    subject: str
    size: int
    flags: str


@dataclass(frozen=True)
class Message(MessageInfo):
    raw: bytes = b""


def _folder_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_FOLDER_NAME or any(ord(c) < 32 for c in name):
        raise StoreError(f"a folder name is 1 to {MAX_FOLDER_NAME} printable characters")
    return name


def check_user_name(name: str) -> str:
    """``name`` as stored (lower case), or StoreError saying what a name may be."""
    low = name.lower()
    if not NAME.fullmatch(low):
        raise StoreError(f"{name!r} is no user name: 1 to 64 of a-z 0-9 . _ -, starting "
                         "with a letter or digit")
    return low


class MailStore:
    """Users, folders and messages in the database behind ``pool`` (migrated already)."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    # -- users --------------------------------------------------------------------------------

    def add_user(self, name: str, password: str) -> int:
        """A new user with an INBOX; its id. StoreError if the name is taken or malformed."""
        name = check_user_name(name)
        if not password:
            raise StoreError("the password is empty")
        hashed = hash_password(password)          # slow: before the transaction, not in it
        with self.pool.transaction(write=True) as tx:
            if tx.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise StoreError(f"there is a user {name} already")
            user = tx.execute("INSERT INTO users (name, password, created) VALUES (?, ?, ?)"
                              " RETURNING id", (name, hashed, time.time())).fetchone()[0]
            tx.execute("INSERT INTO folders (user_id, name) VALUES (?, ?)", (user, INBOX))
        return int(user)

    def authenticate(self, name: str, password: str) -> int | None:
        """The user's id if ``password`` is theirs, else None (also for unknown names, after
        as much work as for a known one, so timing does not tell which names exist)."""
        with self.pool.transaction() as tx:
            row = tx.execute("SELECT id, password FROM users WHERE name = ?",
                             (name.lower(),)).fetchone()
        if row is None:
            verify_password(password, _dummy())
            return None
        return int(row[0]) if verify_password(password, row[1]) else None

    def user_id(self, name: str) -> int | None:
        """The id of the user called ``name`` (any case), or None."""
        with self.pool.transaction() as tx:
            row = tx.execute("SELECT id FROM users WHERE name = ?", (name.lower(),)).fetchone()
        return None if row is None else int(row[0])

    # -- folders ------------------------------------------------------------------------------

    def folders(self, user: int) -> list[Folder]:
        """The user's folders, INBOX first, with their message counts."""
        with self.pool.transaction() as tx:
            rows = tx.execute(
                "SELECT f.id, f.name, COUNT(m.id) FROM folders f LEFT JOIN messages m"
                " ON m.user_id = f.user_id AND m.folder_id = f.id WHERE f.user_id = ?"
                " GROUP BY f.id, f.name ORDER BY f.name <> ?, f.name", (user, INBOX)).fetchall()
        return [Folder(int(i), n, int(c)) for i, n, c in rows]

    def folder(self, user: int, name: str) -> int:
        """The id of the user's folder ``name``; NotFound if they have none so called."""
        with self.pool.transaction() as tx:
            row = tx.execute("SELECT id FROM folders WHERE user_id = ? AND name = ?",
                             (user, name)).fetchone()
        if row is None:
            raise NotFound(f"no folder {name!r}")
        return int(row[0])

    def add_folder(self, user: int, name: str) -> int:
        name = _folder_name(name)
        with self.pool.transaction(write=True) as tx:
            if tx.execute("SELECT 1 FROM users WHERE id = ?", (user,)).fetchone() is None:
                raise NotFound("no such user")
            if tx.execute("SELECT 1 FROM folders WHERE user_id = ? AND name = ?",
                          (user, name)).fetchone():
                raise StoreError(f"there is a folder {name!r} already")
            row = tx.execute("INSERT INTO folders (user_id, name) VALUES (?, ?) RETURNING id",
                             (user, name)).fetchone()
        return int(row[0])

    def delete_folder(self, user: int, folder: int) -> None:
        """Delete one of the user's folders and the messages in it; never the INBOX."""
        with self.pool.transaction(write=True) as tx:
            row = tx.execute("SELECT name FROM folders WHERE user_id = ? AND id = ?",
                             (user, folder)).fetchone()
            if row is None:
                raise NotFound("no such folder")
            if row[0] == INBOX:
                raise StoreError("the INBOX cannot be deleted")
            tx.execute("DELETE FROM messages WHERE user_id = ? AND folder_id = ?", (user, folder))
            tx.execute("DELETE FROM folders WHERE user_id = ? AND id = ?", (user, folder))

    # -- messages -----------------------------------------------------------------------------

    def deliver(self, users: Sequence[int], raw: bytes, envelope_from: str | None = None
                ) -> list[int]:
        """Put ``raw`` in each user's INBOX, all in one transaction: when this returns, every
        copy is committed; when it raises, none is. The new message ids, one per user."""
        summary = summarize(raw)
        now = time.time()
        ids = []
        with self.pool.transaction(write=True) as tx:
            for user in dict.fromkeys(users):          # a user named twice gets one copy
                row = tx.execute("SELECT id FROM folders WHERE user_id = ? AND name = ?",
                                 (user, INBOX)).fetchone()
                if row is None:
                    raise NotFound("no such user")
                ids.append(self._insert(tx, user, int(row[0]), raw, summary, now,
                                        envelope_from, ""))
        return ids

    def add_messages(self, user: int, folder: int, messages: Iterable[tuple[bytes, str]]
                     ) -> int:
        """Add ``(raw, flags)`` messages to one of the user's folders in one transaction (an
        import: all or nothing); how many."""
        n = 0
        with self.pool.transaction(write=True) as tx:
            if tx.execute("SELECT 1 FROM folders WHERE user_id = ? AND id = ?",
                          (user, folder)).fetchone() is None:
                raise NotFound("no such folder")
            for raw, flags in messages:
                self._insert(tx, user, folder, raw, summarize(raw), time.time(), None, flags)
                n += 1
        return n

    def _insert(self, tx: Transaction, user: int, folder: int, raw: bytes, summary: Summary,
                received: float, envelope_from: str | None, flags: str) -> int:
        row = tx.execute(
            "INSERT INTO messages (user_id, folder_id, received, date, sender, subject, size,"
            " flags, envelope_from, raw) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (user, folder, received, summary.date, summary.sender, summary.subject, len(raw),
             flags, envelope_from, raw)).fetchone()
        return int(row[0])

    def messages(self, user: int, folder: int, *, sort: str = "date", descending: bool = True,
                 offset: int = 0, limit: int = 10) -> list[MessageInfo]:
        """One page of a folder, sorted by ``sort`` (date, sender, subject or size)."""
        column = SORTS.get(sort)
        if column is None:
            raise StoreError(f"sort by one of {', '.join(SORTS)}, not {sort!r}")
        # undated messages sort as the oldest, on either backend (SQLite's default order)
        order = "DESC NULLS LAST" if descending else "ASC NULLS FIRST"
        # column and order come from the fixed tables above, never from the caller's text
        sql = (f"SELECT {_SUMMARY} FROM messages WHERE user_id = ? AND folder_id = ?"
               f" ORDER BY {column} {order}, id {order.split()[0]} LIMIT ? OFFSET ?")
        with self.pool.transaction() as tx:
            rows = tx.execute(sql, (user, folder, max(0, limit), max(0, offset))).fetchall()
        return [MessageInfo(*row) for row in rows]

    def message(self, user: int, message: int) -> Message:
        """One of the user's messages, raw bytes included; NotFound for any other id."""
        with self.pool.transaction() as tx:
            row = tx.execute(f"SELECT {_SUMMARY}, raw FROM messages WHERE user_id = ? AND id = ?",
                             (user, message)).fetchone()
        if row is None:
            raise NotFound("no such message")
        return Message(*row[:-1], raw=bytes(row[-1]))

    def search(self, user: int, text: str, folder: int | None = None, limit: int = 100
               ) -> list[MessageInfo]:
        """The user's messages whose sender or subject contains ``text`` (any case), in one
        folder or all, newest first."""
        pattern = "%" + text.lower().replace("\\", "\\\\").replace("%", "\\%").replace(
            "_", "\\_") + "%"
        sql = (f"SELECT {_SUMMARY} FROM messages WHERE user_id = ?"
               " AND (LOWER(sender) LIKE ? ESCAPE '\\' OR LOWER(subject) LIKE ? ESCAPE '\\')")
        params: list[object] = [user, pattern, pattern]
        if folder is not None:
            sql += " AND folder_id = ?"
            params.append(folder)
        sql += " ORDER BY date DESC NULLS LAST, id DESC LIMIT ?"
        params.append(limit)
        with self.pool.transaction() as tx:
            rows = tx.execute(sql, params).fetchall()
        return [MessageInfo(*row) for row in rows]

    def delete_messages(self, user: int, messages: Iterable[int]) -> int:
        """Delete those of ``messages`` that are the user's; how many were."""
        ids = list(messages)
        with self.pool.transaction(write=True) as tx:
            return sum(tx.execute("DELETE FROM messages WHERE user_id = ? AND id = ?",
                                  (user, m)).rowcount for m in ids)

    def move_messages(self, user: int, messages: Iterable[int], folder: int) -> int:
        """Refile those of ``messages`` that are the user's into their ``folder``; how many."""
        ids = list(messages)
        with self.pool.transaction(write=True) as tx:
            if tx.execute("SELECT 1 FROM folders WHERE user_id = ? AND id = ?",
                          (user, folder)).fetchone() is None:
                raise NotFound("no such folder")
            return sum(tx.execute("UPDATE messages SET folder_id = ? WHERE user_id = ? AND id = ?",
                                  (folder, user, m)).rowcount for m in ids)


@functools.cache
def _dummy() -> str:
    """A hash to spend the same time on for a name that is no user."""
    return hash_password("no such user")
