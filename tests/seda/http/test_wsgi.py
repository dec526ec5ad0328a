"""WSGI applications in their own stage, checked by wsgiref's validator."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
import sys
import threading
from importlib import metadata
from wsgiref.validate import validator

import pytest

from seda.http import Limits, kept, mount, serve

from tests.helpers import WAIT
from tests.helpers.net import (
    ask,
    check_field_rules,
    check_head_before_body,
    check_head_lengths,
    raw,
)
from tests.helpers.silent import serve_beside_silent, timed_out_silent


def run(rt, app, **options):
    sink = mount(rt, validator(app), threads=4, **options)
    address = serve(rt, ("127.0.0.1", 0), sink, limits=Limits(response_timeout=5)).address
    rt.start()
    return address


def get(address, method="GET", path="/", body=None, headers=None):
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request(method, path, body=body, headers=headers or {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r, data


def describe(environ, start_response):
    keys = ["REQUEST_METHOD", "SCRIPT_NAME", "PATH_INFO", "QUERY_STRING", "CONTENT_TYPE",
            "CONTENT_LENGTH", "SERVER_PROTOCOL", "SERVER_SOFTWARE", "HTTP_X_TWICE",
            "wsgi.url_scheme"]
    info = {k: environ.get(k) for k in keys}
    length = int(environ.get("CONTENT_LENGTH") or 0)
    info["body"] = environ["wsgi.input"].read(length).decode()
    info["remote"] = environ["REMOTE_ADDR"]
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(info).encode()]


def test_environ_is_complete_and_the_body_readable(rt):
    address = run(rt, describe, script_name="/app")
    r, data = get(address, "POST", "/app/a%20b?x=1", b"payload",
                  {"Content-Type": "text/plain", "X-Twice": "1"})
    info = json.loads(data)
    assert r.status == 200
    assert info == {"REQUEST_METHOD": "POST", "SCRIPT_NAME": "/app", "PATH_INFO": "/a b",
                    "QUERY_STRING": "x=1", "CONTENT_TYPE": "text/plain", "CONTENT_LENGTH": "7",
                    "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_X_TWICE": "1",
                    "SERVER_SOFTWARE": f"pyseda/{metadata.version('pyseda')}",
                    "wsgi.url_scheme": "http", "body": "payload", "remote": "127.0.0.1"}


def test_write_callable_and_iterable_close(rt):
    closed = threading.Event()

    class Body:
        def __iter__(self):
            yield b"from iterable"

        def close(self):
            closed.set()

    def app(environ, start_response):
        write = start_response("201 Created", [("Content-Type", "text/plain")])
        write(b"from write;")
        return Body()

    r, data = get(run(rt, app))
    assert r.status == 201 and data == b"from write;from iterable"
    assert closed.wait(WAIT)


def test_an_empty_write_sends_the_head_at_once(rt):
    """PEP 3333: the head goes upon the application's first call of write(), bytes or none,
    as gunicorn and waitress send it: an application flushes it before a long wait (a long
    poll, the first event of a stream). An empty piece of the iterable sends nothing."""
    headed = threading.Event()

    def app(environ, start_response):
        write = start_response("200 OK", [("Content-Type", "text/event-stream")])
        write(b"")
        headed.wait(3 * WAIT)                  # no body until the client has the head
        return [b"data: 1\n\n"]

    check_head_before_body(run(rt, app), headed)


def test_a_large_response_streams_without_being_held_whole(rt):
    piece = b"z" * 65536
    sent = []

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        for i in range(200):                     # 13 MB
            sent.append(i)
            yield piece

    address = run(rt, app)
    with socket.create_connection(address, timeout=WAIT) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        head = s.recv(4096)
        assert b"transfer-encoding: chunked" in head
        # the client has read almost nothing: the application must be held back
        produced = len(sent)
        assert produced < 100, "a streamed response must not be produced far ahead of the client"
        received = len(head)
        while True:
            chunk = s.recv(1 << 20)
            received += len(chunk)
            if chunk.endswith(b"0\r\n\r\n") or not chunk:
                break
    assert len(sent) == 200 and received > 200 * 65536


def test_an_exception_is_a_500_with_the_traceback_logged(rt, caplog):
    def app(environ, start_response):
        raise KeyError("the application failed")

    r, _ = get(run(rt, app))
    assert r.status == 500
    assert "KeyError: 'the application failed'" in caplog.text
    assert "GET / raised" in caplog.text


def test_start_response_with_exc_info_replaces_the_status(rt):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        try:
            raise ValueError("late")
        except ValueError:
            start_response("500 Internal Server Error", [("Content-Type", "text/plain")],
                           sys.exc_info())
        return [b"sorry"]

    r, data = get(run(rt, app))
    assert r.status == 500 and data == b"sorry"


def test_head_gets_no_body_and_http10_gets_a_close(rt):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"a", b"b"]

    address = run(rt, app)
    r, data = get(address, "HEAD")
    assert r.status == 200 and data == b""
    out = ask(address, b"GET / HTTP/1.0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200 OK") and out.endswith(b"\r\n\r\nab")
    assert b"connection: close" in out.lower() and b"chunked" not in out.lower()


def test_the_server_s_reason_phrases_are_rfc_9110_s_and_an_application_s_own_are_kept(rt):
    """A status line the application writes goes out as written: with RFC 9110's phrase, or
    its own, an older one (RFC 7231's, as Django writes from Python 3.11's HTTPStatus)
    included."""
    statuses = {"/new": "422 Unprocessable Content", "/old": "422 Unprocessable Entity",
                "/mine": "413 Too Much For Me", "/large": "413 Content Too Large"}

    def app(environ, start_response):
        start_response(statuses[environ["PATH_INFO"]], [("Content-Type", "text/plain")])
        return [b"body"]

    address = run(rt, app)
    for path, line in statuses.items():
        r, data = get(address, path=path)
        assert f"{r.status} {r.reason}" == line and data == b"body"


def test_head_of_a_head_aware_application_says_no_length_it_does_not_know(rt):
    """An application that answers HEAD with an empty body says nothing of the GET's length:
    a Content-Length of 0 would be wrong (RFC 9110 8.6). One that sends the body whole gets
    its length, as a GET would; the connection goes on after either."""
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        aware = environ["REQUEST_METHOD"] == "HEAD" and environ["PATH_INFO"] == "/aware"
        return [] if aware else [b"twelve bytes"]

    # (without the validator, whose iterable is not known to be whole)
    check_head_lengths(plain_run(rt, app), b"twelve bytes")


def test_head_of_a_body_made_piece_by_piece_is_answered_with_the_first_piece(rt):
    """An endless stream (an event feed) answers HEAD as soon as its first piece is made,
    without a length, as its GET goes chunked from there; the iterable is closed at once, not
    run until the response timeout. A body that ends gives its first piece the same way."""
    closed = threading.Event()

    def feed(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/event-stream")])

        def events():
            try:
                while True:
                    yield b"data: tick\n\n"
            finally:
                closed.set()
        return events()

    address = plain_run(rt, feed)
    r, data = get(address, "HEAD")
    assert (r.status, data, r.getheader("content-length")) == (200, b"", None)
    assert r.getheader("transfer-encoding") is None
    assert closed.wait(WAIT)


def test_a_wrong_content_length_never_sends_bytes_past_it(rt):
    """Whole (a list) or streamed, a body is cut at its declared length, and one short of it
    keeps that length and ends with a close: the client sees it cut short, never a
    complete-looking answer. A 304's length is the GET's: it has no body to be short of."""
    def app(environ, start_response):
        length = "3" if environ["PATH_INFO"].endswith("/long") else "10"
        if environ["PATH_INFO"] == "/not-modified":
            start_response("304 Not Modified", [("ETag", '"a"'), ("Content-Length", length)])
            return []
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", length)])
        pieces = [b"abc", b"def"]
        return pieces if environ["PATH_INFO"].startswith("/whole") else iter(pieces)

    # (the validator hands the server an iterator, never a list: the whole path goes without)
    sink = mount(rt, app, threads=2, name="unvalidated")
    address = serve(rt, ("127.0.0.1", 0), sink).address
    rt.start()
    for kind in ("/whole", "/streamed"):
        long = raw(address, b"GET %s/long HTTP/1.1\r\nHost: x\r\n\r\n" % kind.encode())
        assert long.endswith(b"Content-Length: 3\r\n\r\nabc")
        c = http.client.HTTPConnection(*address, timeout=WAIT)
        c.request("GET", f"{kind}/short")
        r = c.getresponse()
        assert r.getheader("content-length") == "10"
        with pytest.raises(http.client.IncompleteRead) as cut:
            r.read()
        assert cut.value.partial == b"abcdef"
        c.close()
    both = raw(address, b"GET /not-modified HTTP/1.1\r\nHost: x\r\n\r\n"
                        b"GET /whole/long HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    not_modified, _, after = both.partition(b"\r\n\r\n")
    assert not_modified.startswith(b"HTTP/1.1 304") and b"Content-Length: 10" in not_modified
    assert b"close" not in not_modified.lower() and after.startswith(b"HTTP/1.1 200")


def test_the_application_stage_sheds_with_503(rt):
    address = run(rt, describe, predicate=lambda req: False)
    r, _ = get(address)
    assert r.status == 503 and r.getheader("retry-after") == "1"


@pytest.mark.parametrize("bad", [
    lambda e, s: [b"never started"],
    lambda e, s: (s("OK", []), [b""])[1],
])
def test_broken_applications_get_500(rt, bad):
    r, _ = get(run(rt, bad))
    assert r.status == 500


def test_wsgi_input_streams_a_large_body(rt):
    def app(environ, start_response):
        h, size, stream = hashlib.sha256(), 0, environ["wsgi.input"]
        while piece := stream.read(65536):
            h.update(piece)
            size += len(piece)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [f"{size} {h.hexdigest()}".encode()]

    body = os.urandom(3 * 2**20)
    r, data = get(run(rt, app), "POST", "/", body)
    assert r.status == 200
    assert data == f"{len(body)} {hashlib.sha256(body).hexdigest()}".encode()


def plain_run(rt, app):
    """``run`` without wsgiref's validator: these applications break PEP 3333 on purpose."""
    address = serve(rt, ("127.0.0.1", 0), mount(rt, app, threads=4),
                    limits=Limits(response_timeout=5)).address
    rt.start()
    return address


def answers(address, requests: list[bytes]) -> list[bytes]:
    """The answers to pipelined ``requests``, each whole, in order; the last should close."""
    out = raw(address, b"".join(requests))
    return [b"HTTP/1." + a for a in out.split(b"HTTP/1.")[1:]]


def test_an_answer_carries_the_fields_the_application_gave(rt):
    """Whole answers go out with the application's fields as given (names as written, the
    server's hop-by-hop ones dropped, a Content-Length added where it gave none; fields given
    as an iterator too); a
    Connection: close closes, HEAD and 204 get no body, HTTP/1.0 is told the connection's
    fate, and a field the server cannot send is a 500."""
    fields = {
        "/": [("Content-Type", "text/plain"), ("X-Kept", "as given")],
        "/hop": [("Content-Type", "text/plain"), ("Transfer-Encoding", "chunked"),
                 ("Keep-Alive", "timeout=5")],
        "/length": [("Content-Length", "5"), ("Content-Type", "text/plain")],
        "/close": [("Connection", "close")],
        "/split": [("X-Evil", "a\r\nSet-Cookie: b")],
        "/euro": [("X-Price", "5 \u20ac")],
        "/digits": [("Content-Length", "\u0665")],   # an Arabic-Indic 5: not a length
        "/name": [("X:Y", "v")],                      # reads as field X, value "Y: v"
        "/nul": [("X-Nul", "a\x00b")],
    }

    def app(environ, start_response):
        path = environ["PATH_INFO"]
        headers = fields.get(path, [("Content-Type", "text/plain")])
        if path == "/iterator":                # sent as gunicorn sends it, though not a list
            headers = iter(fields["/"])
        start_response("204 No Content" if path == "/none" else "200 OK", headers)
        return [b"hello"]

    address = plain_run(rt, app)
    # (first and alone: fields equal to "/"'s, which must not take them from later answers)
    iterated = raw(address, b"GET /iterator HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert b"\r\nX-Kept: as given\r\n" in iterated and iterated.endswith(b"\r\n\r\nhello")
    get_ = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n"
    got = answers(address, [get_ % p for p in (b"/", b"/hop", b"/length", b"/none")]
                  + [b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", get_ % b"/close", get_ % b"/"])
    assert len(got) == 6                       # the last, after the close, is not answered
    plain, hop, length, none, head, close = got
    assert plain.startswith(b"HTTP/1.1 200 OK\r\n") and plain.endswith(b"\r\n\r\nhello")
    assert b"\r\nContent-Type: text/plain\r\nX-Kept: as given\r\n" in plain
    assert plain.lower().count(b"\r\ncontent-length: 5\r\n") == 1
    assert b"chunked" not in hop and b"Keep-Alive" not in hop and hop.endswith(b"\r\n\r\nhello")
    assert length.lower().count(b"content-length:") == 1 and b"Content-Length: 5\r\n" in length
    assert length.endswith(b"\r\n\r\nhello")
    assert none.startswith(b"HTTP/1.1 204") and b"hello" not in none
    assert head.lower().count(b"content-length: 5\r\n") == 1 and head.endswith(b"\r\n\r\n")
    assert b"connection: close" in close.lower() and close.endswith(b"\r\n\r\nhello")
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        first = s.recv(65536)
    assert first.startswith(b"HTTP/1.1 200") and b"connection: keep-alive" in first.lower()
    for path in (b"/split", b"/euro", b"/digits", b"/name", b"/nul"):
        bad = raw(address, b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path)
        assert bad.startswith(b"HTTP/1.1 500") and b"Set-Cookie" not in bad


def test_fields_that_must_not_repeat_or_must_not_be_sent_are_not(rt):
    """RFC 9110's rules on an application's answer: its status is a final one (a 1xx or one
    past 599 is a 500: a client would wait for the answer a 1xx announces); two different
    Content-Lengths are a 500 and two equal ones go as one (5.3, 8.6); a 204 carries no
    Content-Length (8.6); and the application's Date replaces the server's, whole or streamed."""
    def app(environ, start_response):
        path = environ["PATH_INFO"]
        status = {"/103": "103 Early Hints", "/100": "100 Continue", "/600": "600 Odd",
                  "/204": "204 No Content"}.get(path, "200 OK")
        fields = {"/differ": [("Content-Length", "5"), ("Content-Length", "7")],
                  "/equal": [("Content-Length", "5"), ("X-A", "1"), ("content-length", "5")],
                  "/204": [("Content-Length", "5")],
                  "/dated": [("Date", "Mon, 01 Jan 2001 00:00:00 GMT")],
                  "/dated-stream": [("Date", "Mon, 01 Jan 2001 00:00:00 GMT")]}.get(path, [])
        start_response(status, fields)
        if path == "/dated-stream":            # no length: a body of its pieces
            return iter([b"hel", b"lo"])
        return [b"hello"]

    check_field_rules(plain_run(rt, app))


def test_start_response_fields_are_read_once_for_the_same_fields(rt, monkeypatch):
    """The fields an application gives start_response are read once for equal fields
    (WsgiHandler.heads, bounded, and only fields up to 2 KB), made afresh or not; fields given
    as lists are read every time; each answer is still its application's."""
    monkeypatch.setattr(kept, "HEADS_KEPT", 2)
    large = ("X-Large", "v" * 3000)

    def app(environ, start_response):
        query = environ["QUERY_STRING"]
        kind = query.split("-")[0]
        start_response("200 OK", {"same": [("X-Same", "1")],          # equal, made afresh
                                  "fresh": [("X-Fresh", query)],
                                  "lists": [["X-List", "yes"]],
                                  "large": [large]}[kind])
        return [b"ok"]

    address = plain_run(rt, app)
    heads, read = rt.stage("wsgi").handler.heads, []   # the fields read, in turn
    monkeypatch.setattr(heads, "read", lambda fields, real=heads.read: read.append(fields) or
                        real(fields))
    queries = ["same", "fresh-1", "same", "fresh-2", "fresh-3", "lists", "lists", "large",
               "large", "same"]
    got = answers(address, [b"GET /?%s HTTP/1.1\r\nHost: x\r\n\r\n" % q.encode()
                            for q in queries[:-1]]
                  + [b"GET /?same HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"])
    assert len(got) == len(queries)
    for query, answer in zip(queries, got, strict=True):
        kind = query.split("-")[0]
        assert answer.startswith(b"HTTP/1.1 200") and answer.endswith(b"\r\n\r\nok")
        assert (b"X-Same: 1\r\n" in answer) == (kind == "same")
        assert (b"X-Fresh: %s\r\n" % query.encode() in answer) == (kind == "fresh")
        assert (b"X-List: yes\r\n" in answer) == (kind == "lists")
    # read again only once the full table was cleared; lists and large fields every time
    assert sum(("X-Same", "1") in h for h in read) == 2              # of 3 sent
    assert sum(["X-List", "yes"] in h for h in read) == 2            # of 2 sent
    assert sum(large in h for h in read) == 2                        # of 2 sent
    assert 0 < len(heads.table) <= 2
    assert all(type(f) is tuple for key in heads.table for f in key)


def test_environ_fields_are_each_request_s_own_and_made_once_for_equal_fields(rt, monkeypatch):
    """A request's header fields become environ entries (a field sent twice joined, cookies
    with "; ", names with "_" dropped) made once for equal fields (WsgiHandler.fields, bounded,
    and only fields up to 2 KB); what an application does to its environ stays its own."""
    monkeypatch.setattr(kept, "HEADS_KEPT", 2)
    seen = []

    def app(environ, start_response):
        seen.append({k: v for k, v in environ.items() if k.startswith(("HTTP_", "CONTENT_"))})
        environ["HTTP_X_A"] = "changed by the application"    # in its own environ only
        environ["wsgi.input"].read()
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    address = plain_run(rt, app)
    fields, read = rt.stage("wsgi").handler.fields, []
    monkeypatch.setattr(fields, "read", lambda f, real=fields.read: read.append(f) or real(f))
    close = b"Connection: close\r\n"
    browser = (b"GET / HTTP/1.1\r\nHost: x\r\nX-A: 1\r\nCookie: a=1\r\nCookie: b=2\r\n"
               b"X-Twice: 1\r\nX-Twice: 2\r\nX_Under: no\r\n" + close + b"\r\n")
    post = (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n"
            + close + b"\r\nhi")
    big = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"v" * 3000 + b"\r\n" + close + b"\r\n"
    other = b"GET / HTTP/1.1\r\nHost: y\r\n" + close + b"\r\n"   # a third set: the table is full
    for request in (browser, browser, post, big, big, browser, other, browser):
        assert raw(address, request).startswith(b"HTTP/1.1 200")
    first = {"HTTP_HOST": "x", "HTTP_X_A": "1", "HTTP_COOKIE": "a=1; b=2",
             "HTTP_X_TWICE": "1,2", "HTTP_CONNECTION": "close"}
    assert seen[0] == seen[1] == seen[5] == seen[7] == first
    assert seen[2] == {"HTTP_HOST": "x", "CONTENT_TYPE": "text/plain", "CONTENT_LENGTH": "2",
                       "HTTP_CONNECTION": "close"}
    assert seen[3]["HTTP_X_BIG"] == "v" * 3000
    # the browser's fields read once, and again once the full table was emptied for the
    # third set; those over 2 KB every time
    assert sum((b"x-a", b"1") in f for f in read) == 2
    assert sum((b"x-big", b"v" * 3000) in f for f in read) == 2
    assert 0 < len(fields.table) <= 2


def test_the_response_timeout_counts_from_the_end_of_a_streamed_body(rt):
    """An upload that takes longer than the response timeout is not cut by it while the
    application reads: the timeout counts from the body's end."""
    reading = threading.Event()

    def app(environ, start_response):
        reading.set()
        size = len(environ["wsgi.input"].read())
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"read %d" % size]

    address = serve_beside_silent(rt, mount(rt, app, threads=2), 0.2)
    rt.start()
    size = 200_000                             # streamed: over Limits.stream_body_over
    with socket.create_connection(address, timeout=WAIT) as upload:
        upload.sendall(b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % size
                       + b"x" * 1000)
        assert reading.wait(WAIT)
        assert timed_out_silent(address)      # a check has run past the upload's deadline
        upload.sendall(b"x" * (size - 1000))
        answered = upload.recv(65536)
    assert answered.startswith(b"HTTP/1.1 200") and answered.endswith(b"read %d" % size)
