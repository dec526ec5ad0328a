"""Haboob with real ASGI applications (FastAPI, Starlette with a lifespan, Django's ASGI
handler) and a real client (httpx), mounted side by side; every case runs against uvicorn too
(each application on a server of its own, its prefix given as root_path, so that it sees the
same scope), and the two must answer alike: what a user moving from uvicorn relies on."""

from __future__ import annotations

import hashlib
import json
import os

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.helpers import WAIT, asgiapps
from tests.helpers.asgiservers import SERVERS, echo_then_bye
from tests.helpers.net import until

PREFIXES = ("/fastapi", "/starlette", "/django")


def make_apps(events: list) -> dict:
    return {"/fastapi": asgiapps.make_fastapi(), "/starlette": asgiapps.make_starlette(events),
            "/django": asgiapps.make_django()}


@pytest.fixture(scope="module")
def both():
    running = {name: kind(make_apps([])) for name, kind in SERVERS.items()}
    yield running
    for server in running.values():
        server.stop()


@pytest.fixture(params=list(SERVERS))
def client(request, both):
    """A client of one server: ``client("/fastapi")`` is an httpx client for that application."""
    urls = both[request.param].urls
    clients = []

    def make(prefix: str) -> httpx.Client:
        clients.append(httpx.Client(base_url=urls[prefix], timeout=WAIT))
        return clients[-1]

    yield make
    for c in clients:
        c.close()


# -- FastAPI --------------------------------------------------------------------------------------

def test_fastapi_json_bodies_are_validated_and_answered(client):
    api = client("/fastapi")
    r = api.post("/items", json={"name": "lamp", "price": 10, "tags": ["new"]})
    assert r.status_code == 200 and r.json() == {"name": "lamp", "with_tax": 12.0, "tags": ["new"]}
    r = api.post("/items", json={"name": "lamp"})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "price"]


def test_fastapi_path_and_query_parameters(client):
    api = client("/fastapi")
    assert api.get("/items/7", params={"q": "a b", "limit": 3}).json() == {
        "item_id": 7, "q": "a b", "limit": 3}
    assert api.get("/items/7").json() == {"item_id": 7, "q": None, "limit": 10}
    assert api.get("/items/seven").status_code == 422


def test_fastapi_dependency(client):
    api = client("/fastapi")
    assert api.get("/me", headers={"X-Token": "user-ann"}).json() == {"user": "ann"}
    r = api.get("/me", headers={"X-Token": "guest"})
    assert r.status_code == 401 and r.json() == {"detail": "bad token"}
    assert api.get("/me").status_code == 422          # the header is required


def test_fastapi_streaming_response_arrives_piece_by_piece(client):
    with client("/fastapi").stream("GET", "/stream", params={"count": 5}) as r:
        assert r.headers["transfer-encoding"] == "chunked"
        lines = list(r.iter_lines())
    assert lines == [f"line {i}" for i in range(5)]


def test_fastapi_background_task_runs_after_the_response(client):
    api = client("/fastapi")
    message = os.urandom(4).hex()
    assert api.post("/notify", params={"message": message}).json() == {"queued": message}
    until(lambda: api.get("/notes").json(), lambda notes: message in notes)


def test_fastapi_reads_a_large_upload_as_a_stream(client):
    body = os.urandom(3 * 2**20)
    r = client("/fastapi").post("/upload", content=body)
    assert r.json() == {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}


def test_fastapi_websocket_echo(client):
    url = str(client("/fastapi").base_url).rstrip("/").replace("http://", "ws://")
    with connect(f"{url}/ws?token=secret", open_timeout=WAIT) as ws:
        assert echo_then_bye(ws) == (4000, "see you")
    with pytest.raises(InvalidStatus) as refused:
        connect(f"{url}/ws", open_timeout=WAIT)
    assert refused.value.response.status_code == 403


def test_fastapi_plain_functions_run_on_threads(client):
    assert client("/fastapi").get("/sync").json() == {"off_the_loop": True}


# -- Starlette ------------------------------------------------------------------------------------

def test_starlette_requests_see_the_lifespans_state(client):
    assert client("/starlette").get("/state").json() == {"greeting": "hello", "pool": "open"}


def test_starlette_builds_urls_under_its_prefix(client):
    assert client("/starlette").get("/where").json() == {
        "url": "/starlette/state", "root_path": "/starlette", "path": "/starlette/where"}


def test_starlette_echoes_a_body(client):
    assert client("/starlette").post("/echo", content=b"x" * 100_000).content == b"x" * 100_000


@pytest.mark.parametrize("kind", list(SERVERS))
def test_the_lifespan_runs_around_the_requests(kind):
    events: list = []
    server = SERVERS[kind]({"/starlette": asgiapps.make_starlette(events)})
    try:
        assert events == ["startup"]
        with httpx.Client(base_url=server.urls["/starlette"], timeout=WAIT) as c:
            assert c.get("/state").status_code == 200
    finally:
        server.stop()
    assert events == ["startup", "shutdown"]


# -- Django ---------------------------------------------------------------------------------------

def test_django_sees_its_script_name_from_the_root_path(client):
    assert client("/django").get("/async/where", params={"q": "1"}).json() == {
        "path": "/django/async/where", "script_name": "/django", "path_info": "/async/where",
        "query": "1"}


@pytest.mark.parametrize("view", ["/async/body", "/body"])     # an async view, a plain one
def test_django_views_read_bodies(client, view):
    body = os.urandom(2**20)
    assert client("/django").post(view, content=body).json() == {
        "size": len(body), "sha256": hashlib.sha256(body).hexdigest()}


def test_django_streams_from_an_async_iterator(client):
    r = client("/django").get("/async/stream")
    assert r.text == "piece 0\npiece 1\npiece 2\n"


def test_django_large_response(client):
    r = client("/django").get("/big")
    assert r.status_code == 200 and r.content == b"d" * (5 * 2**20)


# -- the two servers side by side -----------------------------------------------------------------

CASES = [
    ("/fastapi", "POST", "/items", {"json": {"name": "a", "price": 1.5}}),
    ("/fastapi", "POST", "/items", {"content": b"not json",
                                    "headers": {"content-type": "application/json"}}),
    ("/fastapi", "GET", "/items/3?q=%C3%A9&limit=2", {}),
    ("/fastapi", "GET", "/items/three", {}),
    ("/fastapi", "GET", "/me", {"headers": {"x-token": "user-bo"}}),
    ("/fastapi", "GET", "/stream?count=2", {}),
    ("/fastapi", "GET", "/missing", {}),
    ("/fastapi", "GET", "/sync", {}),
    ("/fastapi", "DELETE", "/items/3", {}),
    ("/fastapi", "HEAD", "/items/3", {}),
    ("/starlette", "GET", "/where", {}),
    ("/starlette", "GET", "/state", {}),
    ("/starlette", "GET", "/origin", {}),
    ("/starlette", "GET", "/origin",           # behind a proxy on the same machine
     {"headers": {"x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.7"}}),
    ("/django", "GET", "/async/where?q=x", {}),
    ("/django", "GET", "/async/missing", {}),
    ("/django", "GET", "/async/stream", {}),
]


def answer(url: str, method: str, path: str, kwargs: dict) -> tuple:
    r = httpx.request(method, url + path, timeout=WAIT, **kwargs)
    body = r.content
    if r.headers.get("content-type", "").startswith("application/json") and body:
        body = json.loads(body)
    return r.status_code, r.headers.get("content-type"), r.headers.get("content-length"), body


@pytest.mark.parametrize("prefix, method, path, kwargs", CASES)
def test_haboob_and_uvicorn_answer_alike(both, prefix, method, path, kwargs):
    haboob, uvi = (both[name].urls[prefix] for name in SERVERS)
    assert answer(haboob, method, path, kwargs) == answer(uvi, method, path, kwargs)
