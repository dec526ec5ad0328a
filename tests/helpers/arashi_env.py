"""What the Arashi tests share: a data directory with users, a running mail-in service, and
the ``arashi`` command run from this checkout."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import seda
from arashi.db import database_url, open_pool
from arashi.migrations import migrate
from arashi.service import Options, Service, build
from arashi.store import INBOX, MailStore

from tests.helpers import WAIT


def new_store(data: Path, url: str | None = None) -> MailStore:
    """A migrated store in ``data``, or in the database at ``url`` (its pool is closed by the
    caller: ``store.pool.close()``)."""
    if url is None:
        data.mkdir(parents=True, exist_ok=True)
    pool = open_pool(database_url(data, url))
    migrate(pool)
    return MailStore(pool)


def add_users(data: Path, url: str | None = None, **passwords: str) -> dict[str, int]:
    """A migrated store in ``data`` (or at ``url``) with these users; their ids."""
    store = new_store(data, url)
    try:
        return {name: store.add_user(name, pw) for name, pw in passwords.items()}
    finally:
        store.pool.close()


def alice_with_mail(data: Path, messages: list[bytes],
                    folders: tuple[str, ...] = ()) -> tuple[int, int, list[int]]:
    """A new store in ``data`` with the user alice (password alice-pw), ``messages`` in her
    inbox and ``folders`` made: her id, her inbox's, and the folders' ids."""
    store = new_store(data)
    try:
        alice = store.add_user("alice", "alice-pw")
        inbox = store.folder(alice, INBOX)
        made = [store.add_folder(alice, name) for name in folders]
        store.add_messages(alice, inbox, [(raw, "") for raw in messages])
        return alice, inbox, made
    finally:
        store.pool.close()


def count(store: MailStore, user: int, folder: int) -> int:
    """How many messages the user's folder holds, as the folder list says."""
    return next(f.count for f in store.folders(user) if f.id == folder)


@contextmanager
def started(data: Path, url: str | None = None,
            **options: object) -> Iterator[tuple[seda.Runtime, Service]]:
    """The mail-in service on a free loopback port, over ``data`` (or the database at ``url``),
    and the runtime it runs on (for its ``stats()``), stopped afterwards."""
    opts = Options(data=None if url else data, url=url, smtp_bind=("127.0.0.1", 0),
                   domains=("example.org", "localhost"),
                   hostname="mx.example.org", **options)  # type: ignore[arg-type]
    rt = seda.Runtime()
    service = build(rt, opts)
    rt.start()
    try:
        yield rt, service
    finally:
        rt.stop(timeout=WAIT)
        service.close()


@contextmanager
def running(data: Path, url: str | None = None, **options: object) -> Iterator[Service]:
    """``started``, when only the service matters."""
    with started(data, url, **options) as (_, service):
        yield service


def arashi(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``python -m arashi ARGS`` to its end."""
    return subprocess.run([sys.executable, "-m", "arashi", *args], input=stdin,
                          capture_output=True, text=True, timeout=WAIT * 3)


def store_args(data: Path, url: str | None) -> list[str]:
    """``--data DATA`` or ``--db URL``, for an ``arashi`` command line."""
    return ["--db", url] if url else ["--data", str(data)]
