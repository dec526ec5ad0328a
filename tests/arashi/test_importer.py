"""mbox files and Maildirs into a user's folder, with the seen flag, all or nothing."""

from __future__ import annotations

import mailbox

import pytest

from arashi.importer import MailboxError, import_mailbox
from arashi.store import INBOX


def test_an_mbox_is_imported_with_its_seen_flags(store, tmp_path):
    box = mailbox.mbox(tmp_path / "old.mbox")
    seen = mailbox.mboxMessage(b"From: a@x.test\nSubject: one\n\nFrom the start\n")
    seen.set_flags("RO")
    box.add(seen)
    box.add(b"From: b@x.test\nSubject: two\n\nbody\n")
    box.close()
    alice = store.add_user("alice", "pw")
    assert import_mailbox(store, alice, mbox=tmp_path / "old.mbox") == 2
    inbox = store.folder(alice, INBOX)
    one, two = store.messages(alice, inbox, sort="subject", descending=False)
    assert (one.subject, one.flags, two.flags) == ("one", "S", "")
    assert b"From the start" in store.message(alice, one.id).raw


def test_a_maildir_goes_to_a_folder_made_for_it(store, tmp_path):
    box = mailbox.Maildir(tmp_path / "Maildir")
    read = mailbox.MaildirMessage(b"Subject: read\n\nx\n")
    read.set_subdir("cur")
    read.set_flags("S")
    box.add(read)
    box.add(b"From: Mallory <m@[evil.test>\nSubject: new\n\nx\n")    # trips email's parser
    alice = store.add_user("alice", "pw")
    assert import_mailbox(store, alice, maildir=tmp_path / "Maildir", folder="Old") == 2
    old = store.folder(alice, "Old")
    flags = {m.subject: m.flags for m in store.messages(alice, old)}
    assert flags == {"read": "S", "new": ""}


def test_what_is_no_mailbox_is_refused(store, tmp_path):
    alice = store.add_user("alice", "pw")
    with pytest.raises(MailboxError, match="no mbox"):
        import_mailbox(store, alice, mbox=tmp_path / "missing")
    with pytest.raises(MailboxError, match="no Maildir"):
        import_mailbox(store, alice, maildir=tmp_path)
    with pytest.raises(MailboxError, match="one of them"):
        import_mailbox(store, alice)
