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


def ask(address, data: bytes, timeout: float = WAIT) -> bytes:
    """``raw`` without half-closing our side first: send ``data``, then read until the server
    closes (a client that keeps its side open, as a browser does, for a server's own close)."""
    with socket.create_connection(address, timeout=timeout) as s:
        s.sendall(data)
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


def check_head_lengths(address, last: bytes) -> None:
    """The answers to HEAD of an application that answers ``/aware``'s HEAD with an empty body
    and ``/plain``'s with its 12-byte body: no length it does not know for the first (a
    Content-Length of 0 would be wrong, RFC 9110 8.6), the GET's for the second, and no
    chunked coding for either; the connection goes on after both, HTTP/1.0 keep-alive too.
    ``last``: how the wire ends after ``GET /plain``, the body's framing included."""
    for path, length in (("/aware", None), ("/plain", "12")):
        r, data = fetch(address, path, method="HEAD")
        assert (r.status, data, r.getheader("content-length")) == (200, b"", length)
        assert r.getheader("transfer-encoding") is None
    for version in (b"1.1", b"1.0"):
        both = raw(address, b"HEAD /aware HTTP/%s\r\nHost: x\r\nConnection: keep-alive\r\n\r\n"
                   % version + b"GET /plain HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert both.count(b" 200 OK\r\n") == 2 and both.endswith(last)
