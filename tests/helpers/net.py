"""Raw bytes to a server on loopback, for requests no HTTP client would send."""

from __future__ import annotations

import http.client
import socket
import threading
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


def check_field_rules(address) -> None:
    """The answers of an application (WSGI or ASGI) that answers ``/103``, ``/100`` and
    ``/600`` with those statuses, ``/differ`` with two different Content-Lengths, ``/equal``
    with the same one twice, ``/204`` with a 204 and a Content-Length, and ``/dated`` and
    ``/dated-stream`` (whole and streamed) with a Date of 2001, each otherwise with "hello":
    a 500 for the first four, one Content-Length, none on a 204 (GET or HEAD), and only the
    application's Date (RFC 9110 5.3, 8.6, 15)."""
    ask_ = b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    for path in (b"/103", b"/100", b"/600", b"/differ"):
        assert raw(address, ask_ % path).startswith(b"HTTP/1.1 500"), path
    equal = raw(address, ask_ % b"/equal")
    assert equal.lower().count(b"content-length") == 1 and equal.endswith(b"\r\n\r\nhello")
    for request in (ask_ % b"/204", b"HEAD /204 HTTP/1.1\r\nHost: x\r\n\r\n"):
        none = raw(address, request)
        assert none.startswith(b"HTTP/1.1 204") and b"content-length" not in none.lower()
    for path in (b"/dated", b"/dated-stream"):
        dated = raw(address, ask_ % path).lower()
        assert dated.count(b"\r\ndate:") == 1 and b"date: mon, 01 jan 2001" in dated, path


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


def check_head_before_body(address, headed: threading.Event) -> None:
    """GET / of an application that holds its first piece, b"data: 1\\n\\n", until ``headed``
    is set: the head must reach the client before it (chunked), or this times out."""
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request("GET", "/")
    try:
        r = c.getresponse()                    # (timed out here: the head waited for a piece)
    finally:
        headed.set()
    assert (r.status, r.getheader("transfer-encoding")) == (200, "chunked")
    assert r.read() == b"data: 1\n\n"
    c.close()
