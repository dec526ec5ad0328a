"""Generated mail: reproducible, every kind parses, hostile kinds are there, folders fill."""

from __future__ import annotations

import random
from email import message_from_bytes, policy

from arashi.mailgen import KINDS, message, messages, populate
from arashi.store import INBOX

from tests.helpers.arashi_env import new_store


def test_every_kind_is_mail():
    rng = random.Random(1)
    for kind in KINDS:
        raw = message(rng, kind, "alice@example.org")
        msg = message_from_bytes(raw, policy=policy.default)
        assert msg["To"] == "alice@example.org" and msg["Subject"] and msg["Date"], kind
    attached = message_from_bytes(message(rng, "attachment", "a@example.org"),
                                  policy=policy.default)
    assert [p.get_filename() for p in attached.iter_attachments()][-1] == "notes.txt"
    assert b"<script>" in message(rng, "script", "a@example.org")
    assert b"javascript:" in message(rng, "javascript-link", "a@example.org")
    assert b"x-no-such-charset" in message(rng, "unknown-charset", "a@example.org")


def test_the_same_seed_gives_the_same_mail():
    first = list(messages(random.Random(7), 50, "a@example.org"))
    assert first == list(messages(random.Random(7), 50, "a@example.org"))
    assert first != list(messages(random.Random(8), 50, "a@example.org"))


def test_populate_fills_folders(tmp_path):
    store = new_store(tmp_path)
    try:
        user = store.add_user("carol", "pw")
        assert populate(store, user, "carol", {INBOX: 30, "work": 12}, seed=5) == 42
        counts = {f.name: f.count for f in store.folders(user)}
        assert counts == {INBOX: 30, "work": 12}
    finally:
        store.pool.close()
