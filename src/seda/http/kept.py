"""What reading a set of header fields gave, kept for equal fields.

An application sends the same response fields again and again: the same list, or equal ones
made afresh, as frameworks build theirs per response. Checking them and making their header
lines cost more than the rest of a small answer, so each application's stage (asgi.py,
wsgi.py) reads a set of fields once. A client, likewise, sends the same request fields on
every request of a connection, and a WSGI stage makes their environ entries once. The tables
are bounded as the protocol's kept heads are: at most ``HEADS_KEPT`` sets, each of at most
``HEAD_KEPT_MAX`` bytes as header lines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

HEADS_KEPT = 1024        # sets of fields kept ...
HEAD_KEPT_MAX = 2048     # ... if, as header lines, they come to no more bytes

H = TypeVar("H")


class KeptHeads(Generic[H]):
    """``read(fields)``, read once for equal fields. Only fields of the exact type ``plain``
    (``bytes`` or ``str``) are kept: a memoryview's or an mmap's contents can change under
    an equal key, and a subclass may format itself otherwise; unhashable fields (lists,
    writable memoryviews) are read each time. Safe from several threads: a dict's get, set and
    clear are atomic."""

    def __init__(self, read: Callable[[tuple[Any, ...]], H], plain: type[Any]) -> None:
        self.read, self.plain = read, plain
        self.table: dict[tuple[Any, ...], H] = {}

    def get(self, fields: tuple[Any, ...]) -> H:
        table = self.table
        try:
            head = table.get(fields)
        except (TypeError, ValueError):        # unhashable: a list, a writable memoryview
            return self.read(fields)
        if head is None:
            head = self.read(fields)
            plain, size = self.plain, 0
            for name, value in fields:
                if type(name) is not plain or type(value) is not plain:
                    return head
                size += len(name) + len(value) + 4     # as a header line: ": " and CRLF
            if size > HEAD_KEPT_MAX:
                return head
            if len(table) >= HEADS_KEPT:       # (full of fields seen once: start again)
                table.clear()
            table[fields] = head
        return head
