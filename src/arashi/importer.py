"""Existing mailboxes into the store, with the standard library's ``mailbox`` module: an mbox
file or a Maildir directory, into one of a user's folders, all in one transaction (an import
that fails adds nothing). The seen flag comes along: Maildir's ``S``, mbox's ``Status: R``."""

from __future__ import annotations

import mailbox
import os
from collections.abc import Iterator
from pathlib import Path

from .store import INBOX, MailStore, NotFound


class MailboxError(ValueError):
    """The mailbox cannot be read (the message says why, in a line)."""


def _mbox(path: Path) -> Iterator[tuple[bytes, str]]:
    box = mailbox.mbox(path, create=False)
    try:
        for key in box.iterkeys():
            message = box.get_message(key)
            yield box.get_bytes(key), "S" if "R" in message.get_flags() else ""
    finally:
        box.close()


def _maildir(path: Path) -> Iterator[tuple[bytes, str]]:
    box = mailbox.Maildir(path, factory=None, create=False)
    for key in box.iterkeys():
        message = box.get_message(key)
        yield box.get_bytes(key), "S" if "S" in message.get_flags() else ""


def import_mailbox(store: MailStore, user: int, *, mbox: str | os.PathLike[str] | None = None,
                   maildir: str | os.PathLike[str] | None = None, folder: str = INBOX) -> int:
    """Import every message of the mbox file or Maildir into the user's ``folder`` (created if
    missing); how many."""
    if (mbox is None) == (maildir is None):
        raise MailboxError("give an mbox file or a Maildir, one of them")
    if mbox is not None:
        path = Path(mbox)
        if not path.is_file():
            raise MailboxError(f"{path} is no mbox file")
        messages = _mbox(path)
    else:
        path = Path(maildir or "")
        if not all((path / sub).is_dir() for sub in ("cur", "new", "tmp")):
            raise MailboxError(f"{path} is no Maildir (it needs cur, new and tmp)")
        messages = _maildir(path)
    try:
        folder_id = store.folder(user, folder)
    except NotFound:
        folder_id = store.add_folder(user, folder)
    try:
        return store.add_messages(user, folder_id, messages)
    except (OSError, mailbox.Error) as exc:
        raise MailboxError(f"cannot read the mailbox: {exc}") from None
