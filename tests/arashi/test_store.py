"""The mail store: users, folders, messages, and above all that every call is scoped by user."""

from __future__ import annotations

import pytest

from arashi.store import INBOX, NotFound, StoreError

from tests.helpers.arashi_env import count


def mail(subject: str, sender: str = "Bob <bob@else.test>", date: str = "") -> bytes:
    dated = f"Date: {date}\r\n" if date else ""
    return f"From: {sender}\r\nSubject: {subject}\r\n{dated}\r\nbody\r\n".encode()


def test_users_get_an_inbox_and_log_in_with_their_password(store):
    alice = store.add_user("Alice", "secret")
    assert store.user_id("alice") == store.user_id("ALICE") == alice
    assert [f.name for f in store.folders(alice)] == [INBOX]
    assert store.authenticate("alice", "secret") == alice
    assert store.authenticate("alice", "wrong") is None
    assert store.authenticate("nobody", "secret") is None
    with pytest.raises(StoreError, match="already"):
        store.add_user("alice", "x")
    with pytest.raises(StoreError, match="no user name"):
        store.add_user("../etc", "x")


def test_delivery_lists_sorts_searches_and_files(store):
    alice = store.add_user("alice", "pw")
    inbox = store.folder(alice, INBOX)
    store.deliver([alice], mail("b second", date="Tue, 2 Jan 2024 10:00:00 +0000"))
    store.deliver([alice], mail("a first", "Zed <z@z.test>", "Mon, 1 Jan 2024 10:00:00 +0000"))
    store.deliver([alice], b"no headers at all")
    assert count(store, alice, inbox) == 3
    by_date = store.messages(alice, inbox, sort="date", descending=False)
    assert [m.subject for m in by_date] == ["", "a first", "b second"]   # undated first
    assert [m.subject for m in store.messages(alice, inbox, sort="subject", limit=2,
                                              offset=1, descending=False)] == ["a first",
                                                                               "b second"]
    with pytest.raises(StoreError):
        store.messages(alice, inbox, sort="raw; DROP TABLE users")
    (zed,) = store.search(alice, "ZED")
    assert store.message(alice, zed.id).raw.startswith(b"From: Zed")
    assert store.search(alice, "%") == [] and store.search(alice, "_") == []
    work = store.add_folder(alice, "Work")
    assert store.move_messages(alice, [zed.id], work) == 1
    assert [m.id for m in store.messages(alice, work)] == [zed.id]
    assert store.search(alice, "zed", folder=inbox) == []
    store.delete_folder(alice, work)
    with pytest.raises(NotFound):
        store.message(alice, zed.id)
    with pytest.raises(StoreError, match="INBOX"):
        store.delete_folder(alice, inbox)
    assert store.delete_messages(alice, [m.id for m in by_date]) == 2


def test_one_delivery_to_several_users_gives_each_a_copy(store):
    alice, bob = store.add_user("alice", "pw"), store.add_user("bob", "pw")
    ids = store.deliver([alice, bob, alice], mail("to both"))
    assert len(ids) == 2
    assert store.message(alice, ids[0]).subject == store.message(bob, ids[1]).subject


def test_a_user_reaches_nothing_of_another_users_mail(store):
    alice, bob = store.add_user("alice", "pw"), store.add_user("bob", "pw")
    (secret,) = store.deliver([bob], mail("bob's secret"))
    bob_inbox = store.folder(bob, INBOX)
    bob_work = store.add_folder(bob, "Work")
    alice_inbox = store.folder(alice, INBOX)
    # reading: another's id is not found, as an id that does not exist
    for call in (lambda: store.message(alice, secret),
                 lambda: store.delete_folder(alice, bob_work),
                 lambda: store.move_messages(alice, [], bob_work),
                 lambda: store.add_messages(alice, bob_inbox, [(b"x", "")])):
        with pytest.raises(NotFound) as caught:
            call()
        assert "bob" not in str(caught.value) and str(secret) not in str(caught.value)
    assert store.messages(alice, bob_inbox) == []
    assert store.search(alice, "secret") == [] and store.search(alice, "secret", bob_inbox) == []
    assert [f.name for f in store.folders(alice)] == [INBOX]
    with pytest.raises(NotFound):
        store.folder(alice, "Work")
    # changing: nothing of bob's moves or goes
    assert store.delete_messages(alice, [secret]) == 0
    assert store.move_messages(alice, [secret], alice_inbox) == 0
    assert store.message(bob, secret).folder_id == bob_inbox
    assert count(store, bob, bob_inbox) == 1


def test_the_database_refuses_a_message_in_another_users_folder(store):
    alice, bob = store.add_user("alice", "pw"), store.add_user("bob", "pw")
    bob_inbox = store.folder(bob, INBOX)
    from arashi.db import DatabaseError
    with pytest.raises(DatabaseError, match=r"(?i)foreign key"), \
            store.pool.transaction(write=True) as tx:
        tx.execute("INSERT INTO messages (user_id, folder_id, received, size, raw)"
                   " VALUES (?, ?, 0, 1, ?)", (alice, bob_inbox, b"\0"))
