"""ASGI applications in an asyncio stage of their own: the HTTP scope, bodies both ways as they
come, http.disconnect, failures, shedding. Plain ASGI callables, real sockets; the frameworks
are tested end to end in tests/haboob/."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import http.client
import json
import logging
import os
import socket
import threading

import httpx
import pytest

from seda.http import Limits, asgi, from_asgi2, is_asgi, is_asgi2, mount_asgi, serve
from seda.http import kept as kept_heads

from tests.helpers import WAIT
from tests.helpers.net import (
    check_field_rules,
    check_head_before_body,
    check_head_lengths,
    raw,
    until,
)
from tests.helpers.silent import serve_beside_silent, timed_out_silent


def run(rt, app, limits=None, **options):
    sink = mount_asgi(rt, app, tasks=16, **options)
    listener = serve(rt, ("127.0.0.1", 0), sink, limits=limits or Limits(response_timeout=5))
    rt.start()
    return listener.address


def get(address, method="GET", path="/", body=None, headers=None):
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r, data


async def read_body(receive) -> bytes:
    body = b""
    while True:
        message = await receive()
        assert message["type"] == "http.request"
        body += message["body"]
        if not message["more_body"]:
            return body


async def answer(send, status=200, body=b"", headers=()):
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain"), *headers]})
    await send({"type": "http.response.body", "body": body})


def in_thread(event: threading.Event):
    """Wait for a test thread's event without blocking the stage's loop."""
    return asyncio.to_thread(event.wait, WAIT)


def test_the_scope_says_what_the_request_is(rt):
    async def app(scope, receive, send):
        body = await read_body(receive)
        shown = {k: scope[k] for k in ("type", "http_version", "method", "scheme", "path",
                                       "root_path", "state", "extensions")}
        shown.update(raw_path=scope["raw_path"].decode(), asgi=scope["asgi"],
                     query=scope["query_string"].decode(), client=scope["client"][0],
                     server=list(scope["server"]), body=body.decode(),
                     headers=[[k.decode(), v.decode()] for k, v in scope["headers"]])
        await answer(send, body=json.dumps(shown).encode())

    address = run(rt, app, root_path="/app", server_name="example.org", server_port=8080)
    r, data = get(address, "POST", "/app/a%20b/%C3%A9?x=1&y=%20", b"payload",
                  {"Content-Type": "text/plain", "X-Twice": "1"})
    assert r.status == 200
    shown = json.loads(data)
    assert shown.pop("headers")[-2:] == [["content-type", "text/plain"], ["x-twice", "1"]]
    assert shown == {"type": "http", "http_version": "1.1", "method": "POST", "scheme": "http",
                     "path": "/app/a b/\u00e9", "raw_path": "/app/a%20b/%C3%A9",
                     "root_path": "/app", "state": {},
                     "extensions": {"http.response.pathsend": {}},
                     "asgi": {"version": "3.0", "spec_version": "2.4"}, "query": "x=1&y=%20",
                     "client": "127.0.0.1", "server": ["example.org", 8080], "body": "payload"}


def test_the_scope_fields_made_once_per_target_are_each_target_s_own(rt, monkeypatch):
    monkeypatch.setattr(asgi, "_TARGETS_KEPT", 4)
    seen = []

    async def app(scope, receive, send):
        seen.append((scope["path"], scope["raw_path"], scope["query_string"]))
        await answer(send)

    address = run(rt, app)
    targets = ["/a%20b?x=1", "/a%20b?x=2", "/%C3%A9", "/a%20b?x=1",
               *(f"/t{i}?{i}" for i in range(6)), "/a%20b?x=1", "/%C3%A9"]
    for target in targets:
        assert get(address, path=target)[0].status == 200
    expected = {"/a%20b?x=1": ("/a b", b"/a%20b", b"x=1"),
                "/a%20b?x=2": ("/a b", b"/a%20b", b"x=2"),
                "/%C3%A9": ("/\u00e9", b"/%C3%A9", b""),
                **{f"/t{i}?{i}": (f"/t{i}", f"/t{i}".encode(), str(i).encode()) for i in range(6)}}
    assert seen == [expected[t] for t in targets]
    assert 0 < len(rt.stage("asgi").handler.targets) <= 4     # kept, and bounded


def test_the_scope_follows_a_path_a_router_in_front_rewrote(rt):
    seen = []

    async def app(scope, receive, send):
        seen.append((scope["path"], scope["raw_path"]))
        await answer(send)

    sink = mount_asgi(rt, app, tasks=16)

    class ByHost:                              # a Dispatch: one site per Host
        def enqueue(self, req):
            req.path = "/" + req.header("host") + req.path
            sink.enqueue(req)

    address = serve(rt, ("127.0.0.1", 0), ByHost(), limits=Limits(response_timeout=5)).address
    rt.start()
    for host in ("a.example", "b.example", "a.example"):
        assert get(address, path="/index", headers={"Host": host})[0].status == 200
    assert seen == [("/a.example/index", b"/a.example/index"),
                    ("/b.example/index", b"/b.example/index"),
                    ("/a.example/index", b"/a.example/index")]


def test_a_large_body_arrives_in_pieces_as_it_comes(rt):
    async def app(scope, receive, send):
        h, size, pieces = hashlib.sha256(), 0, 0
        while True:
            message = await receive()
            h.update(message["body"])
            size += len(message["body"])
            pieces += 1
            if not message["more_body"]:
                break
        await answer(send, body=f"{size} {pieces > 1} {h.hexdigest()}".encode())

    body = os.urandom(3 * 2**20)
    _r, data = get(run(rt, app), "POST", "/", body)
    assert data == f"{len(body)} True {hashlib.sha256(body).hexdigest()}".encode()


def test_a_streamed_response_goes_out_piece_by_piece(rt):
    sent = threading.Event()

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"first\n", "more_body": True})
        await in_thread(sent)                  # the client has the first piece by now
        await send({"type": "http.response.body", "body": b"second\n", "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    address = run(rt, app)
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request("GET", "/")
    r = c.getresponse()
    assert r.getheader("transfer-encoding") == "chunked"
    assert r.readline() == b"first\n"
    sent.set()
    assert r.read() == b"second\n"
    c.close()


def test_a_stream_s_head_goes_before_its_first_piece_when_the_app_awaits_it(rt):
    """An event stream (or a model's tokens) whose first piece is a while coming: the head goes
    once the application awaits after http.response.start, as uvicorn and hypercorn send it,
    so that the client sees its answer begin (an EventSource opens) before the first event."""
    headed = threading.Event()

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await asyncio.to_thread(headed.wait, 3 * WAIT)   # no body until the client has the head
        await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    check_head_before_body(run(rt, app), headed)


def test_a_head_sent_ahead_of_its_body_still_ends_every_kind_of_answer(rt, tmp_path):
    """Whatever follows a head that went ahead (the application awaited after starting): a
    whole body, a file named by pathsend, a HEAD's body, nothing at all (cut short)."""
    block = os.urandom(300_000)
    file = tmp_path / "body.bin"
    file.write_bytes(block)

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await asyncio.sleep(0)                 # a real await: the head goes now
        if scope["path"] == "/file":
            await send({"type": "http.response.pathsend", "path": str(file)})
        elif scope["path"] != "/none":
            await send({"type": "http.response.body", "body": block})

    address = run(rt, app)
    for path in ("/", "/file"):
        r, data = get(address, path=path)
        assert (r.status, data) == (200, block)
    r, data = get(address, "HEAD", "/")
    assert (r.status, data) == (200, b"")
    out = raw(address, b"GET /none HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200") and not out.endswith(b"0\r\n\r\n")


def test_a_large_streamed_response_to_a_slow_client_arrives_whole(rt):
    block = os.urandom(65536)

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(128 * len(block)).encode())]})
        for _ in range(128):                   # 8 MB: send waits while the socket is behind
            await send({"type": "http.response.body", "body": block, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    address = run(rt, app)
    with socket.create_connection(address, timeout=WAIT) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        got = b""
        while piece := s.recv(65536):
            got += piece
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and body == block * 128


def test_http_disconnect_when_the_client_goes_while_the_app_waits(rt):
    told = threading.Event()

    async def app(scope, receive, send):
        await read_body(receive)
        if (await receive())["type"] == "http.disconnect":   # waits until the client goes
            told.set()

    address = run(rt, app)
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert told.wait(WAIT)
    assert rt.stats()["asgi"]["handler"]["disconnects"] == 1


def test_every_receive_waiting_is_told_when_the_client_goes(rt):
    """Two tasks waiting in receive() at once both hear of the disconnect, and a third one
    cancelled while it waited takes the news from neither: sse-starlette listens for the
    disconnect in a task of its own while the stream calls Starlette's is_disconnected, a
    receive() cancelled at once. (Each was kept waiting for ever, when only the last to wait
    was woken.)"""
    heard: list = []
    done = threading.Event()

    async def app(scope, receive, send):
        await read_body(receive)
        listeners = [asyncio.ensure_future(receive()) for _ in range(2)]
        checking = asyncio.ensure_future(receive())
        await asyncio.sleep(0)                 # a turn of the loop: each task runs to its wait
        checking.cancel()
        heard.extend(message["type"] for message in await asyncio.gather(*listeners))
        done.set()

    address = run(rt, app)
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert done.wait(WAIT) and heard == ["http.disconnect"] * 2


def test_send_raises_an_oserror_once_a_streaming_client_has_gone(rt):
    raised = []
    done = threading.Event()

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            for _ in range(10_000):            # 640 MB, if nobody stopped it
                await send({"type": "http.response.body", "body": b"x" * 65536,
                            "more_body": True})
        except OSError as exc:
            raised.append(exc)
        done.set()

    address = run(rt, app)
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(65536)
    assert done.wait(WAIT) and len(raised) == 1


def test_a_client_leaving_a_slow_download_is_a_disconnect_not_an_error(rt, caplog):
    """A client that stops reading a large download and goes (a cancelled download, a page
    left) while send waits for the socket: the application's send raises, and the exception it
    lets out (Starlette's ClientDisconnect) is counted as a disconnect, not logged as an error
    with its traceback, as it is not on uvicorn."""
    left = threading.Event()

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            for _ in range(1000):              # 1 GB, if nobody stopped it
                await send({"type": "http.response.body", "body": b"x" * 2**20,
                            "more_body": True})
        finally:
            left.set()

    address = run(rt, app)
    with socket.create_connection(address, timeout=WAIT) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(65536)                          # the download has begun; send waits for room
    assert left.wait(WAIT)
    handler = rt.stage("asgi").handler
    until(lambda: handler.stats()["disconnects"], lambda n: n == 1)
    assert handler.stats()["errors"] == 0
    assert not [r for r in caplog.records if r.name == "seda.asgi"]


@pytest.mark.parametrize("path", ["/streaming", "/waiting"])
def test_an_application_that_stops_when_told_of_the_disconnect_ends_its_answer(rt, path):
    """An application told of the disconnect that stops there, its answer unfinished (as
    sse-starlette and Django's ASGI handler do): the answer ends all the same (a stream cut
    short, a 500 for one not begun) and the connection closes, not left waiting for it with
    the client's FIN unanswered (CLOSE-WAIT, its descriptor held for ever)."""
    async def app(scope, receive, send):
        if scope["path"] == "/streaming":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"first", "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass

    address = run(rt, app)
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        if path == "/streaming":
            assert s.recv(65536).startswith(b"HTTP/1.1 200")
        s.shutdown(socket.SHUT_WR)             # the client goes, as far as the server can see
        out = b""
        while piece := s.recv(65536):          # (timed out: the connection waited for ever)
            out += piece
    assert not out.endswith(b"0\r\n\r\n")    # never complete-looking
    assert rt.stats()["asgi"]["handler"]["errors"] == 0


def test_receive_after_the_response_says_disconnect(rt):
    async def app(scope, receive, send):
        await read_body(receive)
        await answer(send, body=b"done")
        assert (await receive()) == {"type": "http.disconnect"}

    r, data = get(run(rt, app))
    assert r.status == 200 and data == b"done"


@pytest.mark.parametrize("app_body", [
    "raise ValueError('boom')",                                  # before the response
    "return",                                                    # no response at all
    "await send({'type': 'http.response.body', 'body': b'x'})",  # out of order
    "await send({'type': 'http.response.start', 'status': 200})",   # never completed
])
def test_an_application_that_fails_before_its_body_gets_a_500(rt, app_body):
    namespace: dict = {}
    exec(f"async def app(scope, receive, send):\n    {app_body}", namespace)
    r, _data = get(run(rt, namespace["app"]))
    assert r.status == 500


def test_an_application_that_fails_mid_stream_has_the_connection_cut(rt):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"partial", "more_body": True})
        raise ValueError("boom")

    out = raw(run(rt, app), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200")
    assert out.endswith(b"7\r\npartial\r\n")    # what was sent goes; the chunked body never
    #                                               ends: the client sees it cut off


def test_an_application_answers_in_its_own_time_past_the_response_timeout(rt):
    """A long poll: the server's response timeout, which answers 500 for a WSGI application
    that never answers, leaves an ASGI one to answer when it will, as uvicorn does."""
    started, release = threading.Event(), threading.Event()

    async def app(scope, receive, send):
        started.set()
        await in_thread(release)
        await answer(send, body=b"at last")

    address = serve_beside_silent(rt, mount_asgi(rt, app, tasks=16, lifespan="off"), 0.2)
    rt.start()
    with socket.create_connection(address, timeout=WAIT) as poll:
        poll.sendall(b"GET /poll HTTP/1.1\r\nHost: x\r\n\r\n")
        assert started.wait(WAIT)
        assert timed_out_silent(address)      # a check has run past the long poll's deadline
        poll.settimeout(0.5)
        with pytest.raises(TimeoutError):      # nothing for the long poll yet
            poll.recv(65536)
        release.set()
        poll.settimeout(WAIT)
        answered = poll.recv(65536)
    assert answered.startswith(b"HTTP/1.1 200") and answered.endswith(b"at last")


def test_head_and_204_send_no_body_and_head_gets_its_length(rt):
    async def app(scope, receive, send):
        status = 204 if scope["path"] == "/empty" else 200
        await answer(send, status, b"twelve bytes")

    address = run(rt, app)
    r, data = get(address, "HEAD")
    assert (r.status, data, r.getheader("content-length")) == (200, b"", "12")
    r, data = get(address, "GET", "/empty")
    assert (r.status, data, r.getheader("content-length")) == (204, b"", None)


def test_a_status_goes_out_with_the_reason_phrase_of_rfc_9110(rt):
    """ASGI gives no reason phrase: the server's is RFC 9110's (15), not the RFC 7231 one
    Python 3.11's HTTPStatus has ("Request Entity Too Large", "Unprocessable Entity")."""
    async def app(scope, receive, send):
        await answer(send, int(scope["path"][1:]), b"body")

    address = run(rt, app)
    for status, phrase in ((413, "Content Too Large"), (414, "URI Too Long"),
                           (416, "Range Not Satisfiable"), (421, "Misdirected Request"),
                           (422, "Unprocessable Content")):
        r, data = get(address, path=f"/{status}")
        assert (r.status, r.reason, data) == (status, phrase, b"body")


def test_head_of_a_stream_is_answered_at_once_and_its_client_leaving_stops_it(rt):
    """A HEAD to an endless stream (an event stream, which Starlette streams for HEAD as for
    GET): the head goes with the first piece, without a length it cannot know, and once the
    client has gone the application's next send raises, as a streamed GET's does."""
    sends, stopped = [], threading.Event()

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        try:
            while True:
                await send({"type": "http.response.body", "body": b"data: x\n\n",
                            "more_body": True})
                sends.append(1)
                await asyncio.sleep(0.01)
        except OSError:
            stopped.set()
            raise

    address = run(rt, app)
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
        head = s.recv(65536)
    assert head.startswith(b"HTTP/1.1 200") and head.endswith(b"\r\n\r\n")
    assert b"content-length" not in head.lower()
    assert stopped.wait(WAIT)


def test_head_of_a_head_aware_application_says_no_length_it_does_not_know(rt):
    """An application that answers HEAD with an empty body says nothing of the GET's length:
    a Content-Length of 0 would be wrong (RFC 9110 8.6). One that sends the body gets its
    length, as a GET would."""
    async def app(scope, receive, send):
        body = b"" if scope["method"] == "HEAD" and scope["path"] == "/aware" else b"twelve bytes"
        await answer(send, body=body)

    check_head_lengths(run(rt, app), b"twelve bytes")


def test_http10_gets_a_streamed_body_delimited_by_the_close(rt):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"a", "more_body": True})
        await send({"type": "http.response.body", "body": b"b"})

    out = raw(run(rt, app), b"GET / HTTP/1.0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200") and out.endswith(b"\r\n\r\nab")
    assert b"connection: close" in out.lower() and b"chunked" not in out.lower()


def test_trailers_are_declined_politely(rt):
    async def app(scope, receive, send):
        assert "http.response.trailers" not in scope["extensions"]
        await send({"type": "http.response.start", "status": 200, "headers": [],
                    "trailers": True})
        await send({"type": "http.response.body", "body": b"body"})
        await send({"type": "http.response.trailers", "headers": [(b"x-sum", b"1")],
                    "more_trailers": False})

    r, data = get(run(rt, app))
    assert (r.status, data) == (200, b"body")


def test_a_body_other_than_its_content_length_raises_in_send_and_never_looks_whole(rt):
    """A body longer or shorter than the Content-Length the application declared makes its
    send raise ValueError (as on uvicorn), so that the application learns of it: a whole body
    gets a 500 instead; a streamed one goes no further than the length, and its connection
    closes, so that the client never takes it for complete. Nothing past the length is sent."""
    errors = []

    async def app(scope, receive, send):
        path = scope["path"]
        if path == "/fine":
            await answer(send, body=b"fine")
            return
        length = b"3" if path.endswith("long") else b"10"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", length)]})
        try:
            if path.startswith("/stream"):
                await send({"type": "http.response.body", "body": b"ab", "more_body": True})
                await send({"type": "http.response.body", "body": b"cdef",
                            "more_body": path.endswith("long")})
                await send({"type": "http.response.body", "body": b""})
            else:
                await send({"type": "http.response.body", "body": b"abcdef"})
        except ValueError as exc:
            errors.append((path, str(exc)))
            raise

    address = run(rt, app)
    again = b"GET /fine HTTP/1.1\r\nHost: x\r\n\r\n"    # pipelined: unanswered once closed
    for path in (b"/long", b"/short"):
        out = raw(address, b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path)
        assert out.startswith(b"HTTP/1.1 500") and b"abc" not in out
    long = raw(address, b"GET /stream-long HTTP/1.1\r\nHost: x\r\n\r\n" + again)
    assert long.count(b"HTTP/1.1") == 1 and long.endswith(b"\r\n\r\nabc")
    short = raw(address, b"GET /stream-short HTTP/1.1\r\nHost: x\r\n\r\n" + again)
    assert short.count(b"HTTP/1.1") == 1 and b"content-length: 10\r\n" in short.lower()
    assert short.endswith(b"\r\n\r\nabcdef")
    assert [path for path, _ in errors] == ["/long", "/short", "/stream-long", "/stream-short"]
    assert "6 bytes, its Content-Length 3" in errors[0][1]


def test_fields_that_must_not_repeat_or_must_not_be_sent_are_not(rt):
    """RFC 9110's rules on an application's answer: its status is a final one (a 1xx or one
    past 599 makes send raise, and the client gets a 500 rather than wait for the answer a
    1xx announces); two different Content-Lengths are refused and two equal ones go as one
    (5.3, 8.6); a 204 carries no Content-Length (8.6); and the application's Date replaces
    the server's, whole or streamed."""
    date = (b"date", b"Mon, 01 Jan 2001 00:00:00 GMT")
    refused = []

    async def app(scope, receive, send):
        path = scope["path"]
        status = {"/103": 103, "/100": 100, "/600": 600, "/204": 204}.get(path, 200)
        fields = {"/differ": [(b"content-length", b"5"), (b"content-length", b"7")],
                  "/equal": [(b"content-length", b"5"), (b"x-a", b"1"),
                             (b"Content-Length", b"5")],
                  "/204": [(b"content-length", b"5")],
                  "/dated": [date], "/dated-stream": [date]}.get(path, [])
        try:
            await send({"type": "http.response.start", "status": status, "headers": fields})
        except ValueError:
            refused.append(path)
            raise
        if path == "/dated-stream":
            await send({"type": "http.response.body", "body": b"hel", "more_body": True})
        await send({"type": "http.response.body", "body": b"lo" if path == "/dated-stream"
                    else b"hello"})

    check_field_rules(run(rt, app))
    assert refused == ["/103", "/100", "/600", "/differ"]


def test_a_whole_response_keeps_its_fields_and_its_wish_to_close_and_never_splits(rt):
    """A response sent in one body message is encoded from the application's bytes (a
    Content-Length added when it gave none); hop-by-hop fields stay the server's, a
    Connection: close is kept as the wish to close, and a line break in a field is a 500."""
    async def app(scope, receive, send):
        if scope["path"] == "/recover":        # a refused start leaves nothing behind
            with pytest.raises(ValueError):
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-length", b"2"), (b"x-evil", b"a\r\nb: c")]})
            await answer(send, status=500, body=b"fallback")
            return
        fields = {"/": [(b"X-Kept", b"as given"), (b"transfer-encoding", b"chunked")],
                  "/close": [(b"connection", b"close")],
                  "/split": [(b"x-evil", b"a\r\nset-cookie: b")],
                  "/split-last": [(b"x-evil", b"a\r\n")],
                  "/bytes-like": [(bytearray(b"Content-Length"), memoryview(b"5"))]}[scope["path"]]
        await answer(send, body=b"hello", headers=fields)

    address = run(rt, app)
    two = raw(address, b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
    first = two[:two.index(b"HTTP/1.1", 1)]
    assert two.count(b"HTTP/1.1 200") == 2 and first.endswith(b"\r\n\r\nhello")
    assert b"X-Kept: as given\r\n" in first and b"content-length: 5\r\n" in first
    assert b"transfer-encoding" not in two.lower()
    closed = raw(address, b"GET /close HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n"
                          b"Host: x\r\n\r\n")
    assert closed.count(b"HTTP/1.1 200") == 1 and b"connection: close" in closed.lower()
    split = raw(address, b"GET /split HTTP/1.1\r\nHost: x\r\n\r\n")
    assert split.startswith(b"HTTP/1.1 500") and b"set-cookie" not in split
    split = raw(address, b"GET /split-last HTTP/1.1\r\nHost: x\r\n\r\n")
    assert split.startswith(b"HTTP/1.1 500") and b"x-evil" not in split
    recovered = raw(address, b"GET /recover HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert recovered.startswith(b"HTTP/1.1 500") and recovered.endswith(b"\r\n\r\nfallback")
    taken = raw(address, b"GET /bytes-like HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert taken.startswith(b"HTTP/1.1 200") and taken.count(b"\r\nContent-Length: 5\r\n") == 1


def test_an_upgrade_the_application_sends_is_kept_with_its_connection_option(rt):
    """RFC 9110 7.8: any response may advertise a protocol with Upgrade (a 426 must); the
    application's is kept, whole, streamed or HEAD's, while the other hop-by-hop fields still
    go, and the server's Connection names "upgrade", beside "close" when it closes."""
    async def app(scope, receive, send):
        path = scope["path"]
        headers = [(b"upgrade", b"h2c"), (b"keep-alive", b"timeout=5")]
        if path == "/close":
            headers.append((b"connection", b"close"))
        if path == "/stream":
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b"bo", "more_body": True})
            await send({"type": "http.response.body", "body": b"dy"})
        else:
            await answer(send, 426 if path == "/426" else 200, b"body", headers)

    def options(response: httpx.Response) -> list[str]:
        return [o.strip() for o in response.headers.get("connection", "").lower().split(",")]

    address = run(rt, app)
    with httpx.Client(base_url=f"http://{address[0]}:{address[1]}", timeout=WAIT) as client:
        for method, path, status, body in (("GET", "/426", 426, "body"),
                                           ("GET", "/", 200, "body"), ("HEAD", "/", 200, ""),
                                           ("GET", "/stream", 200, "body")):
            r = client.request(method, path)
            assert (r.status_code, r.text, r.headers.get("upgrade")) == (status, body, "h2c")
            assert "upgrade" in options(r) and "keep-alive" not in r.headers
    closed = raw(address, b"GET /close HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n"
                          b"Host: x\r\n\r\n")
    assert closed.count(b"HTTP/1.1 200") == 1 and b"\r\nupgrade: h2c\r\n" in closed
    assert b"\r\nconnection: close, upgrade\r\n" in closed and b"keep-alive" not in closed


@pytest.mark.parametrize("field", [(b"bad name", b"v"), (b"x:y", b"v"), (b"", b"v"),
                                   (b"x-nul", b"a\x00b"), (b"x-esc", b"\x1b[31m")])
def test_a_field_a_client_would_misread_or_refuse_is_a_500_never_sent(rt, field):
    """A name that is not a token (``x:y: v`` reads as field ``x``) or a control character in
    a value: the application's send raises, as on uvicorn, and the client gets a 500."""
    refused = []

    async def app(scope, receive, send):
        try:
            await answer(send, body=b"hello", headers=[field])
        except ValueError as exc:
            refused.append(str(exc))
            raise

    taken = raw(run(rt, app), b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert taken.startswith(b"HTTP/1.1 500") and b"hello" not in taken
    assert "cannot be sent" in refused[0]


@pytest.mark.parametrize("length", [b"-1", b" 5", b"5 ", b"+5", b"1_0", b"0x5", b"five"])
def test_a_content_length_that_is_not_a_number_is_a_500_never_sent(rt, length):
    async def app(scope, receive, send):
        await answer(send, body=b"hello", headers=[(b"content-length", length)])

    taken = raw(run(rt, app), b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert taken.startswith(b"HTTP/1.1 500") and b"hello" not in taken


def test_header_fields_read_once_answer_each_request_as_sent(rt, monkeypatch):
    """An application's response fields are read once for the same fields (AsgiHandler.heads,
    bounded, and only fields up to 2 KB); what each request gets is what its application
    sent."""
    monkeypatch.setattr(kept_heads, "HEADS_KEPT", 2)
    kept, large = [(b"x-kept", b"1")], [(b"x-large", b"v" * 3000)]

    async def app(scope, receive, send):
        n = scope["query_string"]
        fields = {b"same": kept, b"fresh": [(b"x-fresh", n)], b"large": large,
                  b"lists": [[b"x-list", b"yes"]], b"close": [(b"connection", b"close")]}
        await answer(send, body=b"ok", headers=fields[n.split(b"-")[0]])

    address = run(rt, app)
    heads, read = rt.stage("asgi").handler.heads, []   # the fields read, in turn
    monkeypatch.setattr(heads, "read", lambda fields, real=heads.read: read.append(fields) or
                        real(fields))
    queries = [b"same", b"fresh-1", b"same", b"fresh-2", b"fresh-3", b"lists", b"lists",
               b"large", b"large", b"same", b"close"]
    answers = raw(address, b"".join(b"GET /?%s HTTP/1.1\r\nHost: x\r\n\r\n" % q
                                    for q in queries))
    got = [a.split(b"\r\n\r\n")[0] for a in answers.split(b"HTTP/1.1 ")[1:]]
    assert len(got) == len(queries) and all(h.startswith(b"200 OK") for h in got)
    for query, head in zip(queries, got, strict=True):
        kind = query.split(b"-")[0]
        assert (b"x-kept: 1" in head) == (kind == b"same")
        assert (b"x-fresh: " + query in head) == (kind == b"fresh")
        assert (b"x-list: yes" in head) == (kind == b"lists")
        assert (b"x-large: " + b"v" * 3000 in head) == (kind == b"large")
    assert b"connection: close" in got[-1].lower()
    # kept fields are read again only once the full table was cleared; lists every time
    assert sum(kept[0] in fields for fields in read) == 2           # of 3 sent
    assert sum([b"x-list", b"yes"] in fields for fields in read) == 2   # of 2 sent
    assert sum(large[0] in fields for fields in read) == 2            # over 2 KB: of 2 sent
    assert 0 < len(heads.table) <= 2                                  # kept, and bounded
    assert all(type(f) is tuple for fields in heads.table for f in fields)     # no lists


def test_fields_that_are_not_bytes_are_read_each_time_and_never_answer_others(rt):
    """A memoryview equals the bytes it shows (and hashes the same): fields sent as views are
    not kept, so a view's buffer changed in place is read afresh, and a request sending the
    same fields as bytes gets a head of bytes (HEAD and a streamed answer decode it)."""
    buffer = bytearray(b"AAAA")
    view = memoryview(buffer).toreadonly()

    async def app(scope, receive, send):
        query = scope["query_string"]
        if query.startswith(b"view"):
            buffer[:] = query[-4:]             # the application rewrites its buffer in place
            fields = [(memoryview(b"x-a"), memoryview(b"1")), (b"x-v", view)]
        elif query == b"writable":
            fields = [(b"x-a", memoryview(bytearray(b"1")))]   # unhashable: ValueError
        else:
            fields = [(b"x-a", b"1")]
        await send({"type": "http.response.start", "status": 200, "headers": fields})
        if query == b"stream":
            await send({"type": "http.response.body", "body": b"o", "more_body": True})
        await send({"type": "http.response.body", "body": b"k"})

    address = run(rt, app)
    answers = raw(address, b"GET /?view-AAAA HTTP/1.1\r\nHost: x\r\n\r\n"
                           b"GET /?view-BBBB HTTP/1.1\r\nHost: x\r\n\r\n"
                           b"HEAD /?bytes HTTP/1.1\r\nHost: x\r\n\r\n"
                           b"GET /?stream HTTP/1.1\r\nHost: x\r\n\r\n"
                           b"GET /?writable HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    heads = [a.split(b"\r\n\r\n")[0] for a in answers.split(b"HTTP/1.1 ")[1:]]
    assert [h[:3] for h in heads] == [b"200"] * 5
    assert b"x-v: AAAA" in heads[0] and b"x-v: BBBB" in heads[1]
    assert all(b"x-a: 1" in h for h in heads) and answers.endswith(b"\r\n\r\nk")


def test_a_content_length_given_as_an_int_is_a_500_with_a_short_message(rt, caplog):
    async def app(scope, receive, send):             # a common slip: len(body), not bytes
        await answer(send, body=b"x", headers=[(b"content-length", 20_000_000)])

    with caplog.at_level(logging.ERROR, logger="seda.asgi"):
        taken = raw(run(rt, app), b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert taken.startswith(b"HTTP/1.1 500")
    assert caplog.records and max(len(r.getMessage()) for r in caplog.records) < 10_000


def test_the_application_stage_sheds_with_503(rt):
    called = []

    async def app(scope, receive, send):
        called.append(scope)

    r, _ = get(run(rt, app, predicate=lambda req: False, lifespan="off"))
    assert r.status == 503 and r.getheader("retry-after") == "1" and not called


def test_a_body_over_the_limit_is_answered_with_its_status(rt):
    async def app(scope, receive, send):
        while (await receive())["type"] == "http.request":
            pass
        raise ConnectionError("the client went")   # as Starlette's ClientDisconnect does

    address = run(rt, app, limits=Limits(max_body=100_000))
    chunk = b"%x\r\n%s\r\n" % (50_000, b"x" * 50_000)
    out = raw(address, b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                       + chunk * 3 + b"0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 413")


def test_asgi_applications_are_told_from_wsgi_ones():
    async def function(scope, receive, send): ...

    class Instance:
        async def __call__(self, scope, receive, send): ...

    class Asgi2:
        def __init__(self, scope): ...

        async def __call__(self, receive, send): ...

    class Awaited:                             # ASGI 3: constructed with all three, awaited
        def __init__(self, scope, receive, send): ...

        def __await__(self): ...

    class WsgiClass:                           # PEP 3333's application class
        def __init__(self, environ, start_response): ...

    def wsgi(environ, start_response): ...

    assert is_asgi(function) and is_asgi(Instance()) and is_asgi(functools.partial(function))
    assert is_asgi(Awaited) and not is_asgi2(Awaited)
    assert not is_asgi(wsgi) and not is_asgi(Asgi2) and not is_asgi(object())
    assert is_asgi2(Asgi2) and not is_asgi2(WsgiClass) and not is_asgi2(wsgi)
    assert not is_asgi2(Instance()) and not is_asgi2(function)


def test_an_asgi2_application_is_served_as_asgi3(rt):
    class Asgi2:
        def __init__(self, scope):
            self.path = scope["path"]

        async def __call__(self, receive, send):
            await read_body(receive)
            await answer(send, body=self.path.encode())

    r, data = get(run(rt, from_asgi2(Asgi2), lifespan="off"), "POST", "/where", b"body")
    assert (r.status, data) == (200, b"/where")


def test_without_wsproto_an_upgrade_is_served_as_http(rt, monkeypatch):
    monkeypatch.setattr(asgi, "websockets", lambda: None)

    async def app(scope, receive, send):
        await answer(send, body=scope["type"].encode())

    r, data = get(run(rt, app), headers={"Connection": "Upgrade", "Upgrade": "websocket",
                                         "Sec-WebSocket-Version": "13",
                                         "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert (r.status, data) == (200, b"http")


def test_a_client_that_only_stopped_sending_is_told_and_still_gets_its_answer(rt):
    """A half-close is a disconnect to the application (as uvicorn takes it), but Haboob
    answers half-closed clients: what the application sends all the same goes out."""
    async def app(scope, receive, send):
        await read_body(receive)
        told = (await receive())["type"]              # waits for the end of input
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": told.encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"!"})

    out = raw(run(rt, app), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")    # then shuts its side
    assert out.startswith(b"HTTP/1.1 200") and b"http.disconnect" in out and b"!" in out
