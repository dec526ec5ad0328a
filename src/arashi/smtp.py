"""SMTP, the receiving side (RFC 5321), as a state machine without I/O, as h11 is for HTTP:
``receive(bytes)`` returns events, and the caller does what they say. It knows nothing of
sockets, threads or the database, so every case is tested by feeding it bytes.

Events: ``Reply`` (bytes to send), ``Close`` (close once the replies are sent), and two
questions the machine waits on, reading nothing more until they are answered (so pipelined
commands are taken strictly in order): ``Recipient`` (is this a user? answer ``recipient()``)
and ``Mail`` (a whole message: answer ``stored()`` once it is committed, or ``refuse()``).
``250`` for DATA is said by ``stored()`` only: the caller calls it after the commit.

Extensions: SIZE, 8BITMIME, PIPELINING, ENHANCEDSTATUSCODES, SMTPUTF8 (RFC 6531: UTF-8 in the
paths of a transaction that declares it). Limits (``Limits``): a command
line is at most 1000 bytes with its CRLF (500), a message at most ``max_size`` (552), a
transaction at most ``max_recipients`` (452); a message's lines are not limited, only its
size (RFC 5321 4.5.3.1 asks for no limits where there can be none: HTML mail often has longer
lines). Time limits are the caller's, who calls ``timed_out()``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_LINE = 1000              # bytes in a command line, CRLF included (RFC 5321 4.5.3.1.4)
# what no command may hold (RFC 5321 4.1.2's syntax has none of them; a tab separates nothing
# but is taken, as space-like)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Limits:
    max_size: int = 32 * 2**20        # bytes of message, after dot-stuffing is undone
    max_recipients: int = 100         # per transaction (RFC 5321 4.5.3.1.8's minimum)
    max_errors: int = 20              # bad commands before the connection is closed
    max_line: int = MAX_LINE
    # message bytes held over all connections at once (the receiver's): past it, the client
    # whose message pushed it there gets 421 and tries later, rather than all of them
    # growing the process without bound. None: eight messages of the largest size.
    max_held: int | None = None


class Reply:
    """A reply: ``code`` and its text lines; ``data`` is what goes on the wire."""

    __slots__ = ("code", "lines")

    def __init__(self, code: int, *lines: str) -> None:
        self.code, self.lines = code, lines or ("",)

    @property
    def data(self) -> bytes:
        last = len(self.lines) - 1
        return "".join(f"{self.code}{'-' if i < last else ' '}{line}\r\n"
                       for i, line in enumerate(self.lines)).encode("ascii", "replace")

    def __repr__(self) -> str:
        return f"Reply({self.code}, {' / '.join(self.lines)!r})"


class Close:
    """Close the connection once the replies before this are sent."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Close()"


@dataclass
class Recipient:
    """RCPT TO for ``local``@``domain`` (a domain of ours): answer ``recipient(who)`` with who
    receives it (a user id, say) or None for nobody. ``address`` is the mailbox as the client
    wrote it; ``local`` has its quoting undone (``"john"`` is ``john``, RFC 5322 3.4.1)."""

    address: str
    local: str
    domain: str


@dataclass
class Mail:
    """A whole message, dot-stuffing undone: store ``data`` for each of ``recipients`` (the
    answers given to ``Recipient``), then answer ``stored()``."""

    sender: str                        # '' for the null reverse path <>
    recipients: list[Any]
    data: bytes
    params: dict[str, str] = field(default_factory=dict)


# states
GREETING, READY, MAIL, DATA, CLOSED = "greeting", "ready", "mail", "data", "closed"

# A path (RFC 5321 4.1.2): <[source route:]local-part@domain>, then the parameters. A
# Quoted-string in the local part is read by the grammar (qtextSMTP, quoted-pairSMTP: any
# printable character or space, '"' and '\' escaped), so it may hold spaces and brackets; the
# rest is read as leniently as before, as Postfix does by default (a dot-string's and a
# domain's rules unchecked, an RFC 5322 obs-local-part such as "john".doe taken), but a path
# is one mailbox: one '@' outside quotes, something after it, no quote or space outside a
# Quoted-string. The source route, obsolete, is dropped (RFC 5321 C).
_QUOTED = r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e\x80-\U0010ffff]|\\[\x20-\x7e])*"'   # (UTF-8: RFC 6531)
_LOCAL = rf'(?:{_QUOTED}|[^\s<>"@])+'     # one character a turn: no nested repeats to backtrack
_DOMAIN = r'[^\s<>"@]+'                 # a name or an address literal ([IPv6:::1]), unchecked
_ROUTE_DOMAIN = r'[^\s<>"@,:]+'
_PATH = re.compile(rf"\s*<(?:@{_ROUTE_DOMAIN}(?:,@{_ROUTE_DOMAIN})*:)?"
                   rf"(?P<mailbox>(?P<local>{_LOCAL})(?:@(?P<domain>{_DOMAIN}))?)?>(?P<rest>.*)",
                   re.S)
_QUOTED_PAIR = re.compile(r"\\(.)")


def unquote(local: str) -> str:
    """A local part as it names a mailbox: its quotes and quoted-pairs undone, so that
    ``"john"``, ``"jo\\hn"`` and ``john`` are one (RFC 5322 3.4.1; RFC 5321 4.1.2 asks that
    a mailbox not need the quotes)."""
    if '"' not in local:
        return local
    return "".join(_QUOTED_PAIR.sub(r"\1", part[1:-1]) if part.startswith('"') else part
                   for part in re.findall(rf'{_QUOTED}|[^"]+', local))


class SMTPServer:
    """One connection's SMTP conversation. ``hostname``: ours, in the greeting; ``domains``:
    the domains whose mail we accept (RCPT TO for any other gets 550)."""

    def __init__(self, hostname: str, domains: frozenset[str] | set[str] | list[str],
                 limits: Limits | None = None) -> None:
        self.hostname = hostname
        self.domains = frozenset(d.lower().rstrip(".") for d in domains)
        self.limits = limits = limits or Limits()
        # the most a message may take on the wire: its size, the dots doubled for
        # transparency (at most a third more) and room for the line that ends it
        self._wire_max = limits.max_size + limits.max_size // 3 + 2 * limits.max_line
        self.state = GREETING
        self.waiting: Recipient | Mail | None = None   # the question we wait on
        self.errors = 0
        self._buffer = bytearray()
        self._discarding = False      # in a command line too long, until its end
        self._reset()

    def _reset(self) -> None:
        self.sender: str | None = None
        self.recipients: list[Any] = []
        self.params: dict[str, str] = {}
        self._body = bytearray()
        self._scan = 0
        self._dropped = 0             # bytes of message thrown away: over the size limit

    @property
    def closed(self) -> bool:
        return self.state == CLOSED

    @property
    def in_data(self) -> bool:
        return self.state == DATA

    @property
    def held(self) -> int:
        """Bytes of the client's kept here: the message being read, and what came after it."""
        return len(self._body) + len(self._buffer)

    # -- what the caller calls -----------------------------------------------------------------

    def start(self) -> list[Any]:
        """The greeting, to send when the connection opens."""
        return [Reply(220, f"{self.hostname} ESMTP arashi")]

    def receive(self, data: bytes) -> list[Any]:
        """Bytes from the client -> events. While a question waits, bytes are only kept."""
        if self.state == CLOSED:
            return []
        self._buffer += data
        return self._run()

    def recipient(self, who: Any) -> list[Any]:
        """The answer to ``Recipient``: who receives its mail, or None (550)."""
        ask = self.waiting
        assert isinstance(ask, Recipient), "no recipient question is waiting"
        self.waiting = None
        if who is None:
            out = [Reply(550, f"5.1.1 <{ask.address}>: no such user here")]
        else:
            self.recipients.append(who)
            out = [Reply(250, "2.1.5 OK")]
        return out + self._run()

    def stored(self) -> list[Any]:
        """The answer to ``Mail``: committed for every recipient. Says 250."""
        assert isinstance(self.waiting, Mail), "no message is waiting"
        self.waiting = None
        self._reset()
        return [Reply(250, "2.0.0 OK: message stored"), *self._run()]

    def refuse(self, code: int, text: str) -> list[Any]:
        """Answer the waiting question with a failure (451: try later, 554: never); a refused
        message ends its transaction."""
        assert self.waiting is not None, "no question is waiting"
        if isinstance(self.waiting, Mail):
            self._reset()
        self.waiting = None
        return [Reply(code, text), *self._run()]

    def timed_out(self) -> list[Any]:
        """The client was silent too long: 421 and close."""
        return self._close(421, f"4.4.2 {self.hostname} timeout: closing the connection")

    def too_busy(self) -> list[Any]:
        """The server holds too much mail at once: 421 and close (the client tries later)."""
        return self._close(421, f"4.3.1 {self.hostname} is receiving too much mail at once: "
                           "try again later")

    # -- inside --------------------------------------------------------------------------------

    def _close(self, code: int, text: str) -> list[Any]:
        if self.state == CLOSED:
            return []
        self.state = CLOSED
        self._buffer.clear()
        self._reset()
        return [Reply(code, text), Close()]

    def _run(self) -> list[Any]:
        out: list[Any] = []
        while self.waiting is None and self.state != CLOSED:
            if self.state == DATA:
                if not self._data(out):
                    break
                continue
            line = self._line(out)
            if line is None:
                break
            if line is not False:
                out += self._command(line)
        return out

    def _line(self, out: list[Any]) -> bytes | bool | None:
        """The next command line without its line end; False for one refused (too long);
        None when no whole line is here yet."""
        buf = self._buffer
        end = buf.find(b"\n")
        if end < 0:
            if len(buf) >= self.limits.max_line:
                self._discarding = True           # no end in sight: drop what is here
                buf.clear()
            return None
        line = bytes(buf[:end])
        del buf[:end + 1]
        if self._discarding or end + 1 > self.limits.max_line:
            self._discarding = False
            out += self._error(500, "5.5.2 line too long")
            return False
        return line.removesuffix(b"\r")

    def _error(self, code: int, text: str) -> list[Any]:
        self.errors += 1
        if self.errors >= self.limits.max_errors:
            return self._close(421, "4.7.0 too many errors: closing the connection")
        return [Reply(code, text)]

    def _command(self, line: bytes) -> list[Any]:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return self._error(500, "5.5.2 syntax error: 8-bit characters in a command")
        if _CONTROL.search(text) is not None:  # (a NUL in an address, a CR echoed in a reply)
            return self._error(500, "5.5.2 syntax error: control characters in a command")
        verb, _, arg = text.strip().partition(" ")
        verb = verb.upper()
        if not text.isascii():
            # UTF-8 only in the paths of a transaction that says SMTPUTF8 (RFC 6531 3.4)
            if verb not in ("MAIL", "RCPT"):
                return self._error(500, "5.5.2 syntax error: 8-bit characters in a command")
            if verb == "MAIL" and "SMTPUTF8" not in arg.upper().split():
                return self._error(553, "5.6.7 an address in UTF-8 needs MAIL FROM's SMTPUTF8")
            if verb == "RCPT" and self.sender is not None and "SMTPUTF8" not in self.params:
                return self._error(553, "5.6.7 an address in UTF-8 needs MAIL FROM's SMTPUTF8")
        arg = arg.strip()
        handler = _COMMANDS.get(verb)
        if handler is None:
            return self._error(500 if verb not in _NOT_HERE else 502,
                               "5.5.2 command not recognised" if verb not in _NOT_HERE
                               else "5.5.1 command not implemented")
        result: list[Any] = handler(self, arg)
        return result

    def _ehlo(self, arg: str) -> list[Any]:
        if not arg:
            return self._error(501, "5.5.4 EHLO needs a domain or address")
        self._reset()
        self.state = READY
        return [Reply(250, f"{self.hostname} greets {arg}", f"SIZE {self.limits.max_size}",
                      "8BITMIME", "PIPELINING", "ENHANCEDSTATUSCODES", "SMTPUTF8")]

    def _helo(self, arg: str) -> list[Any]:
        if not arg:
            return self._error(501, "5.5.4 HELO needs a domain or address")
        self._reset()
        self.state = READY
        return [Reply(250, self.hostname)]

    def _mail(self, arg: str) -> list[Any]:
        if self.state == GREETING:
            return self._error(503, "5.5.1 send EHLO or HELO first")
        if self.sender is not None:
            return self._error(503, "5.5.1 nested MAIL command")
        if not arg.upper().startswith("FROM:"):
            return self._error(501, "5.5.4 syntax: MAIL FROM:<address>")
        m = _PATH.fullmatch(arg[5:])
        if m is None:
            return self._error(501, "5.1.7 syntax: MAIL FROM:<address>")
        params = {}
        for word in m["rest"].split():
            key, _, value = word.partition("=")
            params[key.upper()] = value
        for key, value in params.items():
            if key == "SIZE":
                if not value.isdigit():
                    return self._error(501, "5.5.4 SIZE takes a number of bytes")
                if int(value) > self.limits.max_size:
                    return [Reply(552, "5.3.4 message size exceeds fixed maximum message size")]
            elif key == "BODY":
                if value.upper() not in ("7BIT", "8BITMIME"):
                    return self._error(501, "5.5.4 BODY is 7BIT or 8BITMIME")
            elif key == "SMTPUTF8":
                if value:
                    return self._error(501, "5.5.4 SMTPUTF8 takes no value")
            else:
                return self._error(555, f"5.5.4 parameter {key} not supported")
        self.sender, self.params = m["mailbox"] or "", params
        self.state = MAIL
        return [Reply(250, "2.1.0 OK")]

    def _rcpt(self, arg: str) -> list[Any]:
        if self.sender is None:
            return self._error(503, "5.5.1 need MAIL before RCPT")
        if not arg.upper().startswith("TO:"):
            return self._error(501, "5.5.4 syntax: RCPT TO:<address>")
        m = _PATH.fullmatch(arg[3:])
        if m is None or not m["mailbox"]:
            return self._error(501, "5.1.3 syntax: RCPT TO:<address>")
        if m["rest"].strip():
            return self._error(555, "5.5.4 RCPT parameters not supported")
        address, local, domain = m["mailbox"], unquote(m["local"]), m["domain"]
        if domain is None:  # only <postmaster> may come without a domain (RFC 5321 4.5.1)
            if local.lower() != "postmaster":
                return [Reply(550, f"5.1.3 <{address}>: give a full address")]
            domain = self.hostname
        elif domain.lower().rstrip(".") not in self.domains:
            return [Reply(550, f"5.7.1 <{address}>: relaying denied, mail for {domain} is "
                          "not accepted here")]
        if len(self.recipients) >= self.limits.max_recipients:
            return [Reply(452, "4.5.3 too many recipients")]
        self.waiting = Recipient(address, local, domain.lower())
        return [self.waiting]

    def _data(self, out: list[Any]) -> bool:
        """Take message bytes from the buffer; True once the message has ended."""
        body, buf = self._body, self._buffer
        body += buf
        buf.clear()
        end = body.find(b"\r\n.\r\n", max(0, self._scan))
        if end < 0:
            self._scan = max(0, len(body) - 4)
            # The size counts the message as it is stored, without the dots doubled for
            # transparency (RFC 1870 4), which add at most a third (".\r\n" sent as "..\r\n"):
            # only past that can the message not fit.
            if len(body) > self._wire_max:
                self._dropped += len(body) - 4        # too big: keep only what may end it
                del body[:-4]
                self._scan = 0
            return False
        buf += body[end + 5:]
        raw = bytes(body[:end + 2])
        self.state = READY
        if self._dropped:
            self._reset()
            out.append(Reply(552, "5.3.4 message too big"))
            return True
        data = raw.replace(b"\r\n.", b"\r\n")[2:]
        if len(data) > self.limits.max_size:
            self._reset()
            out.append(Reply(552, "5.3.4 message too big"))
            return True
        self.waiting = Mail(self.sender or "", list(self.recipients), data, dict(self.params))
        out.append(self.waiting)
        return True

    def _data_command(self, arg: str) -> list[Any]:
        if self.sender is None:
            return self._error(503, "5.5.1 need MAIL before DATA")
        if not self.recipients:
            return self._error(554, "5.5.1 no valid recipients")
        if arg:
            return self._error(501, "5.5.4 DATA takes no argument")
        self.state = DATA
        self._body = bytearray(b"\r\n")        # the line end before the first line
        self._scan = 0
        return [Reply(354, "end data with <CR><LF>.<CR><LF>")]

    def _rset(self, arg: str) -> list[Any]:
        self._reset()
        if self.state == MAIL:
            self.state = READY
        return [Reply(250, "2.0.0 OK")]

    def _noop(self, arg: str) -> list[Any]:
        return [Reply(250, "2.0.0 OK")]

    def _quit(self, arg: str) -> list[Any]:
        return self._close(221, f"2.0.0 {self.hostname} closing connection")

    def _vrfy(self, arg: str) -> list[Any]:
        if not arg:                            # (RFC 5321 4.1.1.6: VRFY names someone)
            return self._error(501, "5.5.4 VRFY needs an argument")
        return [Reply(252, "2.5.2 cannot VRFY user, but will accept message and attempt "
                      "delivery")]

    def _help(self, arg: str) -> list[Any]:
        return [Reply(214, "2.0.0 commands: EHLO HELO MAIL RCPT DATA RSET NOOP QUIT VRFY")]


_COMMANDS = {"EHLO": SMTPServer._ehlo, "HELO": SMTPServer._helo, "MAIL": SMTPServer._mail,
             "RCPT": SMTPServer._rcpt, "DATA": SMTPServer._data_command,
             "RSET": SMTPServer._rset, "NOOP": SMTPServer._noop, "QUIT": SMTPServer._quit,
             "VRFY": SMTPServer._vrfy, "HELP": SMTPServer._help}
_NOT_HERE = {"EXPN", "TURN", "ETRN", "STARTTLS", "AUTH", "BDAT", "SEND", "SOML", "SAML"}
