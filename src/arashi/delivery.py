"""The delivery stage: the SMTP conversations' database work, on a pool of threads that each
take a pooled connection (thesis 6.3.3), so the loop thread never waits for the database.

A message is stored for all its recipients in one transaction (``MailStore.deliver``), and
only once that has committed is ``Answer(stored=True)`` sent back, for the 250. A database
that fails, or anything else that goes wrong, answers 451 (try again later): the client keeps
the message, nothing is half-stored.
"""

from __future__ import annotations

import logging
from typing import Any

import seda

from .db import DatabaseError
from .events import RECEIVER, Answer, Job
from .smtp import Mail, Recipient
from .store import NAME, MailStore, NotFound

log = logging.getLogger("arashi")


class Delivery(seda.EventHandler):
    def __init__(self, store: MailStore) -> None:
        self.store = store
        self.delivered = self.recipients = self.failed = 0

    def init(self, ctx: seda.StageContext) -> None:
        self.receiver = ctx.runtime.sink(RECEIVER)

    def handle_event(self, ev: Job) -> None:
        question = ev.question
        try:
            answer = self._answer(ev.session, question)
        except Exception as exc:
            # every question is answered: one left unanswered would hold its connection (not
            # read while it waits) until the client gives up; 451 has the client try again
            self.failed += 1
            if isinstance(exc, DatabaseError | NotFound):
                log.warning("cannot answer %r: %s", question, exc)
            else:
                log.exception("cannot answer %r", question)
            answer = Answer(ev.session, failure=(451, "4.3.0 cannot store mail now, try later"))
        self.receiver.enqueue_lossy(answer)

    def _answer(self, session: Any, question: Any) -> Answer:
        if type(question) is Recipient:
            local = question.local.lower()
            who = self.store.user_id(local) if NAME.fullmatch(local) else None
            return Answer(session, who=who)
        assert type(question) is Mail
        self.store.deliver(question.recipients, question.data, question.sender)
        self.delivered += 1
        self.recipients += len(question.recipients)
        return Answer(session, stored=True)

    def stats(self) -> dict:
        """Messages ``delivered`` (each stored for all its ``recipients``), questions that
        ``failed`` for want of the database."""
        return {"delivered": self.delivered, "recipients": self.recipients,
                "failed": self.failed}
