"""The same small application in Quart, Litestar and BlackSheep, for Haboob's tests against
uvicorn: each does what real applications do, with the same routes, so that one table of
requests (and one WebSocket conversation) runs against all three.

- ``POST /json``: a JSON body, answered with what was computed from it
- ``POST /upload``: a body read as a stream, answered with its size and SHA-256
- ``GET /items/<int>?q=..&limit=..``: path and query parameters
- ``GET /stream?count=N``: a streamed response, a line per piece
- ``GET /cookie`` sets two cookies; ``GET /whoami`` reads them back
- ``GET /redirect``: 302 to ``/items/1?q=moved``
- ``GET /boom``: the handler raises (the framework answers 500)
- ``GET /state``: what the lifespan's startup left
- ``GET /forever``: a stream that never ends, until the client goes (``events`` says when)
- ``GET /half``: a stream whose handler raises after two pieces
- ``WS /ws``: echoes ``echo: TEXT`` and binary doubled; ``bye`` closes with 4001 "see you";
  the client's close code goes to ``events`` (not in Quart, which does not show it)
- ``WS /ws-refuse``: refused before the handshake; ``WS /ws-fail``: raises once accepted

Each is made by a function, so that each server gets an instance of its own; ``events``
records the lifespan's startup and shutdown.
"""

# no "from __future__ import annotations": Litestar reads the handlers' annotations, which
# name classes imported inside make_litestar
import asyncio
import hashlib
import warnings
from typing import Any

STREAM_PIECES = 3
TICK = 0.005                  # seconds between the pieces of /forever


async def forever(events: list):
    """Pieces until the client goes: then the framework stops the generator."""
    try:
        while True:
            yield b"tick\n"
            await asyncio.sleep(TICK)
    finally:
        events.append("forever stopped")


async def half():
    yield b"one\n"
    yield b"two\n"
    raise RuntimeError("the stream failed")


def lines(count: int) -> list[bytes]:
    return [f"line {i}\n".encode() for i in range(count)]


def computed(data: dict) -> dict:
    return {"name": data["name"], "double": data["n"] * 2, "tags": sorted(data.get("tags", []))}


class Digest:
    """The size and SHA-256 of a body read piece by piece; ``pieces`` shows it streamed."""

    def __init__(self) -> None:
        self.sha, self.size, self.pieces = hashlib.sha256(), 0, 0

    def update(self, piece: bytes) -> None:
        self.sha.update(piece)
        self.size += len(piece)
        self.pieces += bool(piece)

    def answer(self) -> dict:
        return {"size": self.size, "sha256": self.sha.hexdigest(), "streamed": self.pieces > 1}


# -- Quart -----------------------------------------------------------------------------------------

def make_quart(events: list) -> Any:
    from quart import Quart, abort, make_response, redirect, request, websocket

    app = Quart("quart_app")

    @app.before_serving
    async def startup() -> None:
        events.append("startup")
        app.config["GREETING"] = "hello"

    @app.after_serving
    async def shutdown() -> None:
        events.append("shutdown")

    @app.post("/json")
    async def json_body() -> Any:
        return computed(await request.get_json())

    @app.post("/upload")
    async def upload() -> Any:
        digest = Digest()
        async for piece in request.body:
            digest.update(piece)
        return digest.answer()

    @app.get("/items/<int:item_id>")
    async def item(item_id: int) -> Any:
        return {"item_id": item_id, "q": request.args.get("q"),
                "limit": request.args.get("limit", 10, type=int)}

    @app.get("/stream")
    async def stream() -> Any:
        count = request.args.get("count", STREAM_PIECES, type=int)

        async def pieces():
            for piece in lines(count):
                yield piece
        return pieces(), 200, {"content-type": "text/plain; charset=utf-8"}

    @app.get("/cookie")
    async def cookie() -> Any:
        response = await make_response({"set": ["a", "b"]})
        response.set_cookie("a", "1")
        response.set_cookie("b", "two words", httponly=True, path="/")
        return response

    @app.get("/whoami")
    async def whoami() -> Any:
        return {"a": request.cookies.get("a"), "b": request.cookies.get("b")}

    @app.get("/redirect")
    async def moved() -> Any:
        return redirect("/items/1?q=moved")

    @app.get("/boom")
    async def boom() -> Any:
        raise RuntimeError("the handler failed")

    @app.get("/state")
    async def state() -> Any:
        return {"greeting": app.config["GREETING"]}

    @app.get("/forever")
    async def endless() -> Any:
        return forever(events), 200, {"content-type": "text/plain"}

    @app.get("/half")
    async def broken() -> Any:
        return half(), 200, {"content-type": "text/plain"}

    @app.websocket("/ws")
    async def echo() -> None:
        while True:                        # Quart accepts on the first receive
            data = await websocket.receive()
            if data == "bye":
                await websocket.close(4001, "see you")
                return
            await websocket.send("echo: " + data if isinstance(data, str) else data * 2)

    @app.websocket("/ws-refuse")
    async def refuse() -> None:
        abort(403)                         # before accepting: an HTTP answer

    @app.websocket("/ws-fail")
    async def fail() -> None:
        await websocket.accept()
        raise RuntimeError("the WebSocket handler failed")

    return app


# -- Litestar --------------------------------------------------------------------------------------

def make_litestar(events: list) -> Any:
    from litestar import Litestar, Request, Response, WebSocket, get, post, websocket
    from litestar.datastructures import Cookie
    from litestar.response import Redirect, Stream

    def startup(app: Litestar) -> None:
        events.append("startup")
        app.state.greeting = "hello"

    def shutdown(app: Litestar) -> None:
        events.append("shutdown")

    @post("/json")
    async def json_body(data: dict[str, Any]) -> dict:
        return computed(data)

    @post("/upload", status_code=200)
    async def upload(request: Request) -> dict:
        digest = Digest()
        async for piece in request.stream():
            digest.update(piece)
        return digest.answer()

    @get("/items/{item_id:int}")
    async def item(item_id: int, q: str | None = None, limit: int = 10) -> dict:
        return {"item_id": item_id, "q": q, "limit": limit}

    @get("/stream")
    async def stream(count: int = STREAM_PIECES) -> Stream:
        async def pieces():
            for piece in lines(count):
                yield piece
        return Stream(pieces(), media_type="text/plain")

    @get("/cookie")
    async def cookie() -> Response:
        return Response({"set": ["a", "b"]}, cookies=[
            Cookie(key="a", value="1"), Cookie(key="b", value="two words", httponly=True)])

    @get("/whoami")
    async def whoami(request: Request) -> dict:
        return {"a": request.cookies.get("a"), "b": request.cookies.get("b")}

    @get("/redirect", status_code=302)
    async def moved() -> Redirect:
        return Redirect("/items/1?q=moved", status_code=302)

    @get("/boom")
    async def boom() -> dict:
        raise RuntimeError("the handler failed")

    @get("/state")
    async def state(request: Request) -> dict:
        return {"greeting": request.app.state.greeting}

    @get("/forever")
    async def endless() -> Stream:
        return Stream(forever(events), media_type="text/plain")

    @get("/half")
    async def broken() -> Stream:
        return Stream(half(), media_type="text/plain")

    @websocket("/ws")
    async def echo(socket: WebSocket) -> None:
        await socket.accept()
        while True:
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                events.append(("ws closed", message["code"]))
                return
            text = message.get("text")
            if text == "bye":
                await socket.close(code=4001, reason="see you")
                return
            if text is not None:
                await socket.send_text("echo: " + text)
            else:
                await socket.send_bytes(message["bytes"] * 2)

    @websocket("/ws-refuse")
    async def refuse(socket: WebSocket) -> None:
        await socket.close(code=1008)      # before accepting: refused

    @websocket("/ws-fail")
    async def fail(socket: WebSocket) -> None:
        await socket.accept()
        raise RuntimeError("the WebSocket handler failed")

    with warnings.catch_warnings():
        # parameters and data inferred from plain annotations, as most Litestar applications
        # are written: newer versions warn, and name markers that older ones do not have
        warnings.simplefilter("ignore", DeprecationWarning)
        return Litestar(route_handlers=[json_body, upload, item, stream, cookie, whoami, moved,
                                        boom, state, endless, broken, echo, refuse, fail],
                        on_startup=[startup], on_shutdown=[shutdown],
                        request_max_body_size=64 * 2**20, logging_config=None)


# -- BlackSheep ------------------------------------------------------------------------------------

def make_blacksheep(events: list) -> Any:
    from blacksheep import (
        Application,
        Request,
        Response,
        StreamedContent,
        WebSocket,
        json,
        redirect,
    )
    from blacksheep.cookies import Cookie
    from blacksheep.server.routing import Router
    from blacksheep.server.websocket import WebSocketDisconnectError

    app = Application(router=Router())     # (the default router is shared by every application)
    get, post = app.router.get, app.router.post

    async def startup(application: Application) -> None:
        events.append("startup")
        application.greeting = "hello"         # type: ignore[attr-defined]

    async def shutdown(application: Application) -> None:
        events.append("shutdown")

    app.on_start += startup
    app.on_stop += shutdown

    def query(request: Request, name: str) -> str | None:
        values = request.query.get(name)
        return values[0] if values else None

    @post("/json")
    async def json_body(request: Request) -> Response:
        return json(computed(await request.json()))

    @post("/upload")
    async def upload(request: Request) -> Response:
        digest = Digest()
        async for piece in request.stream():
            digest.update(piece)
        return json(digest.answer())

    @get("/items/{int:item_id}")
    async def item(request: Request, item_id: int) -> Response:
        return json({"item_id": item_id, "q": query(request, "q"),
                     "limit": int(query(request, "limit") or 10)})

    @get("/stream")
    async def stream(request: Request) -> Response:
        count = int(query(request, "count") or STREAM_PIECES)

        async def pieces():
            for piece in lines(count):
                yield piece
        return Response(200, content=StreamedContent(b"text/plain; charset=utf-8", pieces))

    @get("/cookie")
    async def cookie() -> Response:
        response = json({"set": ["a", "b"]})
        response.set_cookie(Cookie("a", "1"))
        response.set_cookie(Cookie("b", "two words", http_only=True))
        return response

    @get("/whoami")
    async def whoami(request: Request) -> Response:
        return json({"a": request.cookies.get("a"), "b": request.cookies.get("b")})

    @get("/redirect")
    async def moved() -> Response:
        return redirect("/items/1?q=moved")

    @get("/boom")
    async def boom() -> Response:
        raise RuntimeError("the handler failed")

    @get("/state")
    async def state() -> Response:
        return json({"greeting": app.greeting})    # type: ignore[attr-defined]

    @get("/forever")
    async def endless() -> Response:
        async def ticks():                 # (BlackSheep wants an async generator function)
            async for piece in forever(events):
                yield piece
        return Response(200, content=StreamedContent(b"text/plain", ticks))

    @get("/half")
    async def broken() -> Response:
        return Response(200, content=StreamedContent(b"text/plain", half))

    @app.router.ws("/ws")
    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        try:
            while True:
                message = await websocket.receive()
                text = message.get("text")
                if text == "bye":
                    await websocket.close(4001, "see you")
                    return
                if text is not None:
                    await websocket.send_text("echo: " + text)
                else:
                    await websocket.send_bytes(message["bytes"] * 2)
        except WebSocketDisconnectError as exc:
            events.append(("ws closed", exc.code))

    @app.router.ws("/ws-refuse")
    async def refuse(websocket: WebSocket) -> None:
        await websocket.close(1008)        # before accepting: refused

    @app.router.ws("/ws-fail")
    async def fail(websocket: WebSocket) -> None:
        await websocket.accept()
        raise RuntimeError("the WebSocket handler failed")

    return app


FRAMEWORKS = {"quart": make_quart, "litestar": make_litestar, "blacksheep": make_blacksheep}


# -- Django Channels: WebSocket consumers beside Django's HTTP -------------------------------------

def make_channels(events: list) -> Any:
    """Django's ASGI handler for HTTP (realapps.py's project) and, at ``/ws`` and
    ``/ws-async``, the echo of ``/ws`` above as a plain consumer (its methods on threads, as
    most Channels applications are written) and as an async one; ``?refuse`` closes before
    accepting. The close code the client sends goes to ``events``."""
    from channels.generic.websocket import AsyncWebsocketConsumer, WebsocketConsumer
    from channels.routing import ProtocolTypeRouter, URLRouter
    from django.urls import path

    from tests.helpers import realapps

    class Echo(WebsocketConsumer):
        def connect(self) -> None:
            if self.scope["query_string"] == b"refuse":
                self.close()                   # before accepting: refused
            else:
                self.accept()

        def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
            if text_data == "bye":
                self.close(code=4001, reason="see you")
            elif text_data is not None:
                self.send(text_data="echo: " + text_data)
            else:
                self.send(bytes_data=bytes_data * 2)

        def disconnect(self, code: int) -> None:
            events.append(("ws closed", code))

    class AsyncEcho(AsyncWebsocketConsumer):
        async def connect(self) -> None:
            if self.scope["query_string"] == b"refuse":
                await self.close()
            else:
                await self.accept()

        async def receive(self, text_data: str | None = None,
                          bytes_data: bytes | None = None) -> None:
            if text_data == "bye":
                await self.close(code=4001, reason="see you")
            elif text_data is not None:
                await self.send(text_data="echo: " + text_data)
            else:
                await self.send(bytes_data=bytes_data * 2)

        async def disconnect(self, code: int) -> None:
            events.append(("ws closed", code))

    return ProtocolTypeRouter({
        "http": realapps.django_asgi(),
        "websocket": URLRouter([path("ws", Echo.as_asgi()),
                                path("ws-async", AsyncEcho.as_asgi())])})
