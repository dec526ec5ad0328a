"""What each HTTP/1.1 server accepts and refuses: raw requests sent over loopback to Haboob and
its peers, the statuses they answer printed as a Markdown table (docs/http.md).

    .venv/bin/python -m benchmarks.conformance [--servers haboob,nginx] [--cases host]
    .venv/bin/python -m benchmarks.conformance --bytes      # the exact bytes of each case

Each case opens one connection, sends its bytes, keeps its own side open and reads until the
server closes or stays silent for ``--timeout`` seconds (2). A cell is the statuses received, in
order, then how the connection ended: ``closed`` (by the server), ``open`` (still open when we
gave up) or ``reset``. The WSGI and ASGI servers run the echo applications of
benchmarks/echo_apps.py, so a cell also says, for some cases, what reached the application
(``app: ...``); nginx answers ``return 200``. ``app got /smuggled`` in a cell means that the
request placed after one the server should have refused, or closed the connection after, was run:
the opening for a desync with a front end that frames the bytes the other way.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from importlib import metadata
from pathlib import Path

PY = sys.executable
LOCAL = "127.0.0.1"
REPO = Path(__file__).resolve().parent.parent
ECHO = "benchmarks.echo_apps"


# -- what we send ---------------------------------------------------------------------------------

def chunked(body: bytes) -> bytes:
    """A chunked POST to / with ``body`` as its (chunked) bytes on the wire."""
    return r("POST / HTTP/1.1", H, "Transfer-Encoding: chunked", body=body)


def r(*lines: str, body: bytes = b"") -> bytes:
    """A request from its lines (request line, then fields), CRLF after each, CRLF, body."""
    return "".join(f"{line}\r\n" for line in lines).encode("latin-1") + b"\r\n" + body


GET = r("GET / HTTP/1.1", "Host: x")
SMUGGLED = r("GET /smuggled HTTP/1.1", "Host: x")


def client_hello() -> bytes:
    """The first bytes an HTTPS client sends: a real TLS ClientHello, from Python's ssl."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="x")
    with contextlib.suppress(ssl.SSLWantReadError):     # it waits for the server's answer
        tls.do_handshake()
    return outgoing.read()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def echo(self) -> dict[str, str]:
        """What the echo application saw: its ``name: value`` lines; WSGI keys become field
        names (HTTP_X_FORWARDED_FOR -> x-forwarded-for), as the application reads them."""
        seen: dict[str, str] = {}
        for line in self.body.decode("latin-1").splitlines():
            name, sep, value = line.partition(": ")
            if not sep:
                continue
            if name.startswith("header "):
                name = name[len("header "):]
                if name.isupper():            # a WSGI environ key
                    name = name.removeprefix("HTTP_").replace("_", "-")
                name = name.lower()
                seen[name] = f"{seen[name]},{value}" if name in seen else value
            else:
                seen[name] = value
        return seen


def app_saw(field: str) -> Callable[[list[Reply]], str]:
    """A note: the value of ``field`` the application saw in the first echoed request (for the
    body, its length)."""
    def note(replies: list[Reply]) -> str:
        for reply in replies:
            if reply.status == 200 and b"method: " in reply.body:
                value = reply.echo().get(field)
                if field == "body" and value is not None:
                    return f"app: body {value.split()[0]} bytes"
                return f"app: {field} {'none' if value is None else repr(value)}"
        return ""
    return note


def paths(replies: list[Reply]) -> str:
    """A note: the paths the answers are for, in the order they came."""
    seen = [reply.echo().get("path", "?") for reply in replies if b"method: " in reply.body]
    return f"answers for {' '.join(seen)}" if seen else ""


@dataclass
class Case:
    name: str
    rfc: str            # where the rule is
    expect: str         # what the RFC asks of a server, in short
    data: bytes
    note: Callable[[list[Reply]], str] | None = None
    split: int = 0      # send in pieces of this many bytes, 5 ms apart (0: all at once)


H = "Host: x"
CASES = [
    # -- the request line, versions and methods (RFC 9112 2-3, RFC 9110 2.5, 9) ------------------
    Case("GET, Host: x (baseline)", "9112 3", "200, open", GET),
    Case("2 requests on one connection", "9112 9.3", "200 200, open", GET + GET),
    Case("CRLF before the request line", "9112 2.2", "200 (SHOULD ignore it)", b"\r\n" + GET),
    Case("HTTP/1.0, no Host", "9112 3.2", "200, closed", r("GET / HTTP/1.0")),
    Case("HTTP/1.0, Connection: keep-alive", "9112 C.2.2", "200, open or closed",
         r("GET / HTTP/1.0", "Connection: keep-alive")),
    Case("HTTP/1.1, Connection: close", "9112 9.6", "200, closed",
         r("GET / HTTP/1.1", H, "Connection: close")),
    Case("HTTP/1.2", "9110 2.5", "200 (SHOULD serve as 1.1)", r("GET / HTTP/1.2", H),
         app_saw("version")),
    Case("HTTP/2.0 request line", "9110 2.5, 15.6.6", "505 (or 400)", r("GET / HTTP/2.0", H)),
    Case("HTTP/3.0 request line", "9110 2.5, 15.6.6", "505 (or 400)", r("GET / HTTP/3.0", H)),
    Case("HTTP/2 connection preface", "9113 3.4", "refused, closed",
         b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
    Case("HTTP/0.9 request (GET /)", "9112 2.3", "refused (or a 0.9 answer)", b"GET /\r\n\r\n"),
    Case("version in lower case (http/1.1)", "9112 2.3", "400 (case-sensitive)",
         r("GET / http/1.1", H)),
    Case("two spaces after the method", "9112 3", "400 (or 200: MAY split on whitespace)",
         r("GET  / HTTP/1.1", H)),
    Case("space in the target (/a b)", "9112 3.2", "400 (or a redirect)",
         r("GET /a b HTTP/1.1", H)),
    Case("NUL in the target", "9112 3.2", "400", b"GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n"),
    Case("fragment in the target (/a#f)", "9112 3.2", "400 (not in origin-form)",
         r("GET /a#f HTTP/1.1", H), app_saw("path")),
    Case("GET * (asterisk-form, not OPTIONS)", "9112 3.2.4", "400", r("GET * HTTP/1.1", H)),
    Case("OPTIONS *", "9112 3.2.4, 9110 9.3.7", "200 (or 2xx-4xx from the server)",
         r("OPTIONS * HTTP/1.1", H)),
    Case("absolute-form target, other Host", "9112 3.2.2", "200, Host ignored for the target's",
         r("GET http://a.example/abs HTTP/1.1", "Host: b.example"), app_saw("host")),
    Case("authority-form with GET", "9112 3.2.3", "400", r("GET a.example:80 HTTP/1.1", H)),
    Case("CONNECT (not a proxy)", "9110 9.3.6", "refused (405/501/400)",
         r("CONNECT a.example:443 HTTP/1.1", "Host: a.example:443")),
    Case("unknown method BREW", "9110 9.1", "501 (SHOULD), or the app's answer",
         r("BREW / HTTP/1.1", H), app_saw("method")),
    Case("unknown method -BLARGH (a token)", "9110 9.1", "501 (SHOULD), or the app's answer",
         r("-BLARGH / HTTP/1.1", H), app_saw("method")),
    Case("method in lower case (get)", "9110 9.1", "501 (case-sensitive), or the app's",
         r("get / HTTP/1.1", H), app_saw("method")),
    Case("method not a token (GE(T)", "9112 3.1", "400", r("GE(T / HTTP/1.1", H)),
    Case("TLS ClientHello to a plain port", "9112 2.2", "400 or closed", client_hello()),
    # -- Host (RFC 9112 3.2, RFC 9110 7.2) ---------------------------------------------------------
    Case("HTTP/1.1 without Host", "9112 3.2", "400 (MUST)", r("GET / HTTP/1.1")),
    Case("two Host fields, different", "9112 3.2", "400 (MUST)",
         r("GET / HTTP/1.1", "Host: a", "Host: b")),
    Case("two Host fields, the same", "9112 3.2", "400 (MUST)",
         r("GET / HTTP/1.1", "Host: a", "Host: a")),
    Case("invalid Host (x y/z)", "9112 3.2", "400 (MUST)", r("GET / HTTP/1.1", "Host: x y/z")),
    Case("Host with userinfo (u@x)", "9112 3.2, 9110 7.2", "400 (MUST: invalid)",
         r("GET / HTTP/1.1", "Host: u@x")),
    Case("Host with a bad port (x:abc)", "9112 3.2, 9110 7.2", "400 (MUST: invalid)",
         r("GET / HTTP/1.1", "Host: x:abc")),
    Case("Host: [::1]:8080", "9110 7.2", "200", r("GET / HTTP/1.1", "Host: [::1]:8080")),
    Case("empty Host", "9112 3.2", "200 (what a client sends with no authority)",
         r("GET / HTTP/1.1", "Host:")),
    # -- header fields (RFC 9112 2.2, 5; RFC 9110 5) -----------------------------------------------
    Case("bare LF line endings", "9112 2.2", "200 or 400 (MAY accept LF)",
         b"GET / HTTP/1.1\nHost: x\n\n"),
    Case("bare CR in a field line", "9112 2.2", "400 (MUST, or CR read as SP)",
         b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n"),
    Case("obs-fold (X-Fold: a CRLF SP b)", "9112 5.2", "400, or 200 with 'a b' (MUST one)",
         b"GET / HTTP/1.1\r\nHost: x\r\nX-Fold: a\r\n b\r\n\r\n", app_saw("x-fold")),
    Case("whitespace before the colon", "9112 5.1", "400 (MUST)",
         r("GET / HTTP/1.1", H, "X-A : 1")),
    Case("whitespace before the first field", "9112 2.2", "400 (MUST reject, or ignore the line)",
         r("GET / HTTP/1.1", " X-A: 1", H)),
    Case("trailing whitespace in a value", "9110 5.5", "200, value without it",
         r("GET / HTTP/1.1", H, "X-Pad: v \t"), app_saw("x-pad")),
    Case("obs-text in a value (latin-1 e-acute)", "9110 5.5", "200",
         b"GET / HTTP/1.1\r\nHost: x\r\nX-A: caf\xe9\r\n\r\n"),
    Case("NUL in a value", "9110 5.5", "400 (MUST, or NUL read as SP)",
         b"GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n"),
    Case("field line without a colon", "9112 5", "400", r("GET / HTTP/1.1", H, "X-A")),
    Case("field name not a token (X(y))", "9110 5.1", "400", r("GET / HTTP/1.1", H, "X(y): z")),
    Case("X_Forwarded_For beside X-Forwarded-For", "9110 5.1 (+ CGI)",
         "200; the app must not take X_ for X-", r("GET / HTTP/1.1", H, "X-Forwarded-For: proxy",
                                                   "X_Forwarded_For: forged"),
         app_saw("x-forwarded-for")),
    Case("101 header fields", "6585 5", "431 (or 400)",
         r("GET / HTTP/1.1", H, *(f"X-{i}: {i}" for i in range(100)))),
    Case("a 70 KB header field", "6585 5", "431 (or 400)",
         r("GET / HTTP/1.1", H, "X-Big: " + "a" * 70_000)),
    Case("request line over 8 KB", "9112 3", "414", r(f"GET /{'a' * 9000} HTTP/1.1", H)),
    Case("a request sent 1 byte at a time", "9112 2.1", "200 200, open", GET + GET, split=1),
    Case("Upgrade: h2c", "9110 7.8", "200 as HTTP/1.1 (MAY ignore)",
         r("GET / HTTP/1.1", H, "Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c",
           "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA")),
    # -- message framing and smuggling (RFC 9112 6-7) ----------------------------------------------
    Case("Content-Length body, then a GET", "9112 6.3", "200 200, open",
         r("POST / HTTP/1.1", H, "Content-Length: 5", body=b"hello") + GET, app_saw("body")),
    Case("a body that looks like a request", "9112 6.3", "200, one request",
         r("POST / HTTP/1.1", H, f"Content-Length: {len(SMUGGLED)}", body=SMUGGLED),
         app_saw("body")),
    Case("CL and TE, then a request", "9112 6.1", "400, or 200 and close (MUST close)",
         r("POST / HTTP/1.1", H, "Content-Length: 5", "Transfer-Encoding: chunked",
           body=b"0\r\n\r\n") + SMUGGLED),
    Case("two different Content-Lengths", "9112 6.3", "400 (MUST)",
         r("POST / HTTP/1.1", H, "Content-Length: 3", "Content-Length: 5", body=b"hello")),
    Case("two equal Content-Lengths", "9110 8.6", "200 or 400 (MAY either)",
         r("POST / HTTP/1.1", H, "Content-Length: 5", "Content-Length: 5", body=b"hello")),
    Case("Content-Length: 5, 5", "9110 8.6", "200 or 400 (MAY either)",
         r("POST / HTTP/1.1", H, "Content-Length: 5, 5", body=b"hello")),
    Case("negative Content-Length", "9112 6.3", "400 (MUST)",
         r("POST / HTTP/1.1", H, "Content-Length: -1", body=b"hello")),
    Case("Content-Length over 2**64", "9112 6.3", "400 (MUST) or 413",
         r("POST / HTTP/1.1", H, "Content-Length: 99999999999999999999", body=b"hello")),
    Case("Content-Length: +5", "9112 6.3", "400 (MUST: not digits)",
         r("POST / HTTP/1.1", H, "Content-Length: +5", body=b"hello")),
    Case("Transfer-Encoding: gzip, chunked", "9112 6.1", "501 (SHOULD: coding not done)",
         r("POST / HTTP/1.1", H, "Transfer-Encoding: gzip, chunked", body=b"0\r\n\r\n")),
    Case("Transfer-Encoding: chunked, gzip", "9112 6.3", "400 (MUST: chunked not last), closed",
         r("POST / HTTP/1.1", H, "Transfer-Encoding: chunked, gzip", body=b"0\r\n\r\n") + GET),
    Case("Transfer-Encoding: identity", "9112 6.3", "400 (MUST: chunked not last), closed",
         r("POST / HTTP/1.1", H, "Transfer-Encoding: identity", body=b"hello") + GET),
    Case("Transfer-Encoding: chunked, twice", "9112 6.1, 7", "400",
         r("POST / HTTP/1.1", H, "Transfer-Encoding: chunked", "Transfer-Encoding: chunked",
           body=b"0\r\n\r\n")),
    Case("TE: chunked on HTTP/1.0 keep-alive, then a request", "9112 6.1",
         "close after it (MUST: framing faulty)",
         r("POST / HTTP/1.0", "Connection: keep-alive", "Transfer-Encoding: chunked",
           body=b"5\r\nhello\r\n0\r\n\r\n")
         + r("GET /smuggled HTTP/1.0", "Connection: keep-alive")),
    Case("Transfer-Encoding obs-folded", "9112 5.2, 6.1", "400 (or read as chunked)",
         b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n"
         + SMUGGLED),
    Case("Content-Length with trailing space", "9112 6.3, 9110 5.5", "200, body 5",
         r("POST / HTTP/1.1", H, "Content-Length: 5 ", body=b"hello"), app_saw("body")),
    Case("chunked body, then a GET", "9112 7.1", "200 200, open",
         chunked(b"5\r\nhello\r\n0\r\n\r\n")
         + GET, app_saw("body")),
    Case("100 KB body, then a GET", "9112 6.3", "200 200, open",
         r("POST / HTTP/1.1", H, "Content-Length: 102400", body=b"a" * 102400) + GET,
         app_saw("body")),
    Case("100 KB chunked body, then a GET", "9112 7.1", "200 200, open",
         chunked((b"6400\r\n" + b"a" * 25600 + b"\r\n") * 4 + b"0\r\n\r\n") + GET,
         app_saw("body")),
    Case("chunked body sent 3 bytes at a time", "9112 7.1", "200 200, open",
         chunked(b"5;a=b\r\nhello\r\n0\r\nX-T: t\r\n\r\n") + GET, app_saw("body"), split=3),
    Case("Transfer-Encoding: Chunked (capital C)", "9112 7", "200 (codings are case-insensitive)",
         r("POST / HTTP/1.1", H, "Transfer-Encoding: Chunked", body=b"5\r\nhello\r\n0\r\n\r\n"),
         app_saw("body")),
    Case("last chunk 000", "9112 7.1", "200 (last-chunk is 1*0)",
         chunked(b"5\r\nhello\r\n000\r\n\r\n"),
         app_saw("body")),
    Case("chunk size with 20 leading zeros", "9112 7.1", "200 (1*HEXDIG), or 400 from a limit",
         chunked(b"0" * 20 + b"5\r\nhello\r\n0\r\n\r\n"), app_saw("body")),
    Case("chunk size 0x5", "9112 7.1", "400",
         chunked(b"0x5\r\nhello\r\n0\r\n\r\n")),
    Case("chunk extension with BWS (5 ; a = \"b\")", "9112 7.1.1", "200, body 5",
         chunked(b'5 ; a = "b"\r\nhello\r\n0\r\n\r\n'), app_saw("body")),
    Case("chunk extension (5;a=b)", "9112 7.1.1", "200, body 5",
         chunked(b"5;a=b\r\nhello\r\n0\r\n\r\n"), app_saw("body")),
    Case("chunk extension of 5 KB", "9112 7.1.1", "200, or 400 from a limit",
         chunked(b"5;a=" + b"b" * 5000 + b"\r\nhello\r\n0\r\n\r\n")),
    Case("trailer field X-Trailer", "9112 7.1.2, 9110 6.5", "200, not merged into the header",
         chunked(b"5\r\nhello\r\n0\r\nX-Trailer: t\r\n\r\n"), app_saw("x-trailer")),
    Case("trailer field Host: evil", "9110 6.5.1", "200 kept apart, or 400",
         chunked(b"5\r\nhello\r\n0\r\nHost: evil\r\n\r\n"), app_saw("host")),
    Case("bad chunk size (zz)", "9112 7.1", "400",
         chunked(b"zz\r\nhello\r\n0\r\n\r\n")),
    Case("chunk size over 2**64", "9112 7.1", "400",
         chunked(b"10000000000000005\r\nhello\r\n0\r\n\r\n")),
    Case("chunk longer than its size", "9112 7.1", "400",
         chunked(b"3\r\nhello\r\n0\r\n\r\n")),
    Case("chunked lines ending in bare LF", "9112 7.1, 2.2", "400 (or MAY accept LF)",
         chunked(b"5\nhello\n0\n\n")),
    # -- Expect (RFC 9110 10.1.1) ------------------------------------------------------------------
    Case("Expect: 100-continue, body sent at once", "9110 10.1.1", "100 200 or 200",
         r("POST / HTTP/1.1", H, "Expect: 100-continue", "Content-Length: 5", body=b"hello")),
    Case("Expect: 100-continue, body held back", "9110 10.1.1", "100, open (MUST send 100 or a "
         "final status)", r("POST / HTTP/1.1", H, "Expect: 100-continue", "Content-Length: 5")),
    Case("Expect: 100-continue, Content-Length 2 GiB", "9110 10.1.1", "413, no 100",
         r("POST / HTTP/1.1", H, "Expect: 100-continue", "Content-Length: 2147483648")),
    Case("Expect: 100-continue on HTTP/1.0", "9110 10.1.1", "no 100 (MUST ignore it)",
         r("POST / HTTP/1.0", "Expect: 100-continue", "Content-Length: 5", body=b"hello")),
    Case("Expect: something-else", "9110 10.1.1", "417 (MAY) or 200",
         r("GET / HTTP/1.1", H, "Expect: something-else")),
    # -- pipelining and limits ---------------------------------------------------------------------
    Case("3 pipelined, the 2nd says close", "9112 9.3, 9.6", "200 200, closed",
         GET + r("GET / HTTP/1.1", H, "Connection: close") + GET),
    Case("2 pipelined, then one without Host", "9112 9.3", "200 200 400, closed",
         GET + GET + r("GET / HTTP/1.1")),
    Case("a slow GET, a fast GET, then garbage", "9112 9.3", "200 200 400, closed, in order",
         r("GET /slow?sleep=0.3 HTTP/1.1", H) + r("GET /fast HTTP/1.1", H) + b"garbage\r\n\r\n",
         paths),
    Case("a slow GET, then Expect: 100-continue, body held back", "9110 10.1.1, 9112 9.3",
         "200 100 (the 100 after the answer before it), open",
         r("GET /slow?sleep=0.3 HTTP/1.1", H)
         + r("POST / HTTP/1.1", H, "Expect: 100-continue", "Content-Length: 5")),
    Case("2 pipelined, then garbage", "9112 9.3", "200 200 400, closed",
         GET + GET + b"\x16\x03\x01garbage\r\n\r\n"),
    Case("50 pipelined GETs", "9112 9.3", "200 x50, open", GET * 50),
    Case("Content-Length: 2 GiB (over a 1 GiB limit)", "9110 15.5.14", "413, or wait for it",
         r("POST / HTTP/1.1", H, "Content-Length: 2147483648")),
]


# -- what comes back ------------------------------------------------------------------------------

def exchange(port: int, data: bytes, timeout: float, split: int = 0) -> tuple[bytes, str]:
    """Send ``data`` on a new connection (in pieces of ``split`` bytes) and read until the
    server closes (``closed``), resets (``reset``) or stays silent for ``timeout`` seconds
    (``open``)."""
    got = []
    with socket.create_connection((LOCAL, port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with contextlib.suppress(OSError):    # the server stopped reading: see what it said
            for start in range(0, len(data), split or len(data)):
                sock.sendall(data[start:start + (split or len(data))])
                if split:
                    time.sleep(0.005)
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                return b"".join(got), "open"
            except ConnectionResetError:
                return b"".join(got), "reset"
            if not chunk:
                return b"".join(got), "closed"
            got.append(chunk)


def parse(data: bytes) -> tuple[list[Reply], bytes]:
    """The responses in ``data``, and what is left that is not one (junk or a cut-off end)."""
    replies = []
    while data.startswith(b"HTTP/"):
        end = data.find(b"\r\n\r\n")
        if end < 0:
            break
        lines = data[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[1].isdigit():
            break
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        rest = data[end + 4:]
        if status < 200 or status in (204, 304):
            body = b""
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body, rest = dechunk(rest)
        elif "content-length" in headers:
            n = int(headers["content-length"])
            body, rest = rest[:n], rest[n:]
        else:                                 # delimited by the close
            body, rest = rest, b""
        replies.append(Reply(status, headers, body))
        data = rest
    return replies, data


def dechunk(data: bytes) -> tuple[bytes, bytes]:
    body = []
    while True:
        line, _, data = data.partition(b"\r\n")
        size = int(line.split(b";")[0] or b"0", 16)
        if size == 0:
            _, _, data = data.partition(b"\r\n\r\n") if data[:2] != b"\r\n" else (0, 0, data[2:])
            return b"".join(body), data
        body.append(data[:size])
        data = data[size + 2:]


def cell(case: Case, data: bytes, how: str) -> str:
    replies, junk = parse(data)
    statuses = [str(reply.status) for reply in replies]
    if len(statuses) > 4 and len(set(statuses)) == 1:
        shown = f"{statuses[0]} x{len(statuses)}"
    else:
        shown = " ".join(statuses) or "no answer"
    if junk:                                  # e.g. an HTTP/0.9 answer: no status line
        junk_text = f"{len(junk)} bytes without a status line"
        shown = f"{shown} + {junk_text}" if replies else junk_text
    text = f"{shown}, {how}"
    notes = []
    if case.note is not None:
        notes.append(case.note(replies))
    if any(reply.echo().get("path") == "/smuggled" for reply in replies):
        notes.append("**app got /smuggled**")
    notes = [n for n in notes if n]
    return text + ("; " + "; ".join(notes) if notes else "")


# -- the servers ----------------------------------------------------------------------------------

def nginx_binary() -> str | None:
    return shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")


def nginx(port: int, work: Path) -> list[str]:
    """One worker, every location answered ``return 200`` (nginx discards the body)."""
    temp = " ".join(f"{kind}_temp_path {work};" for kind in
                    ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf = work / "nginx.conf"
    conf.write_text(
        f"worker_processes 1; daemon off; pid {work}/nginx.pid; error_log {work}/nginx.err;\n"
        f"events {{ worker_connections 1024; }}\n"
        f"http {{ access_log off; {temp}\n"
        f"  server {{ listen {LOCAL}:{port}; location / {{ return 200 \"ok\\n\"; }} }} }}\n")
    return [nginx_binary() or "nginx", "-e", str(work / "nginx.err"), "-p", str(work),
            "-c", str(conf)]


@dataclass(frozen=True)
class Server:
    name: str
    command: Callable[[int, Path], list[str]]
    needs: str = ""                 # the Python module it runs, or "nginx"

    def missing(self) -> str | None:
        if self.needs == "nginx":
            return None if nginx_binary() else "nginx not installed (apt-get install nginx-light)"
        if self.needs and importlib.util.find_spec(self.needs) is None:
            return f"{self.needs} not installed"
        return None


def uvicorn(http: str) -> Callable[[int, Path], list[str]]:
    return lambda port, work: [PY, "-m", "uvicorn", f"{ECHO}:asgi", "--host", LOCAL, "--port",
                               str(port), "--http", http, "--lifespan", "off",
                               "--no-access-log", "--log-level", "warning"]


SERVERS = [
    Server("haboob", lambda port, work: [PY, "-m", "haboob", f"{ECHO}:wsgi",
                                         "--bind", f"{LOCAL}:{port}"], "haboob"),
    # gunicorn closes an idle connection after 2 s by default, as long as our wait: 10 s, so
    # that "open" or "closed" is its protocol's choice, not a race with its timer
    Server("gunicorn", lambda port, work: [PY, "-m", "gunicorn", "-k", "gthread", "--threads",
                                           "4", "--keep-alive", "10", "--bind",
                                           f"{LOCAL}:{port}", f"{ECHO}:wsgi"], "gunicorn"),
    Server("waitress", lambda port, work: [PY, "-m", "waitress", f"--listen={LOCAL}:{port}",
                                           f"{ECHO}:wsgi"], "waitress"),
    Server("uvicorn", uvicorn("httptools"), "httptools"),
    Server("uvicorn-h11", uvicorn("h11"), "h11"),
    Server("nginx", nginx, "nginx"),
]


def versions() -> str:
    """The versions measured, for the line above the table."""
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    found = [f"pyseda {commit or '?'}"]
    for dist in ("gunicorn", "waitress", "uvicorn", "httptools", "h11"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found.append(f"{dist} {metadata.version(dist)}")
    binary = nginx_binary()
    if binary:
        out = subprocess.run([binary, "-v"], capture_output=True, text=True).stderr
        found.append(out.strip().replace("nginx version: nginx/", "nginx "))
    return ", ".join(found)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOCAL, 0))
        return sock.getsockname()[1]


def run_server(server: Server, cases: list[Case], timeout: float, cells: dict) -> None:
    """Start ``server``, run every case against it, stop it; cells[(case, server)] = text."""
    with tempfile.TemporaryDirectory(prefix=f"conformance-{server.name}-") as tmp:
        work, port = Path(tmp), free_port()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        with open(work / "server.log", "wb") as log:
            proc = subprocess.Popen(server.command(port, work), cwd=REPO, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        try:
            if not wait_ready(proc, port):
                tail = (work / "server.log").read_text(errors="replace")[-400:]
                for case in cases:
                    cells[case.name, server.name] = "did not start"
                print(f"{server.name}: did not start:\n{tail}", file=sys.stderr)
                return
            for case in cases:
                data, how = exchange(port, case.data, timeout, case.split)
                cells[case.name, server.name] = cell(case, data, how)
                if proc.poll() is not None:
                    print(f"{server.name}: died after {case.name!r}", file=sys.stderr)
                    return
        finally:
            stop(proc)


def wait_ready(proc: subprocess.Popen, port: int, limit: float = 20.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end and proc.poll() is None:
        try:
            socket.create_connection((LOCAL, port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def stop(proc: subprocess.Popen) -> None:
    """TERM to the server's own process group (its workers too), KILL if it lingers."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# -- the table ------------------------------------------------------------------------------------

def table(cases: list[Case], servers: list[Server], cells: dict) -> str:
    head = ["case", "RFC", "the RFC asks", *(s.name for s in servers)]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case in cases:
        row = [case.name, case.rfc, case.expect,
               *(cells.get((case.name, s.name), "not run") for s in servers)]
        rows.append("| " + " | ".join(text.replace("|", "\\|") for text in row) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default=",".join(s.name for s in SERVERS),
                        help="comma-separated, of: " + ", ".join(s.name for s in SERVERS))
    parser.add_argument("--cases", default="",
                        help="only the cases whose name contains this text")
    parser.add_argument("--timeout", type=float, default=2.0,
                        help="seconds of silence after which a connection counts as open")
    parser.add_argument("--bytes", action="store_true", help="print each case's bytes and exit")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.cases.lower() in c.name.lower()]
    if args.bytes:
        for case in cases:
            print(f"{case.name}:\n  {case.data[:300]!r}{' ...' if len(case.data) > 300 else ''}")
        return 0
    wanted = args.servers.split(",")
    unknown = set(wanted) - {s.name for s in SERVERS}
    if unknown:
        parser.error(f"unknown server(s): {', '.join(sorted(unknown))}")
    servers = []
    for server in SERVERS:
        if server.name not in wanted:
            continue
        why = server.missing()
        if why:
            print(f"skipping {server.name}: {why}", file=sys.stderr)
        else:
            servers.append(server)
    cells: dict[tuple[str, str], str] = {}
    threads = [threading.Thread(target=run_server, args=(s, cases, args.timeout, cells))
               for s in servers]                # one server per thread, its cases in order
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"Measured {date.today().isoformat()} with `.venv/bin/python -m benchmarks.conformance"
          f"` ({versions()}, Python {sys.version.split()[0]}); a cell is the statuses received, "
          f"then how the connection ended.\n")
    print(table(cases, servers, cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
