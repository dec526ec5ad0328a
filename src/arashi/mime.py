"""A stored message made safe to show: its headers, its text with web addresses made links, its
HTML parts as escaped source text (never rendered, so never executed), its attachments
listed, and the messages attached to it (a forwarded message, a bounce's returned one) each
with its own headers and parts, a delivery report as its text. Mail is hostile or broken
often enough that nothing here trusts it: parsing failures, unknown charsets and 8-bit
headers become text with replacement characters and a notice."""

from __future__ import annotations

import email
import email.message
import re
from dataclasses import dataclass, field
from email.policy import default

from markupsafe import Markup, escape

from .headers import read_field, readable

SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")
MAX_TEXT = 1_000_000           # characters of a text part shown; the rest is cut, with a notice
MAX_DEPTH = 8                  # attached messages shown one inside another; deeper, flattened
# parts shown as text like text/plain: a bounce's returned header block (RFC 6522)
_TEXT_TYPES = frozenset({"text/plain", "text/rfc822-headers"})
# attached messages, shown with their own headers (RFC 2046 5.2.1, RFC 6532, RFC 5537);
# message/external-body and message/partial are no messages of their own: their parts are
# shown in the one that holds them, as before
_MESSAGE_TYPES = frozenset({"message/rfc822", "message/global", "message/news"})
# delivery reports (RFC 3464, RFC 6533): groups of fields, shown as the text they are
_STATUS_TYPES = frozenset({"message/delivery-status", "message/global-delivery-status"})
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
    """A message as shown; ``messages`` are those attached to it (message/rfc822 parts), each
    a ``Shown`` of its own (headers, texts, ...; notices are the outermost one's)."""

    headers: list[tuple[str, str]] = field(default_factory=list)
    texts: list[Markup] = field(default_factory=list)        # text parts, links made
    html: list[str] = field(default_factory=list)            # HTML parts as source text
    attachments: list[Attachment] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    messages: list[Shown] = field(default_factory=list)


def parse(raw: bytes) -> email.message.EmailMessage:
    # (the top header block in UTF-8 if it was in another charset: ``headers.readable``)
    return email.message_from_bytes(readable(raw), policy=default)  # type: ignore[return-value]


def _parts(msg: email.message.Message) -> list[email.message.Message]:
    """The message's leaf parts, in order (their index is their place in this list)."""
    return [p for p in msg.walk() if not p.is_multipart()]


def safe_type(part: email.message.Message) -> str:
    ctype = part.get_content_type().lower()
    return ctype if _CONTENT_TYPE.fullmatch(ctype) else "application/octet-stream"


# bidi embeddings, overrides and isolates (not the marks LRM, RLM, ALM): in a file name they
# only serve to show "invoice<RLO>fdp.exe" as "invoiceexe.pdf"
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _filename(part: email.message.Message) -> str | None:
    try:
        name = part.get_filename()
    except Exception:
        return "attachment"
    if name is None:
        return None
    return _BIDI.sub("\ufffd", clean(str(name)).replace("\n", " "))[:200] or "attachment"


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


def _headers(msg: email.message.Message) -> list[tuple[str, str]]:
    return [(name, clean(value)) for name in SHOWN_HEADERS
            if (value := read_field(msg, name)) is not None]


def _status(part: email.message.Message, notices: list[str]) -> str:
    """A delivery report as its text: its groups of fields (the parser makes each group a
    message of headers), a blank line between them."""
    groups = part.get_payload()
    if not isinstance(groups, list):
        return _text(part, notices)
    out = []
    for group in groups:
        if not isinstance(group, email.message.Message):
            continue
        lines = [f"{name}: {value}" for name, value in group.raw_items()]
        rest = group.get_payload()
        if isinstance(rest, str) and rest.strip():
            lines.append(rest)
        out.append("\n".join(lines))
    text = "\n\n".join(out).replace("\r\n", "\n").replace("\r", "\n")
    if len(text) > MAX_TEXT:
        notices.append(f"A delivery report is {len(text)} characters long; the first "
                       f"{MAX_TEXT} are shown.")
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
    shown.headers = _headers(msg)
    index = {id(part): i for i, part in enumerate(parts)}   # an attachment's number: its URL
    notices = shown.notices
    # the parts in order, depth first, each with the Shown it goes into: a stack, not
    # recursion, so that no nesting of parts can exhaust Python's
    stack: list[tuple[email.message.Message, Shown, int]] = [(msg, shown, 0)]
    too_deep = False                     # (said once)
    while stack:
        part, into, depth = stack.pop()
        ctype = safe_type(part)
        if ctype in _STATUS_TYPES:
            into.texts.append(linkify(_status(part, notices)))
            continue
        if part.is_multipart():
            children = part.get_payload()
            assert isinstance(children, list)
            if ctype in _MESSAGE_TYPES and children and isinstance(children[0],
                                                                   email.message.Message):
                # an attached message (message/rfc822, its payload the message): its own
                # headers, and its parts inside it
                if depth < MAX_DEPTH:
                    attached = Shown(headers=_headers(children[0]))
                    into.messages.append(attached)
                    into, depth = attached, depth + 1
                elif not too_deep:
                    too_deep = True
                    notices.append(f"Messages attached more than {MAX_DEPTH} deep are shown "
                                   "without their own headers.")
            stack.extend((child, into, depth) for child in reversed(children)
                         if isinstance(child, email.message.Message))
            continue
        try:
            disposition = part.get_content_disposition()
        except Exception:
            disposition = "attachment"
        filename = _filename(part)
        i = index[id(part)]
        inline = disposition != "attachment" and filename is None
        if inline and ctype in _TEXT_TYPES:
            into.texts.append(linkify(_text(part, notices)))
        elif inline and ctype == "text/html":
            into.html.append(_text(part, notices))
        elif inline and ctype.startswith("multipart/"):
            # a multipart whose boundary is missing or never found (the notice says it is
            # malformed): its body, parts and all, is what could be read; as text, not as a
            # file to download, and nothing when it is empty
            text = _text(part, notices)
            if text.strip():
                into.texts.append(linkify(text))
        else:
            into.attachments.append(Attachment(i, filename or f"part-{i}", ctype,
                                               len(_payload(part))))
    if not shown.texts and not shown.html and not shown.attachments and not shown.messages:
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
