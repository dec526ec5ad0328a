"""Ready answers: a plain GET with a fresh published answer never reaches the application."""

from __future__ import annotations

import socket
import time

import pytest

import seda
from seda.http import Prepared, ReadyAnswer, Response, prepare_head, serve

from tests.helpers import WAIT
from tests.helpers.net import raw
from tests.helpers.recorder import Recorder


class App(seda.EventHandler):
    """Answers ``app <path>``; /wait first takes a while (on its pool thread)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def handle_event(self, req):
        self.seen.append(f"{req.method} {req.target}")
        if req.path == "/wait":
            time.sleep(0.05)                 # the work itself: the fast answer must wait its turn
        req.respond(Response(200, b"app " + req.path.encode()))


READY = Prepared(200, prepare_head([("content-type", "text/plain"), ("content-length", "5")]),
                 b"ready")


@pytest.fixture
def served(rt):
    """(address, app, answers, log): /a has a fresh ready answer, /old a stale one."""
    app, log = App(), Recorder()
    answers = {b"/a": ReadyAnswer(READY, time.monotonic() + 60),
               b"/old": ReadyAnswer(READY, time.monotonic() - 1)}
    rt.add_stage("app", app, threads=2)
    rt.add_stage("log", log)
    listener = serve(rt, ("127.0.0.1", 0), rt.sink("app"), answers=answers, log=rt.sink("log"))
    rt.start()
    return listener.address, app, answers, log


def bodies(data: bytes) -> list[bytes]:
    """The bodies of a run of responses, by their Content-Length."""
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length")))
        out.append(rest[:length])
        data = rest[length:]
    return out


def test_plain_gets_are_answered_from_the_table_in_order(served):
    address, app, answers, log = served
    get = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n"
    out = raw(address, get % b"/wait" + get % b"/a" + get % b"/b" + get % b"/a")
    assert bodies(out) == [b"app /wait", b"ready", b"app /b", b"ready"]
    assert app.seen == ["GET /wait", "GET /b"]
    assert answers[b"/a"].hits == 2
    logged = log.wait(4)                     # the access log still sees every response
    assert sorted(ev.request.target for ev in logged) == ["/a", "/a", "/b", "/wait"]


@pytest.mark.parametrize("request_line, headers", [
    (b"HEAD /a HTTP/1.1", b""),
    (b"POST /a HTTP/1.1", b"Content-Length: 2\r\n"),
    (b"GET /a?x=1 HTTP/1.1", b""),
    (b"GET /a HTTP/1.1", b"If-None-Match: \"x\"\r\n"),
    (b"GET /a HTTP/1.1", b"if-modified-since: Mon, 01 Jan 2024 00:00:00 GMT\r\n"),
    (b"GET /a HTTP/1.1", b"Range: bytes=0-1\r\n"),
    (b"GET /old HTTP/1.1", b""),             # past fresh_until
])
def test_other_requests_go_to_the_application(served, request_line, headers):
    address, app, answers, _ = served
    body = b"hi" if request_line.startswith(b"POST") else b""
    out = raw(address, request_line + b"\r\nHost: x\r\n" + headers + b"\r\n" + body)
    assert out.startswith(b"HTTP/1.1 200") and b"ready" not in out
    assert len(app.seen) == 1 and answers[b"/a"].hits == answers[b"/old"].hits == 0


def test_an_answer_due_for_renewal_answers_on_while_its_owner_renews_it(served):
    address, app, answers, log = served
    asked = []
    now = time.monotonic()
    answers[b"/due"] = ReadyAnswer(READY, now - 1, renew=lambda: asked.append("/due"), grace=60)
    answers[b"/lapsed"] = ReadyAnswer(READY, now - 2, renew=lambda: asked.append("/lapsed"),
                                      grace=1)
    get = b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n"
    out = raw(address, get % b"/due" + get % b"/due" + get % b"/lapsed")
    assert bodies(out) == [b"ready", b"ready", b"app /lapsed"]   # past its grace: the app
    assert asked == ["/due"]                 # once, however many requests find it due
    assert answers[b"/due"].hits == 2 and app.seen == ["GET /lapsed"]
    assert len(log.wait(3)) == 3


def test_a_kept_head_due_for_renewal_is_answered_at_once(rt):
    """Without an access log the answer goes at once, and the same head is kept: the due
    answer is given from there too."""
    asked = []
    answers = {b"/a": ReadyAnswer(READY, time.monotonic() - 1, renew=lambda: asked.append(1),
                                  grace=60)}
    app = App()
    rt.add_stage("app", app)
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app"), answers=answers).address
    rt.start()
    with socket.create_connection(address, timeout=WAIT) as s:
        for _ in range(3):
            s.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while not data.endswith(b"ready"):
                data += s.recv(4096)
    assert asked == [1] and answers[b"/a"].hits == 3 and not app.seen


def test_http10_gets_the_answer_and_a_close(served):
    address, app, answers, _ = served
    out = raw(address, b"GET /a HTTP/1.0\r\n\r\n")
    assert out.startswith(b"HTTP/1.1 200") and out.endswith(b"ready")
    assert b"connection: close" in out.lower() and not app.seen and answers[b"/a"].hits == 1


def test_without_a_log_the_answer_is_sent_as_prepared(rt):
    answers = {b"/a": ReadyAnswer(READY, time.monotonic() + 60)}
    rt.add_stage("app", App())
    address = serve(rt, ("127.0.0.1", 0), rt.sink("app"), answers=answers).address
    rt.start()
    with socket.create_connection(address, timeout=WAIT) as s:
        for _ in range(3):                   # keep-alive: the connection stays usable
            s.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while not data.endswith(b"ready"):
                data += s.recv(4096)
            assert data.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection" not in data
    assert answers[b"/a"].hits == 3
