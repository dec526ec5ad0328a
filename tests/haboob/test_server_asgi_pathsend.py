"""FastAPI's and Starlette's FileResponse and StaticFiles on Haboob, which offers them the
``http.response.pathsend`` extension: files go out by sendfile, with the same status, fields
and bytes as when Starlette reads them into body messages itself (as it does on uvicorn,
which does not offer the extension). A real client (httpx) against a live server."""

from __future__ import annotations

import hashlib
import os

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles

import seda
from haboob.server import Options, build

from tests.helpers import WAIT

PATHSEND = "http.response.pathsend"
SIZE = 5 * 2**20 + 3                          # a few megabytes, not a multiple of a block


class Recorder:
    """Middleware that keeps the kinds of message each request's application sent, and with
    ``offer=False`` hides the extension, so that Starlette reads the file itself."""

    def __init__(self, app, offer: bool = True) -> None:
        self.app, self.offer = app, offer
        self.sent: dict[str, list[str]] = {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self.offer:
            scope = {**scope, "extensions": {k: v for k, v in scope["extensions"].items()
                                             if k != PATHSEND}}
        kinds = self.sent[scope["path"]] = []

        async def recorded(message):
            kinds.append(message["type"])
            await send(message)

        await self.app(scope, receive, recorded)


def make_app(directory: str) -> FastAPI:
    app = FastAPI()

    @app.api_route("/files/{name}", methods=["GET", "HEAD"])
    async def file(name: str) -> FileResponse:
        return FileResponse(os.path.join(directory, name))

    @app.get("/relative/{name}")
    async def relative(name: str) -> FileResponse:
        return FileResponse(name)               # as Starlette's documentation writes it

    @app.get("/vanished")
    async def vanished() -> FileResponse:
        # stat'ed, then gone before it is sent: Starlette starts the response, then pathsends
        return FileResponse(os.path.join(directory, "gone.bin"),
                            stat_result=os.stat(os.path.join(directory, "big.bin")))

    app.mount("/static", StaticFiles(directory=directory))
    return app


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One Haboob: the application at / with the extension, at /plain without it."""
    directory = tmp_path_factory.mktemp("files")
    data = os.urandom(SIZE)
    (directory / "big.bin").write_bytes(data)
    (directory / "page.html").write_bytes(b"<p>hello</p>")
    offered, hidden = Recorder(make_app(str(directory))), Recorder(make_app(str(directory)),
                                                                    offer=False)
    rt = seda.Runtime()
    listener = build(rt, Options(port=0, apps=[("/", offered), ("/plain", hidden)]))
    rt.start()
    host, port = listener.address[:2]
    with httpx.Client(base_url=f"http://{host}:{port}", timeout=WAIT) as client:
        yield client, offered, data, directory
    rt.stop()


@pytest.mark.parametrize("path", ["/files/big.bin", "/static/big.bin", "/files/page.html"])
def test_a_file_response_goes_by_pathsend_as_starlette_would_send_it(served, path):
    client, offered, data, _ = served
    r = client.get(path)
    assert r.status_code == 200
    assert offered.sent[path] == ["http.response.start", PATHSEND]
    if path.endswith("big.bin"):
        assert int(r.headers["content-length"]) == SIZE
        assert hashlib.sha256(r.content).digest() == hashlib.sha256(data).digest()
    plain = client.get("/plain" + path)         # Starlette reading the file itself
    assert plain.content == r.content
    fields = ("content-type", "content-length", "etag", "last-modified", "accept-ranges")
    assert {f: r.headers.get(f) for f in fields} == {f: plain.headers.get(f) for f in fields}


def test_head_gets_the_fields_and_no_body(served):
    client, _, _, _ = served
    for path in ("/files/big.bin", "/static/big.bin"):
        r = client.head(path)
        assert (r.status_code, r.content, int(r.headers["content-length"])) == (200, b"", SIZE)
    assert client.get("/files/page.html").text == "<p>hello</p>"   # the connection goes on


def test_a_range_is_served_by_starlette_from_the_file(served):
    client, offered, data, _ = served
    r = client.get("/files/big.bin", headers={"Range": "bytes=1000-1999"})
    assert r.status_code == 206 and r.content == data[1000:2000]
    assert PATHSEND not in offered.sent["/files/big.bin"]


def test_a_static_file_not_modified_is_a_304_without_a_body(served):
    client, _, _, _ = served
    etag = client.get("/static/page.html").headers["etag"]
    r = client.get("/static/page.html", headers={"If-None-Match": etag})
    assert (r.status_code, r.content) == (304, b"")


def test_a_missing_file_is_a_500_and_never_a_hang(served):
    client, offered, _, _ = served
    assert client.get("/files/nothing.bin").status_code == 500     # Starlette's stat fails
    assert client.get("/vanished").status_code == 500              # Haboob's open fails
    assert offered.sent["/vanished"] == ["http.response.start", PATHSEND]
    assert client.get("/files/page.html").status_code == 200


def test_a_relative_file_response_is_taken_from_the_working_directory(served, monkeypatch):
    """FileResponse("page.html") works as on uvicorn: the extension's path is relative to
    the working directory, which is the application's own."""
    client, offered, _, directory = served
    monkeypatch.chdir(directory)
    r = client.get("/relative/page.html")
    assert (r.status_code, r.text) == (200, "<p>hello</p>")
    assert offered.sent["/relative/page.html"] == ["http.response.start", PATHSEND]
