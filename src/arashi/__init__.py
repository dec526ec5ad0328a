"""Arashi, the web e-mail service of Welsh's thesis (section 6.3), on the SEDA runtime: a mail
store over a database connection pool, SMTP in, web pages with one stage per request type, and
the ``arashi`` command. See docs/arashi.md."""

from .db import DatabaseError, Pool, open_pool
from .migrations import migrate
from .passwords import hash_password, verify_password
from .service import Options, Service, build
from .smtp import Limits, SMTPServer
from .store import INBOX, Folder, MailStore, Message, MessageInfo, NotFound, StoreError

__all__ = [
    "INBOX",
    "DatabaseError",
    "Folder",
    "Limits",
    "MailStore",
    "Message",
    "MessageInfo",
    "NotFound",
    "Options",
    "Pool",
    "SMTPServer",
    "Service",
    "StoreError",
    "build",
    "hash_password",
    "migrate",
    "open_pool",
    "verify_password",
]
