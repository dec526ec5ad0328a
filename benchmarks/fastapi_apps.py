"""FastAPI applications the benchmarks serve: refbench's 1 KB answer through the framework."""

from __future__ import annotations

from fastapi import FastAPI, Response

from benchmarks.asgi_apps import BODY

hello = FastAPI()


@hello.get("/")
async def index() -> Response:
    return Response(BODY, media_type="text/html")
