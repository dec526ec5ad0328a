"""The ``http.response.pathsend`` extension with plain ASGI applications over real sockets: the
file named is the body (sent with sendfile), HEAD and 204 send none, a file that cannot be
sent makes ``send`` raise and the client get a 500, a wrong Content-Length never sends a byte
past it, and the descriptor is closed once the response has gone. Starlette's and FastAPI's
FileResponse, which use it, are tested in tests/haboob/test_server_asgi_pathsend.py."""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import socket
import threading

import pytest

from seda.http import Limits, mount_asgi, pathsend, serve

from tests.helpers import WAIT, certs
from tests.helpers.net import raw, until

PATHSEND = "http.response.pathsend"


def run(rt, app, ssl_context=None):
    sink = mount_asgi(rt, app, tasks=16, lifespan="off")
    listener = serve(rt, ("127.0.0.1", 0), sink, limits=Limits(response_timeout=5),
                     ssl_context=ssl_context)
    rt.start()
    return listener.address


def file_app(path, status=200, headers=(), failures=None):
    """An application that answers every request with the file at ``path``, by pathsend;
    what its ``send`` raised is appended to ``failures``."""
    async def app(scope, receive, send):
        assert scope["extensions"][PATHSEND] == {}
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/octet-stream"), *headers]})
        try:
            await send({"type": PATHSEND, "path": str(path)})
        except Exception as exc:
            if failures is not None:
                failures.append(exc)
            raise
    return app


def opened(path) -> int:
    """How many descriptors of this process are open on ``path``."""
    real = os.path.realpath(path)
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):     # closed while we looked
            count += os.readlink(f"/proc/self/fd/{fd}") == real
    return count


@pytest.fixture(params=["cached", "uncached"])
def opening(request, monkeypatch):
    """Each path as the kernel has it in its caches (opened on the application's loop), or as
    it has not (opened in the loop's executor, off the loop's thread): then the names of the
    threads that opened one, else None."""
    if request.param == "cached":
        return None
    threads: list[str] = []
    real = pathsend.open_regular

    def open_regular(path):
        threads.append(threading.current_thread().name)
        return real(path)
    monkeypatch.setattr(pathsend, "open_nowait", lambda *args: None)
    monkeypatch.setattr(pathsend, "open_regular", open_regular)
    return threads


@pytest.fixture
def big(tmp_path):
    path = tmp_path / "big.bin"
    path.write_bytes(os.urandom(5 * 2**20 + 7))
    return path


def test_the_file_is_the_body_and_the_connection_goes_on(rt, big, opening):
    address = run(rt, file_app(big))
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    for _ in range(2):                         # the same connection: the framing is right
        c.request("GET", "/")
        r = c.getresponse()
        data = r.read()
        assert r.status == 200 and int(r.getheader("content-length")) == big.stat().st_size
        assert hashlib.sha256(data).digest() == hashlib.sha256(big.read_bytes()).digest()
    c.close()
    until(lambda: opened(big), lambda n: n == 0)   # each descriptor closed once sent
    if opening is not None:                        # off the loop's thread: it may wait
        assert len(opening) == 2 and "seda:asgi" not in opening


def test_through_tls_the_file_goes_in_pieces(rt, big, tmp_path):
    """No sendfile through TLS: the connection reads the file piece by piece; an empty file
    is no piece at all."""
    server, client = certs.contexts(tmp_path)
    (tmp_path / "empty").write_bytes(b"")

    async def app(scope, receive, send):
        path = tmp_path / "empty" if scope["path"] == "/empty" else big
        await file_app(path)(scope, receive, send)

    address = run(rt, app, ssl_context=server)
    c = http.client.HTTPSConnection(*address, timeout=WAIT, context=client)
    for path, data in (("/", big.read_bytes()), ("/empty", b""), ("/", big.read_bytes())):
        c.request("GET", path)
        r = c.getresponse()
        assert (r.status, r.read() == data) == (200, True), path
    c.close()
    until(lambda: opened(big), lambda n: n == 0)


def test_an_empty_file_is_an_empty_body(rt, tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    out = raw(run(rt, file_app(tmp_path / "empty")), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200") and b"content-length: 0\r\n" in out.lower()
    assert out.endswith(b"\r\n\r\n")


def test_head_and_204_send_no_body(rt, tmp_path):
    (tmp_path / "file").write_bytes(b"twelve bytes")

    async def app(scope, receive, send):
        status = 204 if scope["path"] == "/empty" else 200
        await file_app(tmp_path / "file", status)(scope, receive, send)

    address = run(rt, app)
    head = raw(address, b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n")
    assert b"content-length: 12\r\n" in head.lower()       # what a GET would have said
    empty = raw(address, b"GET /empty HTTP/1.1\r\nHost: x\r\n\r\n")
    assert empty.startswith(b"HTTP/1.1 204") and empty.endswith(b"\r\n\r\n")
    assert b"content-length" not in empty.lower()
    until(lambda: opened(tmp_path / "file"), lambda n: n == 0)


def test_a_relative_path_is_taken_from_the_working_directory(rt, tmp_path, monkeypatch):
    """As Starlette's FileResponse("static/x.png") passes it on: the application's own
    working directory is the server's."""
    (tmp_path / "here.txt").write_bytes(b"found")
    monkeypatch.chdir(tmp_path)
    out = raw(run(rt, file_app("here.txt")), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200") and out.endswith(b"\r\n\r\nfound")


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo"])
def test_a_file_that_cannot_be_sent_makes_send_raise_and_the_client_get_a_500(
        rt, tmp_path, kind, opening):
    path = tmp_path / kind
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":                       # opening it must not wait for a writer
        os.mkfifo(path)
    failures: list[Exception] = []
    out = raw(run(rt, file_app(path, failures=failures)), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 500")
    expected = FileNotFoundError if kind == "missing" else ValueError
    assert len(failures) == 1 and isinstance(failures[0], expected), failures


def test_a_wrong_content_length_never_sends_bytes_past_it(rt, tmp_path):
    (tmp_path / "file").write_bytes(b"abcdef")

    async def app(scope, receive, send):
        length = b"3" if scope["path"] == "/long" else b"10"
        await file_app(tmp_path / "file", headers=[(b"content-length", length)])(
            scope, receive, send)

    address = run(rt, app)
    long = raw(address, b"GET /long HTTP/1.1\r\nHost: x\r\n\r\nGET /long HTTP/1.1\r\n"
                        b"Host: x\r\n\r\n")
    assert long.count(b"HTTP/1.1 200") == 2 and long.endswith(b"\r\n\r\nabc")
    assert b"content-length: 3\r\n" in long.lower()
    short = raw(address, b"GET /short HTTP/1.1\r\nHost: x\r\n\r\nGET /short HTTP/1.1\r\n"
                         b"Host: x\r\n\r\n")
    # the file's own length, and the connection closes after it: the second request waits
    assert short.count(b"HTTP/1.1 200") == 1 and short.endswith(b"\r\n\r\nabcdef")
    assert b"content-length: 6\r\n" in short.lower() and b"connection: close" in short.lower()


def test_pathsend_after_a_streamed_body_has_begun_is_refused(rt, tmp_path):
    (tmp_path / "file").write_bytes(b"file")
    failures: list[Exception] = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"begun", "more_body": True})
        try:
            await send({"type": PATHSEND, "path": str(tmp_path / "file")})
        except RuntimeError as exc:
            failures.append(exc)
            raise

    out = raw(run(rt, app), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200") and b"file" not in out
    assert not out.endswith(b"0\r\n\r\n")      # the chunked body never ends: cut off
    assert len(failures) == 1


def test_a_client_that_leaves_mid_file_has_the_descriptor_closed(rt, big):
    address = run(rt, file_app(big))
    with socket.create_connection(address, timeout=WAIT) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200")
        # the server is held up on this client (5 MB do not fit in the socket buffers)
        until(lambda: opened(big), lambda n: n == 1)
    until(lambda: opened(big), lambda n: n == 0)
