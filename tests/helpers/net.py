"""Raw bytes to a server on loopback, for requests no HTTP client would send."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Callable
from typing import Any

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


def fetch(address, path: str, headers: dict | None = None, method: str = "GET"):
    """One request on a connection of its own: (the response, its body)."""
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request(method, path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r, body


def until(value: Callable[[], Any], ok: Callable[[Any], bool]) -> Any:
    """Poll ``value()`` until ``ok`` of it (what a timer or another thread does next), within
    WAIT; the last value."""
    deadline = time.monotonic() + WAIT
    while not ok(v := value()):
        assert time.monotonic() < deadline, v
        time.sleep(0.01)
    return v
