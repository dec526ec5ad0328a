"""The error of the Gnutella protocol layer: what a peer sent cannot be understood.

The connection layer closes the one connection that raised it (issue 15: bad input costs that
connection, never the router); the message says what was wrong, for the log.

API: ``ProtocolError(message, descriptors=())``; ``err.descriptors`` is a list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ProtocolError(ValueError):
    """A peer broke the protocol. ``descriptors`` holds what the same ``feed`` parsed before
    the fault, complete and still worth routing before the connection closes."""

    def __init__(self, message: str, descriptors: Sequence[Any] = ()) -> None:
        super().__init__(message)
        self.descriptors = list(descriptors)
