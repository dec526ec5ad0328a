"""Raw bytes to a server on loopback, for requests no HTTP client would send."""

from __future__ import annotations

import socket

from tests.helpers import WAIT


def raw(address, data: bytes, timeout: float = WAIT) -> bytes:
    """Send ``data``, close our side, and read everything the server says until it closes."""
    with socket.create_connection(address, timeout=timeout) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        return out
