"""``python -m arashi.demo DATA_DIR`` (what ``make arashi`` runs before ``arashi serve``): a
data directory with two users, their known demo passwords, and a few hundred generated
messages in several folders (``mailgen``), some multipart with attachments, some hostile.
An existing demo directory is kept as it is (delete it for a fresh one)."""

from __future__ import annotations

import sys
from pathlib import Path

from .db import database_url, open_pool
from .mailgen import populate
from .migrations import migrate
from .store import MailStore

#: the demo users and their passwords: for a demo on a loopback address only
USERS = {"alice": "alice-demo-password", "bob": "bob-demo-password"}
#: each user's folders and how many generated messages in each
FOLDERS = {"alice": {"INBOX": 120, "work": 80, "lists": 150, "archive": 40},
           "bob": {"INBOX": 60, "projects": 30}}


def make_demo(data: Path) -> bool:
    """Make the demo in ``data``; False (and nothing changed) if it has its users already."""
    data.mkdir(parents=True, exist_ok=True)
    pool = open_pool(database_url(data))
    try:
        migrate(pool)
        store = MailStore(pool)
        if all(store.user_id(name) is not None for name in USERS):
            return False
        for seed, (name, password) in enumerate(USERS.items()):
            user = store.user_id(name) or store.add_user(name, password)
            populate(store, user, name, FOLDERS[name], seed=seed)
        return True
    finally:
        pool.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m arashi.demo DATA_DIR", file=sys.stderr)
        return 2
    data = Path(args[0])
    made = make_demo(data)
    print(f"{data}: {'demo made' if made else 'demo kept (delete it for a fresh one)'}")
    for name, password in USERS.items():
        total = sum(FOLDERS[name].values())
        print(f"  user {name:6} password {password}   ({total} generated messages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
