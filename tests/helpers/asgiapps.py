"""Small FastAPI and Starlette applications doing what real ones do (JSON bodies, parameters,
a dependency, streams, a background task, a WebSocket, a lifespan), and Django's ASGI handler on the
project of realapps.py, for Haboob's end-to-end tests against uvicorn. Each is made by a
function, so that each server gets an instance of its own; each endpoint answers with what it
saw."""

from __future__ import annotations

import asyncio
import hashlib
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import (
    BackgroundTasks,
    Depends,
    FastAPI,
    Header,
    HTTPException,
    Request,
    WebSocket,
    WebSocketDisconnect,
    WebSocketException,
)
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from tests.helpers import realapps

# -- FastAPI --------------------------------------------------------------------------------------


class Item(BaseModel):
    name: str
    price: float
    tags: list[str] = []


def user(x_token: Annotated[str, Header()]) -> str:
    """A dependency: the caller, from its token; 401 without a good one."""
    if not x_token.startswith("user-"):
        raise HTTPException(status_code=401, detail="bad token")
    return x_token.removeprefix("user-")


def make_fastapi() -> FastAPI:
    app = FastAPI()
    app.state.notes = []                       # what background tasks wrote, in order

    @app.post("/items")
    async def create(item: Item) -> dict:
        return {"name": item.name, "with_tax": round(item.price * 1.2, 2), "tags": item.tags}

    @app.get("/items/{item_id}")
    async def read(item_id: int, q: str | None = None, limit: int = 10) -> dict:
        return {"item_id": item_id, "q": q, "limit": limit}

    @app.get("/me")
    async def me(name: Annotated[str, Depends(user)]) -> dict:
        return {"user": name}

    @app.get("/stream")
    async def stream(count: int = 3) -> StreamingResponse:
        async def lines():
            for i in range(count):
                await asyncio.sleep(0)         # each piece a step of its own
                yield f"line {i}\n"
        return StreamingResponse(lines(), media_type="text/plain")

    @app.post("/notify")
    async def notify(message: str, tasks: BackgroundTasks) -> dict:
        tasks.add_task(app.state.notes.append, message)     # after the response has gone
        return {"queued": message}

    @app.get("/notes")
    async def notes() -> list:
        return app.state.notes

    @app.post("/upload")
    async def upload(request: Request) -> dict:
        h, size = hashlib.sha256(), 0
        async for piece in request.stream():
            h.update(piece)
            size += len(piece)
        return {"size": size, "sha256": h.hexdigest()}

    @app.websocket("/ws")
    async def chat(websocket: WebSocket, token: str | None = None) -> None:
        if token != "secret":
            raise WebSocketException(code=1008)        # refused before the handshake
        await websocket.accept()
        try:
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    return
                if message.get("text") == "bye":
                    await websocket.close(code=4000, reason="see you")
                    return
                if message.get("text") is not None:
                    await websocket.send_text("echo: " + message["text"])
                else:
                    await websocket.send_bytes(message["bytes"] * 2)
        except WebSocketDisconnect:
            return

    @app.get("/sync")
    def blocking() -> dict:                    # a plain def: FastAPI runs it on a thread
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return {"off_the_loop": True}
        return {"off_the_loop": False}

    return app


# -- Starlette with a lifespan --------------------------------------------------------------------

def make_starlette(events: list) -> Starlette:
    """``events`` records the lifespan's startup and shutdown."""
    @asynccontextmanager
    async def lifespan(app):
        events.append("startup")
        yield {"greeting": "hello", "pool": "open"}
        events.append("shutdown")

    async def state(request):
        return JSONResponse({"greeting": request.state.greeting, "pool": request.state.pool})

    async def where(request):
        return JSONResponse({"url": request.url_for("state").path,
                             "root_path": request.scope["root_path"],
                             "path": request.url.path})

    async def echo(request):
        return PlainTextResponse(await request.body())

    async def origin(request):                 # (what a proxy in front may change)
        return JSONResponse({"scheme": request.url_for("state").scheme,
                             "client": request.client.host})

    return Starlette(lifespan=lifespan, routes=[
        Route("/state", state, name="state"), Route("/where", where),
        Route("/echo", echo, methods=["POST"]), Route("/origin", origin)])


# -- Django ---------------------------------------------------------------------------------------

def make_django():
    return realapps.django_asgi()
