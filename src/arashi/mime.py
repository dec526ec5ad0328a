"""A stored message made safe to show: its headers, its text with web addresses made links, its
HTML parts as escaped source text (never rendered, so never executed), and its attachments
listed. Mail is hostile or broken often enough that nothing here trusts it: parsing failures,
unknown charsets and 8-bit headers become text with replacement characters and a notice."""

from __future__ import annotations

import email
import email.message
import re
from dataclasses import dataclass, field
from email.policy import default

from markupsafe import Markup, escape

from .headers import read_field

SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")
MAX_TEXT = 1_000_000           # characters of a text part shown; the rest is cut, with a notice
_URL = re.compile(r"https?://[^\s<>\"'`]+", re.IGNORECASE)
_TRAILING = ".,;:!?)]}'"
_TOKEN = r"[a-z0-9!#$&^_.+-]+"
_CONTENT_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}")


def clean(text: str) -> str:
    """``text`` with undecodable bytes (surrogate escapes) and control characters other than
    tab and newline replaced: always encodable, never a terminal or header trick."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return "".join(c if c in "\t\n" or (c >= " " and c != "\x7f") else "\ufffd" for c in text)


def linkify(text: str) -> Markup:
    """Escaped ``text`` with its http and https addresses as links (nothing else becomes a
    link: no ``javascript:``, no ``data:``)."""
    out, at = [], 0
    for m in _URL.finditer(text):
        url = m.group().rstrip(_TRAILING)
        end = m.start() + len(url)
        out.append(escape(text[at:m.start()]))
        out.append(Markup('<a href="{0}" rel="noopener noreferrer nofollow">{0}</a>')
                   .format(url))
        at = end
    out.append(escape(text[at:]))
    return Markup("").join(out)


@dataclass(frozen=True)
class Attachment:
    index: int                 # the part's position in the message's walk, for its URL
    filename: str
    content_type: str
    size: int


@dataclass
class Shown:
    headers: list[tuple[str, str]] = field(default_factory=list)
    texts: list[Markup] = field(default_factory=list)        # text parts, links made
    html: list[str] = field(default_factory=list)            # HTML parts as source text
    attachments: list[Attachment] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def parse(raw: bytes) -> email.message.EmailMessage:
    return email.message_from_bytes(raw, policy=default)  # type: ignore[return-value]


def _parts(msg: email.message.Message) -> list[email.message.Message]:
    """The message's leaf parts, in order (their index is their place in this list)."""
    return [p for p in msg.walk() if not p.is_multipart()]


def safe_type(part: email.message.Message) -> str:
    ctype = part.get_content_type().lower()
    return ctype if _CONTENT_TYPE.fullmatch(ctype) else "application/octet-stream"


def _filename(part: email.message.Message) -> str | None:
    try:
        name = part.get_filename()
    except Exception:
        return "attachment"
    return None if name is None else clean(str(name)).replace("\n", " ")[:200] or "attachment"


def _payload(part: email.message.Message) -> bytes:
    try:
        data = part.get_payload(decode=True)
    except Exception:
        data = None
    return data if isinstance(data, bytes) else b""


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _text(part: email.message.Message, notices: list[str]) -> str:
    """A text part decoded with its charset; an unknown or wrong one is replaced by UTF-8
    with replacement characters, and said so. A part that declares none is US-ASCII (RFC
    2045 5.2), but 8-bit text in one is nearly always UTF-8, as mail clients take it: so it
    is read, if it is valid UTF-8."""
    charset = part.get_content_charset()
    data = _payload(part)
    if charset is None:
        charset = "us-ascii" if data.isascii() or not _is_utf8(data) else "utf-8"
    try:
        text = data.decode(charset)
    except UnicodeDecodeError:
        notices.append(f"A part is not valid {clean(charset)[:60]}; characters that could not "
                       "be read are replaced.")
        text = data.decode(charset, "replace")
    except (LookupError, ValueError):      # no such codec; ValueError: a NUL in the name
        notices.append(f"A part declares the unknown charset {clean(charset)[:60]!r}; it is "
                       "shown as UTF-8, with characters it could not read replaced.")
        text = data.decode("utf-8", "replace")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if len(text) > MAX_TEXT:
        notices.append(f"A text part is {len(text)} characters long; the first {MAX_TEXT} "
                       "are shown.")
        text = text[:MAX_TEXT]
    return clean(text)


def show(raw: bytes) -> Shown:
    """What the message page shows of ``raw``."""
    shown = Shown()
    try:
        msg = parse(raw)
        parts = _parts(msg)
    except Exception:
        shown.notices.append("This message could not be parsed; it is shown as it arrived.")
        shown.texts.append(linkify(clean(raw[:MAX_TEXT].decode("utf-8", "replace"))))
        return shown
    if msg.defects or any(p.defects for p in parts):
        shown.notices.append("This message is malformed; parts of it may be missing or shown "
                             "as text.")
    for name in SHOWN_HEADERS:
        value = read_field(msg, name)
        if value is not None:
            shown.headers.append((name, clean(value)))
    for i, part in enumerate(parts):
        ctype = safe_type(part)
        try:
            disposition = part.get_content_disposition()
        except Exception:
            disposition = "attachment"
        filename = _filename(part)
        if disposition != "attachment" and filename is None and ctype == "text/plain":
            shown.texts.append(linkify(_text(part, shown.notices)))
        elif disposition != "attachment" and filename is None and ctype == "text/html":
            shown.html.append(_text(part, shown.notices))
        else:
            shown.attachments.append(Attachment(i, filename or f"part-{i}", ctype,
                                                len(_payload(part))))
    if not shown.texts and not shown.html and not shown.attachments:
        shown.notices.append("This message has no text.")
    return shown


def attachment(raw: bytes, index: int) -> tuple[str, str, bytes] | None:
    """(filename, content type, decoded bytes) of part ``index``, or None."""
    try:
        parts = _parts(parse(raw))
    except Exception:
        return None
    if not 0 <= index < len(parts):
        return None
    part = parts[index]
    return _filename(part) or f"part-{index}", safe_type(part), _payload(part)
