"""Haboob with Quart, Litestar and BlackSheep applications (tests/helpers/asgiframeworks.py:
one set of routes in each) and real clients (httpx, websockets). Every case runs against
uvicorn too, each application served at / as ``haboob module:app`` and ``uvicorn module:app``
serve it, and the two must answer alike: status, header fields (all but Date and Server,
which are each server's own) and body. Then what each framework relies on, on both servers:
bodies streamed both ways, the lifespan, WebSocket messages and close codes, failures; and
sse-starlette's disconnect listener, and Django Channels' consumers beside Django's HTTP."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from tests.helpers import WAIT
from tests.helpers.asgiframeworks import FRAMEWORKS, computed
from tests.helpers.asgiservers import SERVERS, echo_then_bye
from tests.helpers.net import until

pytest.importorskip("quart")
pytest.importorskip("litestar")
pytest.importorskip("blacksheep")

BODY = os.urandom(5 * 2**20)


def pieces():
    """BODY of no declared length: sent chunked, as a streaming client or a proxy sends it."""
    for i in range(0, len(BODY), 2**16):
        yield BODY[i:i + 2**16]


@pytest.fixture(scope="module")
def servers():
    """``servers[framework][kind]``: (the server, the events of its application's lifespan and
    streams), each server with an application of its own."""
    running: dict = {}
    try:
        for framework, make in FRAMEWORKS.items():
            for kind, server in SERVERS.items():
                events: list = []
                running.setdefault(framework, {})[kind] = (server({"/": make(events)}), events)
        yield running
    finally:
        for by_kind in running.values():
            for server, _events in by_kind.values():
                server.stop()


@pytest.fixture(params=[(f, k) for f in FRAMEWORKS for k in SERVERS], ids="-".join)
def app(request, servers):
    """One framework on one server: (its base URL, its events)."""
    framework, kind = request.param
    server, events = servers[framework][kind]
    return server.urls["/"], events


def framework_of(request) -> str:
    return request.node.callspec.params["app"][0]


# -- the two servers side by side -----------------------------------------------------------------

CASES = {
    "json": ("POST", "/json", {"json": {"name": "lamp", "n": 21, "tags": ["b", "a"]}}),
    "bad json": ("POST", "/json", {"content": b"{not json",
                                   "headers": {"content-type": "application/json"}}),
    "upload": ("POST", "/upload", {"content": BODY}),
    "chunked upload": ("POST", "/upload", {"content": pieces}),
    "path and query": ("GET", "/items/7?q=caf%C3%A9%20au+lait&limit=3", {}),
    "bad path parameter": ("GET", "/items/seven", {}),
    "stream": ("GET", "/stream?count=4", {}),
    "set cookies": ("GET", "/cookie", {}),
    "read cookies": ("GET", "/whoami", {"headers": {"cookie": "a=1; b=two"}}),
    "redirect": ("GET", "/redirect", {}),
    "not found": ("GET", "/missing", {}),
    "handler raises": ("GET", "/boom", {}),
    "lifespan state": ("GET", "/state", {}),
    "head": ("HEAD", "/items/3", {}),
    "wrong method": ("DELETE", "/items/3", {}),
}
OWN = {"date", "server"}            # each server's own fields (RFC 9110 6.6.1, 10.2.4)


def answer(url: str, method: str, path: str, kwargs: dict) -> tuple:
    if callable(kwargs.get("content")):
        kwargs = {**kwargs, "content": kwargs["content"]()}
    r = httpx.request(method, url + path, timeout=WAIT, **kwargs)
    fields = sorted((k.lower(), v) for k, v in r.headers.multi_items() if k.lower() not in OWN)
    return r.status_code, fields, r.content


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("case", CASES)
def test_haboob_and_uvicorn_answer_alike(servers, framework, case):
    haboob, uvi = (answer(servers[framework][kind][0].urls["/"], *CASES[case])
                   for kind in SERVERS)
    if case.endswith("upload"):
        haboob, uvi = _unstreamed(haboob), _unstreamed(uvi)
    assert haboob == uvi


def _unstreamed(answer: tuple) -> tuple:
    """An upload's answer without whether the body came in pieces: a framework that reads the
    body in a task of its own (Quart) may have it whole before the handler looks, on either
    server, as the scheduler has it (test_a_large_upload_is_read_as_a_stream checks it)."""
    status, fields, content = answer
    digest = {k: v for k, v in json.loads(content).items() if k != "streamed"}
    return status, [f for f in fields if f[0] != "content-length"], digest


# -- what the applications rely on, on both -------------------------------------------------------

def test_json_bodies_both_ways(app):
    r = httpx.post(app[0] + "/json", json={"name": "lamp", "n": 21, "tags": ["b", "a"]},
                   timeout=WAIT)
    assert r.status_code in (200, 201)          # (Litestar's POST says 201 Created)
    assert r.json() == computed({"name": "lamp", "n": 21, "tags": ["b", "a"]})


@pytest.mark.parametrize("body", [BODY, pieces], ids=["length", "chunked"])
def test_a_large_upload_is_read_as_a_stream(request, app, body):
    """Whole, and in pieces as it arrives. Quart reads the body in a task of its own, so its
    handler may find all of it there at once, on any server, when its task ran first (the
    CI's loaded machine saw it): there only the bytes are checked."""
    r = httpx.post(app[0] + "/upload", content=body() if callable(body) else body,
                   timeout=WAIT)
    assert r.status_code == 200
    got, whole = r.json(), {"size": len(BODY), "sha256": hashlib.sha256(BODY).hexdigest()}
    if framework_of(request) == "quart":
        assert {k: v for k, v in got.items() if k != "streamed"} == whole
    else:
        assert got == {**whole, "streamed": True}


def test_path_and_query_parameters(app):
    r = httpx.get(app[0] + "/items/7", params={"q": "café au lait", "limit": 3}, timeout=WAIT)
    assert r.json() == {"item_id": 7, "q": "café au lait", "limit": 3}


def test_a_streamed_response_arrives_in_pieces(app):
    with httpx.stream("GET", app[0] + "/stream", params={"count": 4}, timeout=WAIT) as r:
        assert r.headers["transfer-encoding"] == "chunked"
        assert list(r.iter_lines()) == [f"line {i}" for i in range(4)]


def test_cookies_set_and_read_back(app):
    with httpx.Client(base_url=app[0], timeout=WAIT) as client:
        r = client.get("/cookie")
        assert len(r.headers.get_list("set-cookie")) == 2
        assert client.get("/whoami").json() == {"a": "1", "b": "two words"}


def test_a_redirect_is_passed_on(app):
    r = httpx.get(app[0] + "/redirect", timeout=WAIT)
    assert r.status_code == 302 and r.headers["location"] == "/items/1?q=moved"
    assert httpx.get(app[0] + "/redirect", follow_redirects=True, timeout=WAIT).json()["q"] \
        == "moved"


def test_a_handler_that_raises_gets_a_500_and_the_server_serves_on(app):
    with httpx.Client(base_url=app[0], timeout=WAIT) as client:     # one connection, kept
        assert client.get("/boom").status_code == 500
        assert client.get("/missing").status_code == 404
        assert client.get("/state").json() == {"greeting": "hello"}


def test_a_stream_whose_handler_raises_is_cut_short(app):
    with pytest.raises(httpx.RemoteProtocolError):      # no last chunk: never complete-looking
        httpx.get(app[0] + "/half", timeout=WAIT)
    assert httpx.get(app[0] + "/state", timeout=WAIT).status_code == 200


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_endless_stream_stops_when_its_client_goes(servers, framework):
    """Haboob only: its send() raises once the client has gone (ASGI spec 2.4), so even
    BlackSheep, which never listens for http.disconnect, stops; on uvicorn (spec 2.3, where
    such a send does nothing) BlackSheep's stream would go on for ever."""
    server, events = servers[framework]["haboob"]
    with httpx.stream("GET", server.urls["/"] + "/forever", timeout=WAIT) as r:
        got = b""
        for piece in r.iter_raw():
            got += piece
            if got.count(b"tick") >= 3:
                break
    until(lambda: events.count("forever stopped"), bool)
    assert httpx.get(server.urls["/"] + "/state", timeout=WAIT).status_code == 200


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("kind", SERVERS)
def test_the_lifespan_runs_around_the_requests(framework, kind):
    events: list = []
    server = SERVERS[kind]({"/": FRAMEWORKS[framework](events)})
    try:
        assert events == ["startup"]
        assert httpx.get(server.urls["/"] + "/state", timeout=WAIT).json() == {
            "greeting": "hello"}
    finally:
        server.stop()
    assert events == ["startup", "shutdown"]


# -- WebSockets -----------------------------------------------------------------------------------

def ws_url(app, path: str = "/ws") -> str:
    return app[0].replace("http://", "ws://") + path


def test_websocket_echo_and_the_applications_close(app):
    with connect(ws_url(app), open_timeout=WAIT, max_size=None) as ws:
        ws.send("hello")
        assert ws.recv(WAIT) == "echo: hello"
        ws.send(b"\x00\xff")
        assert ws.recv(WAIT) == b"\x00\xff\x00\xff"
        big = os.urandom(3 * 2**20)             # past every buffer's limit, both ways
        ws.send(big)
        assert ws.recv(WAIT) == big * 2
        ws.send("bye")
        with pytest.raises(ConnectionClosed):
            ws.recv(WAIT)
    assert (ws.close_code, ws.close_reason) == (4001, "see you")


def test_websocket_the_clients_close_code_reaches_the_application(app, request):
    if framework_of(request) == "quart":
        pytest.skip("Quart does not show the close code to the application")
    events = app[1]
    with connect(ws_url(app), open_timeout=WAIT) as ws:
        ws.send("hello")
        assert ws.recv(WAIT) == "echo: hello"
        ws.close(4002, "client says bye")
    until(lambda: [e for e in events if isinstance(e, tuple)], lambda e: ("ws closed", 4002) in e)


def websocket_outcome(url: str) -> tuple:
    """What a client sees of a WebSocket that the application refuses or fails."""
    try:
        with connect(url, open_timeout=WAIT) as ws:
            ws.recv(WAIT)
    except InvalidStatus as refused:
        return "refused", refused.response.status_code
    except ConnectionClosed:
        return "closed", ws.close_code, ws.close_reason
    return ("a message",)


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("path", ["/ws-refuse", "/ws-fail"])
def test_websocket_refused_or_failed_alike(servers, framework, path):
    """Refused before the handshake: 403 from both (the body may differ: ASGI says only 403);
    failed after it: the same close code from both (Quart's 1000, Litestar's 4500, 1011)."""
    haboob, uvi = (websocket_outcome(ws_url((servers[framework][kind][0].urls["/"],), path))
                   for kind in SERVERS)
    assert haboob == uvi
    if path == "/ws-refuse":
        assert haboob == ("refused", 403)


# -- sse-starlette: a disconnect listener beside is_disconnected ----------------------------------

def make_sse(events: list):
    from sse_starlette.sse import EventSourceResponse
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def feed(request):
        async def stream():
            try:
                yield {"data": "first"}
                await asyncio.sleep(0)          # a turn: sse-starlette's listener waits now
                await request.is_disconnected()  # as its documentation's example checks
                await asyncio.Event().wait()    # then no news for a long while
            finally:
                events.append("stream stopped")
        return EventSourceResponse(stream(), ping=600)

    return Starlette(routes=[Route("/feed", feed)])


@pytest.mark.parametrize("kind", SERVERS)
def test_sse_stops_when_its_client_goes(kind):
    """sse-starlette learns of the disconnect from its listener, a receive() waiting beside
    the one is_disconnected cancels: the stream stops at once, not at the next ping."""
    pytest.importorskip("sse_starlette")
    events: list = []
    server = SERVERS[kind]({"/": make_sse(events)})
    try:
        with httpx.stream("GET", server.urls["/"] + "/feed", timeout=WAIT) as r:
            assert next(r.iter_lines()) == "data: first"
        until(lambda: events, bool)
    finally:
        server.stop()
    assert events == ["stream stopped"]


# -- Django Channels ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def channels():
    """``channels[kind]``: (the base URL of a Channels application, its events)."""
    pytest.importorskip("channels")
    from tests.helpers.asgiframeworks import make_channels

    running = {}
    try:
        for kind, server in SERVERS.items():
            events: list = []
            running[kind] = (server({"/": make_channels(events)}), events)
        yield {kind: (server.urls["/"], events) for kind, (server, events) in running.items()}
    finally:
        for server, _events in running.values():
            server.stop()


@pytest.mark.parametrize("path", ["/ws", "/ws-async"])
@pytest.mark.parametrize("kind", SERVERS)
def test_channels_consumers_echo_and_hear_the_close_code(channels, kind, path):
    url, events = channels[kind]
    with connect(url.replace("http://", "ws://") + path, open_timeout=WAIT) as ws:
        assert echo_then_bye(ws) == (4001, "see you")
    with connect(url.replace("http://", "ws://") + path, open_timeout=WAIT) as ws:
        ws.send("hello")
        assert ws.recv(WAIT) == "echo: hello"
        ws.close(4002)
    until(lambda: events, lambda e: ("ws closed", 4002) in e)
    events.clear()


@pytest.mark.parametrize("path", ["/ws", "/ws-async"])
def test_channels_refusals_and_django_beside_them_alike(channels, path):
    refused = [websocket_outcome(url.replace("http://", "ws://") + path + "?refuse")
               for url, _events in channels.values()]
    assert refused == [("refused", 403)] * 2
    where = [httpx.get(url + "/async/where", params={"q": "1"}, timeout=WAIT).json()
             for url, _events in channels.values()]
    assert where[0] == where[1] == {"path": "/async/where", "script_name": "",
                                    "path_info": "/async/where", "query": "1"}
