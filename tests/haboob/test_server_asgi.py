"""Haboob with ASGI applications: told apart from WSGI ones, mounted beside them and beside
static files (root_path), each in an asyncio stage of its own with the admission control and
classes WSGI stages have; a refusal is an immediate 503; the WebSocket settings reach them."""

from __future__ import annotations

import asyncio
import http.client
import json
import queue
import socket
import sys
import threading

import pytest
from wsproto.events import CloseConnection, Ping

import seda
from haboob.server import Options, build, served_as

from tests.helpers import WAIT
from tests.helpers.admission import (
    admits_a_higher_class_where_a_lower_is_refused,
    refuses_over_the_bound_at_once,
)
from tests.helpers.net import fetch
from tests.helpers.wsclient import RawClient


async def describe(scope, receive, send):
    """An ASGI application that answers with where it was mounted and what it was asked."""
    if scope["type"] != "http":
        return
    body = json.dumps({"asgi": True, "root_path": scope["root_path"], "path": scope["path"],
                       "method": scope["method"]}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def wsgi_describe(environ, start_response):
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"asgi": False, "script_name": environ["SCRIPT_NAME"],
                        "path": environ["PATH_INFO"]}).encode()]


class Instance:
    """An ASGI application as an object, as middleware stacks are."""

    async def __call__(self, scope, receive, send):
        await describe(scope, receive, send)


class Asgi2:
    """An ASGI 2 application, with a lifespan: constructed with the scope, then called with
    receive and send."""

    started: list = []

    def __init__(self, scope):
        self.scope = scope

    async def __call__(self, receive, send):
        if self.scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                Asgi2.started.append(True)
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = json.dumps({"asgi2": True, "root_path": self.scope["root_path"],
                           "path": self.scope["path"], "started": bool(Asgi2.started)})
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body.encode()})


class WsgiClass:
    """PEP 3333's application class: constructed with environ and start_response, iterated."""

    def __init__(self, environ, start_response):
        self.environ = environ
        start_response("200 OK", [("Content-Type", "text/plain")])

    def __iter__(self):
        yield b"wsgi class at " + self.environ["PATH_INFO"].encode()


class Awaited:
    """An ASGI 3 application as a class: constructed with all three, then awaited."""

    def __init__(self, scope, receive, send):
        self.call = describe(scope, receive, send)

    def __await__(self):
        return self.call.__await__()


def test_an_application_is_served_as_asgi_asgi2_or_wsgi_as_it_is_or_as_told():
    assert served_as(describe, "auto") == served_as(Instance(), "auto") == "asgi"
    assert served_as(Awaited, "auto") == "asgi"                # as uvicorn tells
    assert served_as(Asgi2, "auto") == "asgi2"                 # a class, as uvicorn tells
    assert served_as(wsgi_describe, "auto") == served_as(WsgiClass, "auto") == "wsgi"
    assert served_as(describe, "wsgi") == "wsgi"
    assert served_as(wsgi_describe, "asgi") == "asgi"          # told: wrapped out of sight
    assert served_as(describe, "asgi3") == "asgi"              # uvicorn's name for it
    assert served_as(WsgiClass, "asgi2") == "asgi2"


@pytest.mark.parametrize("interface", ["asgi2", "auto"])
def test_an_asgi2_class_is_served_with_its_lifespan(interface):
    Asgi2.started.clear()
    options = Options(port=0, interface=interface,
                      apps=[("/", Asgi2)] if interface == "asgi2"
                      else [("/", Asgi2), ("/awaited", Awaited), ("/wsgi", WsgiClass)])
    rt = seda.Runtime()
    address = build(rt, options).address
    rt.start()
    try:
        assert rt.stats()["haboob.app0:/"]["manager"] == "asyncio"
        r, body = fetch(address, "/items/1")
        assert r.status == 200 and json.loads(body) == {
            "asgi2": True, "root_path": "", "path": "/items/1", "started": True}
        if interface == "auto":                # the other classes beside it, as they are
            assert json.loads(fetch(address, "/awaited/x")[1])["path"] == "/awaited/x"
            assert fetch(address, "/wsgi/x")[1] == b"wsgi class at /x"
    finally:
        rt.stop()


def test_asgi_wsgi_and_files_in_one_server(tmp_path):
    (tmp_path / "index.html").write_bytes(b"home")
    options = Options(root=str(tmp_path), port=0,
                      apps=[("/", describe), ("/api", Instance()), ("/wsgi", wsgi_describe)])
    rt = seda.Runtime()
    address = build(rt, options).address
    rt.start()
    try:
        stats = rt.stats()
        assert stats["haboob.app1:/api"]["manager"] == "asyncio"
        assert stats["haboob.app2:/wsgi"]["manager"] == "threads"
        _, body = fetch(address, "/api/items/1")
        assert json.loads(body) == {"asgi": True, "root_path": "/api",
                                    "path": "/api/items/1", "method": "GET"}
        _, body = fetch(address, "/wsgi/x")
        assert json.loads(body) == {"asgi": False, "script_name": "/wsgi", "path": "/x"}
        assert fetch(address, "/index.html")[1] == b"home"        # a file wins at /
        _, body = fetch(address, "/missing")                       # the rest: the app at /
        assert json.loads(body)["root_path"] == "" and json.loads(body)["path"] == "/missing"
        _, body = fetch(address, "/index.html", method="POST")    # and whatever is not a GET
        assert json.loads(body)["method"] == "POST"
    finally:
        rt.stop()


async def which_loop(scope, receive, send):
    """Answers with the module of the event loop it runs on."""
    if scope["type"] == "http":
        loop = type(asyncio.get_running_loop())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": loop.__module__.encode()})


class DebugLoop(asyncio.SelectorEventLoop):
    """A loop of the application's own (--loop tests.haboob.test_server_asgi:DebugLoop)."""


@pytest.mark.parametrize(("loop", "module"), [
    ("asyncio", "asyncio.unix_events"), ("uvloop", "uvloop"), ("auto", "uvloop"),
    ("tests.haboob.test_server_asgi:DebugLoop", "tests.haboob.test_server_asgi")])
def test_the_application_runs_on_the_loop_it_is_given(loop, module):
    pytest.importorskip("uvloop")            # (installed with pyseda[asgi], as for uvicorn)
    rt = seda.Runtime()
    address = build(rt, Options(port=0, apps=[("/", which_loop)], loop=loop)).address
    rt.start()
    try:
        assert fetch(address, "/")[1] == module.encode()
    finally:
        rt.stop()


def test_a_loop_that_cannot_be_had_is_a_config_error(monkeypatch):
    for loop, message in (("trio", "expected one of auto, asyncio, uvloop or module:attribute"),
                          ("tests.nowhere:Loop", "cannot load the loop factory"),
                          ("tests.haboob.test_server_asgi:WAIT", "is not callable")):
        with pytest.raises(seda.ConfigError, match=message):
            Options(port=0, apps=[("/", which_loop)], loop=loop)
    monkeypatch.setitem(sys.modules, "uvloop", None)     # as if it were not installed
    with pytest.raises(seda.ConfigError, match="uvloop is not installed"):
        Options(port=0, apps=[("/", which_loop)], loop="uvloop")
    assert Options(port=0, apps=[("/", which_loop)], loop="auto").loop == "auto"


async def accept(scope, receive, send):
    """Accepts a WebSocket, then waits for its end."""
    await receive()
    await send({"type": "websocket.accept"})
    while (await receive())["type"] != "websocket.disconnect":
        pass


def test_the_ping_settings_reach_each_applications_websockets():
    options = Options(port=0, apps=[("/", accept)], ws_ping_interval=0.1, ws_ping_timeout=0.1)
    rt = seda.Runtime()
    address = build(rt, options).address
    rt.start()
    try:
        with RawClient(f"ws://127.0.0.1:{address[1]}") as client:
            events = client.events()
            assert isinstance(next(events), Ping)          # not after uvicorn's 20 s
            close = next(events)
            assert isinstance(close, CloseConnection) and close.code == 1011
    finally:
        rt.stop()


@pytest.fixture
def blocked_app():
    """An ASGI application that holds each request until ``release`` is set."""
    entered, release = threading.Semaphore(0), threading.Event()

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        entered.release()
        await asyncio.to_thread(release.wait, WAIT)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})

    return app, entered, release


def test_a_request_over_the_bound_gets_503_with_retry_after_at_once(blocked_app):
    refuses_over_the_bound_at_once(blocked_app, 2.0, tasks=1)


def test_a_higher_class_is_admitted_where_a_lower_one_is_refused(blocked_app):
    admits_a_higher_class_where_a_lower_is_refused(blocked_app, 2.0, tasks=1)


def _received_as_sent(interface):
    """An application that puts each piece of its request body in ``received`` as it gets it
    (ASGI: each ``http.request``; WSGI: each line of ``wsgi.input``, NDJSON's way), ``b""``
    at its end, and then answers with how many pieces it got."""
    received: queue.Queue = queue.Queue()

    async def asgi_app(scope, receive, send):
        if scope["type"] != "http":
            return
        count, more = 0, True
        while more:
            message = await receive()
            more = message["more_body"]
            received.put(message["body"])
            count += 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"%d" % count})

    def wsgi_app(environ, start_response):
        count, line = 0, None
        while line != b"":
            line = environ["wsgi.input"].readline()
            received.put(line)
            count += 1
        start_response("200 OK", [])
        return [b"%d" % count]

    return (asgi_app if interface == "asgi" else wsgi_app), received


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_a_chunked_body_reaches_the_application_piece_by_piece_as_it_is_sent(interface):
    """A small chunked body sent slowly (events, NDJSON, a full-duplex exchange) is the
    application's piece by piece as each arrives, as on uvicorn and hypercorn: each piece is
    received before the next is sent."""
    app, received = _received_as_sent(interface)
    rt = seda.Runtime()
    address = build(rt, Options(port=0, apps=[("/", app)])).address
    rt.start()
    try:
        with socket.create_connection(address, timeout=WAIT) as s:
            s.sendall(b"POST /events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            for n in range(5):
                event = b'{"n": %d}\n' % n
                s.sendall(b"%x\r\n%s\r\n" % (len(event), event))
                assert received.get(timeout=WAIT) == event    # before the next is sent
            s.sendall(b"0\r\n\r\n")
            assert received.get(timeout=WAIT) == b""
            response = http.client.HTTPResponse(s)
            response.begin()
            assert response.status == 200 and response.read() == b"6"
    finally:
        rt.stop()
