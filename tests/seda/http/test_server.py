"""The HTTP server stage against real clients and hostile bytes on loopback."""

from __future__ import annotations

import gc
import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
import urllib.request

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seda
from seda.http import Limits, Response, StreamBody, responses, serve
from seda.http.request import BodyReader

from tests.helpers import WAIT
from tests.helpers.net import ask, raw, until


class App(seda.EventHandler):
    """Routes by path. /echo describes the request as JSON; /wait/<ms> answers after a delay
    (run it on a pool to answer out of order); /stream sends an iterable; /status/<n>."""

    def handle_event(self, req):
        if req.path == "/echo":
            body = req.stream.read() if req.stream is not None else req.body
            info = {"method": req.method, "path": req.path, "query": req.query,
                    "version": req.version, "body": body.decode("latin-1"),
                    "headers": [[k.decode("latin-1"), v.decode("latin-1")]
                                for k, v in req.headers]}
            req.respond(Response(200, json.dumps(info).encode(), content_type="application/json"))
        elif req.path.startswith("/wait/"):
            time.sleep(int(req.path[6:]) / 1000)      # the work itself, on a pool thread
            req.respond(Response(200, req.path.encode()))
        elif req.path == "/stream":
            req.respond(Response(200, (b"part%d;" % i for i in range(5))))
        elif req.path.startswith("/status/"):
            req.respond(Response(int(req.path[8:]), b"body"))
        else:
            req.respond(responses.not_found())


def start(rt, limits=None, threads=1, predicate=None):
    rt.add_stage("app", App(), threads=threads, predicate=predicate)
    listener = serve(rt, ("127.0.0.1", 0), rt.sink("app"), limits=limits)
    rt.start()
    return listener.address


@pytest.fixture
def address(rt):
    return start(rt, threads=4)


def statuses(data: bytes) -> list[int]:
    """The status codes of the responses in ``data`` (a body may run into the next response)."""
    return [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) [^\r\n]*\r\n", data)]


# -- well-behaved clients -----------------------------------------------------------------------

def test_http_client_keep_alive_query_headers_and_body(address):
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request("GET", "/echo?a=1&b=%20", headers={"X-Thing": "yes"})
    r = c.getresponse()
    info = json.loads(r.read())
    assert r.status == 200 and r.getheader("content-type") == "application/json"
    assert r.getheader("date").endswith("GMT")
    assert info["query"] == "a=1&b=%20" and ["x-thing", "yes"] in info["headers"]
    sock = c.sock
    c.request("POST", "/echo", body=b"payload")
    info = json.loads(c.getresponse().read())
    assert info["method"] == "POST" and info["body"] == "payload"
    assert c.sock is sock                               # the same connection, kept alive
    c.close()


def test_urllib_and_404(address):
    host, port = address
    with urllib.request.urlopen(f"http://{host}:{port}/echo", timeout=WAIT) as r:
        assert json.loads(r.read())["version"] == "1.1"
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"http://{host}:{port}/nothing", timeout=WAIT)
    assert info.value.code == 404


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl(address):
    host, port = address
    done = subprocess.run(["curl", "-s", "-i", "--data-binary", "abc", "-H", "Expect:",
                           f"http://{host}:{port}/echo"], capture_output=True, timeout=WAIT)
    assert done.stdout.startswith(b"HTTP/1.1 200 OK\r\n")
    assert json.loads(done.stdout.split(b"\r\n\r\n", 1)[1])["body"] == "abc"


def test_pipelined_requests_are_answered_in_order(address):
    requests = b"".join(b"GET /wait/%d HTTP/1.1\r\nHost: x\r\n\r\n" % ms for ms in (300, 10, 100))
    out = raw(address, requests)
    assert out.count(b"HTTP/1.1 200 OK") == 3
    assert out.index(b"/wait/300") < out.index(b"/wait/10") < out.index(b"/wait/100")


def test_http10_is_answered_http_1_1_and_closes_unless_asked_to_keep_alive(address):
    """RFC 9110 2.5: HTTP/1.1, the highest version of the request's major one the server
    conforms to, as nginx and uvicorn answer; with HTTP/1.0's ways: a close, said, unless the
    client asked to keep the connection (then said), and a body without a length ended by
    the close, never chunked."""
    out = raw(address, b"GET /echo HTTP/1.0\r\n\r\nGET /echo HTTP/1.0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200 OK\r\n") and statuses(out) == [200]
    assert b"connection: close" in out
    out = raw(address, b"GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                       b"GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
                       b"GET /echo HTTP/1.0\r\n\r\n")
    kept, streamed = out.split(b"HTTP/1.1 200 OK\r\n")[1:]   # two answers, then the close
    assert b"connection: keep-alive\r\n" in kept and b"connection: close\r\n" in streamed
    assert b"transfer-encoding" not in streamed
    assert streamed.endswith(b"\r\n\r\n" + b"".join(b"part%d;" % i for i in range(5)))


def test_chunked_request_body(address):
    out = raw(address, b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    assert json.loads(out.split(b"\r\n\r\n", 1)[1])["body"] == "hello world"


def test_expect_100_continue(address):
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                  b"Expect: 100-continue\r\n\r\n")
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"   # before we send the body
        s.sendall(b"data")
        s.shutdown(socket.SHUT_WR)
        rest = b""
        while chunk := s.recv(65536):
            rest += chunk
    assert statuses(rest) == [200] and b'"body": "data"' in rest


def test_head_and_bodiless_statuses(address):
    out = raw(address, b"HEAD /echo HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /status/304 HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /status/204 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert statuses(out) == [200, 304, 204]
    heads = out.split(b"\r\n\r\n")
    assert b"content-length: " in heads[0]                    # HEAD: the length, no body
    assert all(b"content-length" not in head for head in heads[1:])  # 304, 204: none (9110 8.6)
    assert b"body" not in out and not heads[-1]


def test_streamed_iterable_is_chunked(address):
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request("GET", "/stream")
    r = c.getresponse()
    assert r.getheader("transfer-encoding") == "chunked"
    assert r.read() == b"".join(b"part%d;" % i for i in range(5))
    c.close()


def test_closed_connections_are_freed_without_the_collector(rt):
    """No reference cycle per connection: under connection churn the collector found
    hundreds of thousands of them, and walking them was a 5-10 ms pause in the p99."""
    rt.add_stage("app", App(), blocking=False)
    listener = serve(rt, ("127.0.0.1", 0), rt.sink("app"))
    rt.start()
    http = rt.stage("http").handler
    gc.collect()
    gc.disable()
    try:
        for _ in range(20):
            assert raw(listener.address, b"GET /status/204 HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.monotonic() + WAIT
        while http.connections:               # the server sees each close a moment later
            assert time.monotonic() < deadline
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_a_response_cut_off_by_the_client_is_counted_as_dropped(rt):
    class Big(seda.EventHandler):
        def handle_event(self, req):
            req.respond(Response(200, b"x" * (30 * 2**20)))

    rt.add_stage("app", Big(), blocking=False)
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app")).address
    rt.start()
    with socket.create_connection(address, timeout=WAIT) as c:
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert c.recv(65536).startswith(b"HTTP/1.1 200")
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))   # reset
    deadline = time.monotonic() + WAIT
    while rt.stats()["http"]["handler"]["dropped"] != 1:
        assert time.monotonic() < deadline, rt.stats()["http"]["handler"]


def test_an_answer_to_a_connection_the_socket_layer_just_closed_is_let_go(rt):
    """The socket layer may close a connection (a reset read in the same round) before the
    HTTP stage hears of it: an answer that comes in between is dropped, and neither the
    application's stage nor the HTTP stage fails over it (a stage that raised would lose the
    rest of its batch: other connections' packets and answers)."""
    answered = threading.Event()

    class ResetThenAnswer(seda.EventHandler):
        def handle_event(self, req):
            req.connection.conn._teardown(ConnectionResetError())   # as a reset read does
            req.respond(Response(200, b"late"))                     # (this thread: at once)
            answered.set()

    rt.add_stage("app", ResetThenAnswer(), blocking=False)
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app")).address
    rt.start()
    with socket.create_connection(address, timeout=WAIT) as c:
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert answered.wait(WAIT)
        assert c.recv(100) == b""                                   # closed, nothing sent
    stats = rt.stats()
    assert stats["app"]["errors"] == 0 and stats["http"]["errors"] == 0
    until(lambda: rt.stats()["http"]["handler"]["connections"], lambda open_: open_ == 0)


def test_connections_closed_at_once_are_let_go_though_no_closed_event_follows(rt):
    """A client that said close is hung up on the moment its answer is sent, and the socket
    layer then sends no Closed event (Connection.finish said it closed): the HTTP stage lets
    go of each connection there and then, whichever thread answered it."""
    address = start(rt, threads=2)
    for version, target in ((b"1.1", b"/status/200"), (b"1.0", b"/wait/1")) * 10:
        out = raw(address, b"GET " + target + b" HTTP/" + version + b"\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n")
        assert statuses(out) == [200]
    until(lambda: rt.stats()["http"]["handler"]["connections"], lambda open_: open_ == 0)
    assert rt.stats()["http"]["errors"] == 0


def test_a_rejected_request_gets_503_at_once_and_the_connection_lives(rt):
    address = start(rt, predicate=lambda req: req.path != "/echo")
    out = raw(address, b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /status/200 HTTP/1.1\r\nHost: x\r\n\r\n")
    assert statuses(out) == [503, 200] and b"retry-after: 1" in out


class AtOnce:
    """A Dispatch that answers each request as the server hands it over, on the loop thread;
    /raise is a router's bug."""

    def enqueue(self, req):
        if req.path == "/raise":
            raise KeyError("a router's bug")
        req.respond(Response(200, b"at once"))


def test_a_dispatch_answering_at_once_leaves_a_full_pipeline_reading(rt):
    address = serve(rt, ("127.0.0.1", 0), AtOnce()).address[:2]
    rt.start()
    pipelined = Limits().max_pipelined         # reading pauses there, and must resume
    with socket.create_connection(address, timeout=WAIT) as c:
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * pipelined)
        got = b""
        while got.count(b"HTTP/1.1 200") < pipelined:
            chunk = c.recv(65536)
            assert chunk
            got += chunk
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        rest = b""
        while chunk := c.recv(65536):
            rest += chunk
    assert statuses(rest) == [200]


def test_a_dispatch_that_raises_costs_its_request_a_500_and_nothing_else(rt, caplog):
    address = serve(rt, ("127.0.0.1", 0), AtOnce()).address[:2]
    rt.start()
    out = raw(address, b"GET /raise HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert statuses(out) == [500, 200] and "a router's bug" in caplog.text
    assert rt.stats()["http"]["errors"] == 0


# -- hostile input ------------------------------------------------------------------------------

BAD = [
    (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400),
    (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n folded\r\n\r\n", 400),
    (b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\n\r\n", 400),                                    # no Host
    (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    (b"GET / HTTP/3.7\r\nHost: x\r\n\r\n", 505),
    (b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    (b"BREW / HTTP/1.1\r\nHost: x\r\n\r\n", 501),
    (b"GET / HTTP/1.1\r\nHost: x\r\nExpect: tea\r\n\r\n", 417),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 400),              # TLS to a plain port
    (b"GET / HTTP/3.0\r\nHost: x\r\n\r\n", 505),
    (b"-BLARGH / HTTP/1.1\r\nHost: x\r\n\r\n", 501),                      # a token: a method
    (b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 501),
    (b"GET / HTTP/1.1\r\nHost: x y/z\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"3\r\nabc\r\n0\r\nHost: evil\r\n\r\n", 400),                        # Host in a trailer
    (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"
     + b"".join(b"X-T%d: 1\r\n" % i for i in range(300)) + b"\r\n", 431),  # 300 trailer fields
]


@pytest.mark.parametrize("request_bytes, status", BAD, ids=range(len(BAD)))
def test_malformed_requests_get_their_status_and_a_close(address, request_bytes, status):
    out = raw(address, request_bytes + b"GET /echo HTTP/1.1\r\nHost: x\r\n\r\n")
    assert statuses(out) == [status]                    # and nothing after: closed


def echoed(out: bytes) -> list[dict]:
    """The /echo answers in ``out``, in order."""
    return [json.loads(body) for body in re.findall(rb"\r\n\r\n(\{.*?\})(?=HTTP/|$)", out)]


def test_requests_before_connection_close_are_answered_and_nothing_after_runs(address):
    out = raw(address, b"GET /echo?a HTTP/1.1\r\nHost: x\r\n\r\n"
                       b"GET /echo?b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                       b"GET /echo?c HTTP/1.1\r\nHost: x\r\n\r\nmore bytes")
    assert [e["query"] for e in echoed(out)] == ["a", "b"] and statuses(out) == [200, 200]


def test_requests_before_a_bad_one_are_answered_then_the_400(address):
    posts = b"".join(b"POST /echo?%d HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx" % i
                     for i in range(10))
    out = raw(address, posts + b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n"
                               b"GET /echo?never HTTP/1.1\r\nHost: x\r\n\r\n")
    assert statuses(out) == [200] * 10 + [400]
    assert [e["query"] for e in echoed(out)] == [str(i) for i in range(10)]


def test_trailers_stay_out_of_the_headers(address):
    out = raw(address, b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                       b"3\r\nabc\r\n0\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n")
    (info,) = echoed(out)
    assert info["body"] == "abc" and ["x-forwarded-for", "6.6.6.6"] not in info["headers"]


def test_values_lose_trailing_whitespace_and_expect_is_understood(address):
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nX-Value: abc \t\r\nContent-Length: 2\r\n"
                  b"Expect: 100-continue \r\n\r\n")
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(b"ok")
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    (info,) = echoed(out)
    assert ["x-value", "abc"] in info["headers"] and info["body"] == "ok"


@pytest.mark.parametrize("request_bytes, check", [
    (b"GET /echo?a=1#frag HTTP/1.1\r\nHost: x\r\n\r\n",
     lambda info: info["path"] == "/echo" and info["query"] == "a=1"),
    (b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"3 ; ext = \"v\" ; b\r\nabc\r\n0\r\n\r\n", lambda info: info["body"] == "abc"),
    (b"GET /echo HTTP/1.2\r\nHost: x\r\n\r\n", lambda info: info["version"] == "1.1"),
])
def test_what_rfc_9110_and_9112_allow_is_served(address, request_bytes, check):
    (info,) = echoed(raw(address, request_bytes))
    assert check(info)


def test_size_limits(rt):
    limits = Limits(max_request_line=100, max_headers=5, max_header_bytes=300, max_body=10)
    address = start(rt, limits)
    long_url = b"GET /" + b"a" * 200 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    many = (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X%d: 1\r\n" % i for i in range(6))
            + b"\r\n")
    big_header = b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"v" * 400 + b"\r\n\r\n"
    declared = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n"
    chunked = (b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n")
    assert [statuses(raw(address, r)) for r in (long_url, many, big_header, declared, chunked)] \
        == [[414], [431], [431], [413], [413]]
    assert statuses(raw(address, b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n"
                                 b"0123456789")) == [200]


def test_status_lines_say_the_reason_phrases_of_rfc_9110(address):
    """The phrases the server writes (an answer that gives none, the server's own refusals)
    are RFC 9110's (15), not the RFC 7231 ones Python 3.11's HTTPStatus still has."""
    phrases = {413: "Content Too Large", 414: "URI Too Long", 416: "Range Not Satisfiable",
               421: "Misdirected Request", 422: "Unprocessable Content"}
    with httpx.Client(base_url=f"http://{address[0]}:{address[1]}", timeout=WAIT) as client:
        for status, phrase in phrases.items():
            r = client.get(f"/status/{status}")
            assert (r.status_code, r.reason_phrase, r.text) == (status, phrase, "body")
    big = raw(address, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % 2**31)
    assert big.startswith(b"HTTP/1.1 413 Content Too Large\r\n")
    assert big.endswith(b"\r\n\r\nContent Too Large\n")
    long = raw(address, b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert long.startswith(b"HTTP/1.1 414 URI Too Long\r\n")


def test_a_head_past_the_field_limit_gets_431_before_it_ends(rt):
    """70 KB of fields and no end of the head yet (under the 72 KB a head may take with its
    request line): 431 at once, though the header timeout is far off."""
    address = start(rt, Limits(header_timeout=3 * WAIT))
    head = b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Filler: %s\r\n" % (b"a" * 1000) * 70
    assert statuses(ask(address, head)) == [431]           # (ask times out in WAIT)


def test_slowloris_gets_408_even_while_trickling(rt):
    address = start(rt, Limits(header_timeout=0.5))
    started = time.monotonic()
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"GET / HTTP/1.1\r\n")
        answer = b""
        for i in range(100):                            # a byte every 50 ms, never finishing
            try:
                s.sendall(b"X-%d: y\r\n" % i)
            except OSError:
                break
            s.settimeout(0.05)
            try:
                answer += s.recv(1000)
            except TimeoutError:
                continue
            if answer:
                break
    assert statuses(answer) == [408]
    assert time.monotonic() - started < 3.0             # deadline 0.5 s + one sweep tick


def test_idle_keep_alive_connections_are_closed(rt):
    address = start(rt, Limits(keepalive_timeout=0.3))
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"GET /status/200 HTTP/1.1\r\nHost: x\r\n\r\n")
        first = s.recv(1000)
        assert statuses(first) == [200]
        s.settimeout(WAIT)
        assert s.recv(1000) == b""                      # closed by the server, idle


def test_connections_past_the_maximum_get_503(rt):
    address = start(rt, Limits(max_connections=2))
    held = [socket.create_connection(address, timeout=WAIT) for _ in range(2)]
    try:
        for s in held:                                  # make sure both are registered
            s.sendall(b"GET /status/200 HTTP/1.1\r\nHost: x\r\n\r\n")
            assert statuses(s.recv(1000)) == [200]
        assert statuses(raw(address, b"")) == [503]
    finally:
        for s in held:
            s.close()


def test_a_request_the_application_never_answers_gets_500(rt, caplog):
    class Silent(seda.EventHandler):
        def handle_event(self, req):
            pass

    rt.add_stage("app", Silent(), blocking=False)
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app"),
                    limits=Limits(response_timeout=0.2)).address
    rt.start()
    assert statuses(raw(address, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")) == [500]
    assert "no response to a request" in caplog.text


def test_responses_from_another_thread(rt):
    class Later(seda.EventHandler):
        def handle_event(self, req):
            threading.Thread(target=req.respond, args=(Response(200, b"later"),)).start()

    rt.add_stage("app", Later(), blocking=False)
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app")).address
    rt.start()
    assert raw(address, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").endswith(
        b"later")


# -- property: nothing crashes the stage ---------------------------------------------------------

VALID = (b"POST /echo?q=1 HTTP/1.1\r\nHost: example\r\nContent-Length: 5\r\n"
         b"X-A: b\r\n\r\nhello")


@st.composite
def mutated(draw):
    data = bytearray(VALID)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "dup"]))
        i = draw(st.integers(0, len(data) - 1)) if data else 0
        if op == "flip" and data:
            data[i] = draw(st.integers(0, 255))
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and data:
            del data[i:i + draw(st.integers(1, 8))]
        else:
            data[i:i] = data[i:i + draw(st.integers(1, 40))]
    return bytes(data)


@pytest.fixture
def shared_server():
    """One server for all the examples hypothesis runs in a test."""
    runtime = seda.Runtime()
    runtime.add_stage("app", App(), blocking=False)
    address = serve(runtime, ("127.0.0.1", 0), runtime.sink("app"),
                    limits=Limits(header_timeout=2.0, body_timeout=2.0)).address
    runtime.start()
    yield runtime, address
    runtime.stop()


@settings(max_examples=int(os.environ.get("SEDA_FUZZ_EXAMPLES", 150)), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(mutated(), st.binary(max_size=300)))
def test_random_and_mutated_requests_never_crash_the_server(shared_server, data):
    runtime, address = shared_server
    out = raw(address, data)
    assert out == b"" or re.match(rb"HTTP/1\.[01] [1-5]\d\d ", out)
    stats = runtime.stats()
    assert stats["http"]["errors"] == 0 and stats["seda.io.read"]["errors"] == 0


# -- streamed request bodies ---------------------------------------------------------------------

class Digest(seda.EventHandler):
    """Reads a streamed body in pieces (on a pool thread) and answers with its size and hash."""

    def __init__(self) -> None:
        self.errors: list = []
        self.failed = threading.Event()

    def handle_event(self, req):
        h, size = hashlib.sha256(), 0
        try:
            while piece := (req.stream.read(50_000) if req.stream else req.body[size:]):
                h.update(piece)
                size += len(piece)
        except ConnectionError as exc:
            self.errors.append(exc)
            self.failed.set()
            return
        req.respond(Response(200, f"{size} {h.hexdigest()}".encode()))


def test_large_bodies_stream_to_the_application(rt):
    rt.add_stage("app", Digest(), threads=2)
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app")).address
    rt.start()
    body = os.urandom(5 * 2**20)
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request("POST", "/", body=body)
    assert c.getresponse().read() == f"{len(body)} {hashlib.sha256(body).hexdigest()}".encode()
    sent = body[:420_000]                                           # chunked, 14 x 30 KB
    c.request("POST", "/", body=(sent[i:i + 30_000] for i in range(0, len(sent), 30_000)),
              encode_chunked=True)
    assert c.getresponse().read() == f"{len(sent)} {hashlib.sha256(sent).hexdigest()}".encode()
    c.close()


def test_a_client_leaving_mid_body_does_not_hang_the_application(rt):
    digest = Digest()
    rt.add_stage("app", digest, threads=1)
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app")).address
    rt.start()
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 100_000)
    assert digest.failed.wait(WAIT)
    assert isinstance(digest.errors[0], ConnectionError)


def test_the_body_reader_pauses_the_connection_when_the_application_lags():
    drained = []
    reader = BodyReader(lambda: drained.append(True), limit=100)
    reader.feed(b"a" * 60)
    reader.feed(b"b" * 60)                     # 120 unread > 100: the stage should stop
    assert reader.paused and not drained
    assert reader.read(30) == b"a" * 30        # 90 left: not yet half the limit
    assert reader.paused and not drained
    assert reader.read(60) == b"a" * 30 + b"b" * 30     # as many as asked for
    assert not reader.paused and drained == [True]
    reader.finish()
    assert reader.read() == b"b" * 30 and reader.read() == b""


def test_after_a_large_stream_to_a_slow_client_the_next_request_is_read(rt):
    """Reading pauses while a streamed answer waits for a slow client; once the stream has
    gone it must resume, or the client's next request on the connection is never read."""
    class Streams(seda.EventHandler):
        def handle_event(self, req):
            if req.path == "/small":
                req.respond(Response(200, b"small"))
                return
            body = StreamBody()
            req.respond(Response(200, body))
            for _ in range(64):                       # 4 MB, written as the socket allows
                body.write(b"s" * 65536)
            body.finish()

    rt.add_stage("app", Streams(), threads=2)
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app")).address
    rt.start()
    with socket.create_connection(address, timeout=WAIT) as c:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        got = c.recv(65536)                           # the server is now ahead of us
        c.sendall(b"GET /small HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        while piece := c.recv(2**20):
            got += piece
    assert statuses(got) == [200, 200] and got.endswith(b"small")


def test_a_request_watching_for_its_client_hears_when_it_goes(rt):
    """HttpRequest.on_gone: told once the client closes; a watch made after that is told at
    once; a request that stopped watching is not told."""
    heard, requests = [], []

    class Watch(seda.EventHandler):
        def handle_event(self, req):
            requests.append(req)
            if req.path == "/watch":
                req.on_gone(lambda: heard.append(req.path))
            else:
                req.on_gone(lambda: heard.append("never"))
                req.on_gone(None)

    rt.add_stage("app", Watch(), blocking=False)
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app")).address
    rt.start()
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"GET /other HTTP/1.1\r\nHost: x\r\n\r\nGET /watch HTTP/1.1\r\nHost: x\r\n\r\n")
        until(lambda: len(requests), lambda n: n == 2)
    until(lambda: list(heard), lambda h: h == ["/watch"])
    requests[1].on_gone(lambda: heard.append("late"))
    assert heard == ["/watch", "late"]


def test_bytes_sent_after_saying_close_do_not_reset_the_answer(rt):
    """A client that said close and sent more all the same while its answer was being made
    (a stray CRLF after a POST body, as old browsers sent, RFC 9112 2.2): reading was paused,
    so those bytes are unread when the answer is done, and a close over them would be a reset
    that destroys the answer's tail. The close lingers for them instead."""
    got, go = threading.Event(), threading.Event()

    class Big(seda.EventHandler):
        def handle_event(self, req):
            got.set()
            assert go.wait(WAIT)
            req.respond(Response(200, b"x" * 200_000))

    rt.add_stage("app", Big())
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app")).address
    rt.start()
    with socket.create_connection(address, timeout=WAIT) as s:
        s.sendall(b"POST / HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc")
        assert got.wait(WAIT)                     # read, and reading paused
        s.sendall(b"\r\n")                      # after it said close (HTTP/1.0)
        go.set()
        data = b""
        while chunk := s.recv(65536):             # (ConnectionResetError if it reset)
            data += chunk
    assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"\r\n\r\n" + b"x" * 200_000)
