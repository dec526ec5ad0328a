"""The Gnutella stages' names and the events they send each other (besides the socket layer's).

    catcher --Dial--> server --(peer, descriptor)--> router
                             --Greet--> router (a ping of ours)
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
    """Server -> router: ping ``peer`` with ``ttl``: 3 when a connection we dialed is up, to
    learn hosts from the pongs; 1 when it has been quiet, to learn whether it is still there
    (the answer is traffic, and traffic is what keeps a connection open)."""

    __slots__ = ("peer", "ttl")

    def __init__(self, peer: Any, ttl: int = 3) -> None:
        self.peer, self.ttl = peer, ttl
