"""The SMTP receiving stage: runs each connection's ``smtp.SMTPServer`` on the loop thread,
fed by the socket layer, and sends its questions (is this a user? store this message) to the
delivery stage, reading nothing more from that client until the answer is back.

Time limits are kept here, not in the state machine: a client silent for ``timeout`` seconds
between commands (or as long sending one), or ``data_timeout`` within a message, gets 421 and
is closed. While the
server itself is busy answering, the clock does not run against the client. So is the bound on
the message bytes held over all connections (``Limits.max_held``): the client whose message
would pass it gets 421 and is closed, and sends it again later. And the bound on connections
(``max_connections``): one more is told 421 at once and closed, without a conversation or a
timer of its own, so idle connections cannot take the process's memory and descriptors.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import seda
from seda.io import Closed, Connected, Packet

from .events import DELIVERY, Answer, Job
from .smtp import Close, Limits, Mail, Recipient, Reply, SMTPServer

log = logging.getLogger("arashi")


class Session:
    """One connection's conversation and its clock."""

    __slots__ = ("closed", "conn", "held", "last", "smtp", "timer")

    def __init__(self, conn: Any, smtp: SMTPServer) -> None:
        self.conn, self.smtp = conn, smtp
        self.last = time.monotonic()
        self.timer: Any = None
        self.closed = False
        self.held = 0                     # smtp.held, as last counted in the receiver's total


class _Expired:
    __slots__ = ("session",)

    def __init__(self, session: Session) -> None:
        self.session = session


MAX_CONNECTIONS = 100         # conversations at once (Postfix's default_process_limit)


class SMTPReceiver(seda.EventHandler):
    def __init__(self, hostname: str, domains: frozenset[str], limits: Limits,
                 timeout: float = 300.0, data_timeout: float = 180.0,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections is at least 1, not {max_connections}")
        self.hostname, self.domains, self.limits = hostname, domains, limits
        self.timeout, self.data_timeout = timeout, data_timeout
        self.max_connections = max_connections
        # the one thing a connection past the bound is told (RFC 5321 3.8: 421, then close)
        self.full = Reply(421, f"4.7.0 {hostname} too many connections, try again "
                          "later").data
        self.open = self.accepted = self.timeouts = self.busy = self.refused = 0
        self.held = 0                     # message bytes held over all sessions, at most:
        self.held_max = 8 * limits.max_size if limits.max_held is None else limits.max_held

    def init(self, ctx: seda.StageContext) -> None:
        self.own, self.timer = ctx.stage.sink, ctx.runtime.timer
        self.delivery = ctx.runtime.sink(DELIVERY)

    def handle_event(self, ev: Any) -> None:
        kind = type(ev)
        if kind is Packet:
            session = ev.conn.data
            if session is not None and not session.closed:
                smtp = session.smtp
                events = smtp.receive(ev.data)
                # The clock starts again for bytes of a message, or once a command is whole
                # (it has said something): not for each piece of a command, which a client
                # sending a byte a second could make last as long as it liked.
                if events or smtp.in_data:
                    session.last = time.monotonic()
                self._carry_out(session, events)
                if self.held > self.held_max and session.smtp.in_data:
                    self._carry_out(session, session.smtp.too_busy())
        elif kind is Answer:
            self._answered(ev)
        elif kind is Connected:
            self._connected(ev.conn)
        elif kind is Closed:
            session = ev.conn.data
            if session is not None and not session.closed:
                session.closed = True
                self.open -= 1
                self.held -= session.held
                session.held = 0
                if session.timer is not None:
                    session.timer.cancel()
        elif kind is _Expired:
            self._expired(ev.session)

    def _connected(self, conn: Any) -> None:
        if self.open >= self.max_connections:
            # no session: its packets and its Closed are ignored (conn.data stays None), so
            # it is counted in ``open`` neither way; the close lingers, reading what the
            # client still sends, so that the 421 is not lost to a reset
            self.refused += 1
            conn.enqueue_lossy(self.full)
            conn.close()
            return
        self.accepted += 1
        self.open += 1
        session = conn.data = Session(conn, SMTPServer(self.hostname, self.domains, self.limits))
        self._carry_out(session, session.smtp.start())
        session.timer = self.timer.schedule(self.timeout, self.own, _Expired(session))

    def _answered(self, ev: Answer) -> None:
        session: Session = ev.session
        if session.closed:
            return                        # the client left meanwhile (the mail is stored)
        smtp = session.smtp
        session.last = time.monotonic()
        if ev.failure is not None:
            events = smtp.refuse(*ev.failure)
        elif ev.stored:
            events = smtp.stored()
        else:
            events = smtp.recipient(ev.who)
        session.conn.resume_reading()
        self._carry_out(session, events)

    def _carry_out(self, session: Session, events: list[Any]) -> None:
        held = session.smtp.held          # (every call into the machine ends here)
        self.held += held - session.held
        session.held = held
        out = []
        while events:
            more: list[Any] = []
            for ev in events:
                kind = type(ev)
                if kind is Reply:
                    out.append(ev.data)
                elif kind is Recipient or kind is Mail:
                    try:
                        self.delivery.enqueue(Job(session, ev))
                        session.conn.pause_reading()    # pipelined commands wait their turn
                    except seda.SinkError:
                        self.busy += 1
                        more = session.smtp.refuse(451, "4.3.2 too busy, try again later")
                elif kind is Close:
                    self._send(session, out)
                    out = []
                    session.conn.close()
            events = more
        self._send(session, out)

    def _send(self, session: Session, out: list[bytes]) -> None:
        if out:
            # closed: its Closed event is on its way
            session.conn.enqueue_lossy(b"".join(out))

    def _expired(self, session: Session) -> None:
        if session.closed:
            return
        smtp = session.smtp
        limit = self.data_timeout if smtp.in_data else self.timeout
        left = session.last + limit - time.monotonic()
        if smtp.waiting is None and left <= 0:
            self.timeouts += 1
            self._carry_out(session, smtp.timed_out())
            session.timer = None
            return
        session.timer = self.timer.schedule(max(left, 0.0) if smtp.waiting is None else limit,
                                            self.own, _Expired(session))

    def stats(self) -> dict:
        """Connections ``open`` now, ``accepted`` since the start, ``refused`` with 421 for
        being past ``max_connections``, closed for ``timeouts``, questions refused with 451
        because the delivery stage was ``busy``, message bytes ``held`` now."""
        return {"open": self.open, "accepted": self.accepted, "refused": self.refused,
                "timeouts": self.timeouts, "busy": self.busy, "held": self.held}
