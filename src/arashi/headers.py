"""The few header fields a message list shows and sorts by, read from raw mail with the
standard library's ``email`` package. Mail is often malformed: every field is best effort and
a message that cannot be parsed at all still gets a summary (and is stored whole regardless)."""

from __future__ import annotations

import email.utils
import re
from dataclasses import dataclass
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import default

MAX_FIELD = 998            # characters kept of a field: a line's worth (RFC 5322 2.1.1)
_PARSER = BytesHeaderParser(policy=default)
_END_OF_HEADERS = re.compile(rb"(?:\A|\r?\n)\r?\n")   # the empty line that ends the header fields


@dataclass(frozen=True)
class Summary:
    """``date``: seconds since the epoch from the Date field (None when absent or unreadable);
    ``sender`` and ``subject``: text, '' when absent."""

    date: float | None
    sender: str
    subject: str


def read_field(message: Message, name: str) -> str | None:
    """Header field ``name`` of ``message`` decoded, or None when it has none. Where the
    policy's parser trips over a malformed field (it raises IndexError or AttributeError on
    some addresses, ``<m@[evil.test>``), the field as written, its folding undone: ``get_all``
    would parse it the same way, so the fallback reads ``raw_items``."""
    try:
        value = message.get(name)
        return None if value is None else str(value)
    except Exception:
        raw = next((v for k, v in message.raw_items() if k.lower() == name.lower()), None)
        return None if raw is None else " ".join(str(raw).split())


def _field(message: Message, name: str) -> str:
    return " ".join((read_field(message, name) or "").split())[:MAX_FIELD]


def _date(message: Message) -> float | None:
    try:
        raw = message.get_all("date", failobj=[])
        if not raw:
            return None
        parsed = email.utils.parsedate_to_datetime(str(raw[0]))
        return parsed.timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


_CHARSET = re.compile(rb'^content-type:[^\r\n]*(?:\r?\n[ \t][^\r\n]*)*?charset\s*=\s*"?([-\w.:]+)',
                      re.I | re.M)


def readable(raw: bytes) -> bytes:
    """``raw`` with its header block in UTF-8, for reading only (what is stored is untouched).
    Header fields are ASCII or UTF-8 (RFC 6532), but much mail has raw 8-bit ones in the
    sender's charset (a Latin-1 Subject): the ``email`` package would show each such byte as
    U+FFFD. A block that is not UTF-8 is read in the charset its Content-Type names, else in
    windows-1252 (Latin-1's superset), as mail readers do."""
    end = _END_OF_HEADERS.search(raw)
    block = raw if end is None else raw[:end.end()]
    if block.isascii():
        return raw
    try:
        block.decode("utf-8")
        return raw
    except UnicodeDecodeError:
        pass
    m = _CHARSET.search(block)
    charset = m.group(1).decode("ascii").lower() if m else "windows-1252"
    try:
        text = block.decode(charset, "replace")
    except LookupError:
        text = block.decode("windows-1252", "replace")
    # a charset the block cannot be in (ASCII, UTF-8: it is not; UTF-16: the field names
    # are ASCII), named wrongly: windows-1252 again
    if charset in ("us-ascii", "ascii", "utf-8", "utf8") or \
            text[:1] != block[:1].decode("latin-1"):
        text = block.decode("windows-1252", "replace")
    return text.encode("utf-8") + raw[len(block):]


def summarize(raw: bytes) -> Summary:
    """Date, From and Subject of ``raw`` (the RFC 5322 bytes), best effort. Only the header
    block is parsed: given the whole message, the header parser still reads the body to its
    end (0.6 s of the GIL for a 20 MB attachment)."""
    end = _END_OF_HEADERS.search(raw)
    try:
        message = _PARSER.parsebytes(readable(raw if end is None else raw[:end.end()]))
    except Exception:
        return Summary(None, "", "")
    return Summary(_date(message), _field(message, "from"), _field(message, "subject"))
