"""The few header fields a message list shows and sorts by, read from raw mail with the
standard library's ``email`` package. Mail is often malformed: every field is best effort and
a message that cannot be parsed at all still gets a summary (and is stored whole regardless)."""

from __future__ import annotations

import email.utils
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from email.policy import default

MAX_FIELD = 998            # characters kept of a field: a line's worth (RFC 5322 2.1.1)
_PARSER = BytesHeaderParser(policy=default)


@dataclass(frozen=True)
class Summary:
    """``date``: seconds since the epoch from the Date field (None when absent or unreadable);
    ``sender`` and ``subject``: text, '' when absent."""

    date: float | None
    sender: str
    subject: str


def _field(message: object, name: str) -> str:
    try:
        value = message.get(name)  # type: ignore[attr-defined]
        text = "" if value is None else str(value)
    except Exception:              # a defect the policy's parser could not get past
        raw = message.get_all(name, failobj=[""])  # type: ignore[attr-defined]
        text = str(raw[0]) if raw else ""
    return " ".join(text.split())[:MAX_FIELD]


def _date(message: object) -> float | None:
    try:
        raw = message.get_all("date", failobj=[])  # type: ignore[attr-defined]
        if not raw:
            return None
        parsed = email.utils.parsedate_to_datetime(str(raw[0]))
        return parsed.timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def summarize(raw: bytes) -> Summary:
    """Date, From and Subject of ``raw`` (the RFC 5322 bytes), best effort."""
    try:
        message = _PARSER.parsebytes(raw)
    except Exception:
        return Summary(None, "", "")
    return Summary(_date(message), _field(message, "from"), _field(message, "subject"))
