"""The Gnutella stages' names and the events they send each other (besides the socket layer's).

    catcher --Dial--> server --(peer, descriptor)--> router
                             --Greet--> router
            <--Up/Down--

A descriptor travels to the router as a plain ``(peer, descriptor)`` tuple: it is the event
made most often, and a tuple is the cheapest object to make.
"""

from __future__ import annotations

from typing import Any

from .addresses import Address

SERVER, ROUTER, CATCHER = "gnutella.server", "gnutella.router", "gnutella.catcher"


class Dial:
    """Catcher -> server: open a connection to ``address`` (the catcher keeps our outgoing
    connections up; the server owns every connection)."""

    __slots__ = ("address",)

    def __init__(self, address: Address) -> None:
        self.address = address


class Up:
    """Server -> catcher: the connection to ``address`` finished its handshake."""

    __slots__ = ("address",)

    def __init__(self, address: Address) -> None:
        self.address = address


class Down:
    """Server -> catcher: the connection to ``address`` is gone; ``worked`` says whether its
    handshake had finished (a host that never answers is backed off; one that worked and
    closed is only rested)."""

    __slots__ = ("address", "worked")

    def __init__(self, address: Address, worked: bool) -> None:
        self.address, self.worked = address, worked


class Greet:
    """Server -> router: a connection we dialed is up; ping it to learn hosts from its pongs."""

    __slots__ = ("peer",)

    def __init__(self, peer: Any) -> None:
        self.peer = peer
