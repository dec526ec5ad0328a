"""A TCP socket bound to an address, not yet listening: what ``SocketLayer.listen`` listens on,
and what a supervisor holds so that its workers can share the port."""

from __future__ import annotations

import socket
from typing import Any


class ListeningSocket(socket.socket):
    """A socket that makes the sockets it accepts from its family, type and protocol as read
    once: ``socket.socket.accept()`` reads them again for every connection and makes enums of
    the first two, a tenth of all that a connection per request costs a server here."""

    __slots__ = ("kind",)

    def __init__(self, family: int, kind: int) -> None:
        super().__init__(family, kind)
        self.kind = (family, kind, self.proto)

    def accept(self) -> tuple[socket.socket, Any]:
        fd, peer = self._accept()  # type: ignore[attr-defined]  # (what accept() calls)
        return socket.socket(*self.kind, fd), peer


def bind_socket(address: tuple[Any, ...], *, reuse_addr: bool = True,
                reuse_port: bool = False) -> ListeningSocket:
    """A blocking TCP socket bound to ``address`` (``(host, port)``; IPv6 when the host has a
    ``:``, port 0 for any free port). ``reuse_addr`` lets a restarted server bind while its
    old connections linger in TIME_WAIT; ``reuse_port`` lets other sockets with the option
    (the same user's) bind the same address, the kernel spreading connections over those that
    listen. Raises ``OSError`` (the socket closed) when the address cannot be bound."""
    family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
    sock = ListeningSocket(family, socket.SOCK_STREAM)
    try:
        if reuse_addr:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock
