"""The HTTP/1.1 static-file protocol every baseline speaks, so that their answers are the same
bytes (Date apart) and a difference in a measurement comes from how a server schedules its
work, never from what it sends.

GET and HEAD of files under a root, keep-alive, Content-Length and Content-Type, 404 for
anything missing, 405 for other methods, 400 (and a close) for bytes that are not HTTP. Requests
are parsed with httptools, as Haboob parses them.
"""

from __future__ import annotations

import os
import socket
import time
from email.utils import formatdate
from typing import NamedTuple
from urllib.parse import unquote_to_bytes

import httptools

SERVER = b"pyseda-baseline"
RECV_SIZE = 65536

# Content types by extension; nginx is configured from the same table (benchmarks.webstudy).
TYPES = {".html": "text/html", ".txt": "text/plain", ".css": "text/css",
         ".js": "application/javascript", ".json": "application/json", ".png": "image/png",
         ".jpg": "image/jpeg", ".gif": "image/gif"}
DEFAULT_TYPE = "application/octet-stream"
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


class Request(NamedTuple):
    method: bytes           # b"GET", b"HEAD", ...
    target: bytes           # the request target as sent: path, query and %-escapes
    keep_alive: bool        # httptools' reading of the version and Connection header


class Reply(NamedTuple):
    status: int
    content_type: str
    body: bytes             # the whole body, also for HEAD: Content-Length is its length


class RequestParser:
    """Feeds the bytes of one connection to httptools and hands back the requests they
    complete, in order (several when a client pipelines)."""

    def __init__(self) -> None:
        self._parser = httptools.HttpRequestParser(self)
        self._url = b""
        self._done: list[Request] = []

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_message_complete(self) -> None:
        p = self._parser
        self._done.append(Request(p.get_method(), self._url, p.should_keep_alive()))
        self._url = b""

    def feed(self, data: bytes) -> list[Request]:
        """The requests ``data`` completes; raises ``httptools.HttpParserError`` on bad bytes."""
        self._parser.feed_data(data)
        done, self._done = self._done, []
        return done


def error(status: int) -> Reply:
    return Reply(status, "text/plain", f"{REASONS[status]}\n".encode())


def content_type(path: str) -> str:
    return TYPES.get(os.path.splitext(path)[1].lower(), DEFAULT_TYPE)


def plan(method: bytes, target: bytes, root: str) -> Reply | str:
    """Either the reply for a request that needs no file (an error), or the path of the file
    to send. The query is dropped, %-escapes decoded, and nothing outside ``root`` is served;
    a directory means its index.html."""
    if method not in (b"GET", b"HEAD"):
        return error(405)
    rel = os.fsdecode(unquote_to_bytes(target.split(b"?", 1)[0])).lstrip("/")
    path = os.path.normpath(os.path.join(root, rel))
    if path != root and not path.startswith(root + os.sep):
        return error(404)
    if os.path.isdir(path):
        path = os.path.join(path, "index.html")
    return path if os.path.isfile(path) else error(404)


def read(path: str) -> bytes | None:
    """The file's bytes with one blocking read, or None if it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def file_reply(path: str, body: bytes) -> Reply:
    return Reply(200, content_type(path), body)


def answer(method: bytes, target: bytes, root: str) -> Reply:
    """The reply to a request, reading the file inline."""
    step = plan(method, target, root)
    if isinstance(step, Reply):
        return step
    body = read(step)
    return error(404) if body is None else file_reply(step, body)


_date: tuple[int, bytes] = (0, b"")


def http_date() -> bytes:
    """The Date header's value, formatted once a second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, formatdate(now, usegmt=True).encode())
    return _date[1]


def encode(reply: Reply, *, head: bool, keep_alive: bool) -> bytes:
    """The response on the wire: status line, headers and (unless ``head``) the body, joined
    into one bytes object so it goes out in as few sends as the socket allows."""
    status, ctype, body = reply
    lines = (f"HTTP/1.1 {status} {REASONS[status]}\r\n".encode()
             + b"Server: " + SERVER + b"\r\nDate: " + http_date()
             + f"\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\nConnection: "
               f"{'keep-alive' if keep_alive else 'close'}\r\n\r\n".encode())
    return lines if head else lines + body


def respond(req: Request, root: str) -> bytes:
    """The whole response to one parsed request."""
    return encode(answer(req.method, req.target, root), head=req.method == b"HEAD",
                  keep_alive=req.keep_alive)


BAD_REQUEST = encode(error(400), head=False, keep_alive=False)


def serve_blocking(conn: socket.socket, root: str) -> None:
    """Serve one connection with blocking calls until the client closes it, asks to close, sends
    bad bytes or lets its timeout (if the socket has one) run out; the threaded baselines run
    this, one call per connection."""
    parser = RequestParser()
    with conn:
        try:
            while data := conn.recv(RECV_SIZE):
                try:
                    requests = parser.feed(data)
                except httptools.HttpParserError:
                    conn.sendall(BAD_REQUEST)
                    return
                for req in requests:
                    conn.sendall(respond(req, root))
                    if not req.keep_alive:
                        return
        except OSError:             # reset, broken pipe, or the keep-alive timeout
            return
