"""The events between Arashi's mail-in stages, and the stages' names.

    seda.io (listen, read) -> arashi.smtp -Job-> arashi.delivery -Answer-> arashi.smtp -> write
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RECEIVER = "arashi.smtp"          # the SMTP conversations, on the loop thread
DELIVERY = "arashi.delivery"      # the database work, on a thread pool
STORE = "arashi.store"            # with --redis: accepted mail, stored by any node (a cluster
#                                   stage on Redis Streams)


class Job:
    """smtp -> delivery: answer ``question`` (an ``smtp.Recipient`` or ``smtp.Mail``) for the
    conversation ``session``."""

    __slots__ = ("question", "session")

    def __init__(self, session: Any, question: Any) -> None:
        self.session, self.question = session, question


class Answer:
    """delivery -> smtp: ``who`` receives a recipient's mail (None: nobody), or the message is
    committed (``stored``); ``failure``: (code, text) when the database could not answer."""

    __slots__ = ("failure", "session", "stored", "who")

    def __init__(self, session: Any, *, who: Any = None, stored: bool = False,
                 failure: tuple[int, str] | None = None) -> None:
        self.session, self.who, self.stored, self.failure = session, who, stored, failure


@dataclass
class Accepted:
    """delivery -> store, across nodes: a message the SMTP client has been told is ours (250),
    for the INBOX of each of ``users``. Crosses the network as msgpack (``STORE_TYPES``)."""

    users: list[int]
    raw: bytes
    sender: str


#: The event types of the cluster stage STORE, registered with its codec on every node.
STORE_TYPES = (Accepted,)
