"""ASGI applications the benchmarks serve (importable by haboob, uvicorn and hypercorn): the
1 KB answer of refbench (../shared/tools/refbench.sh), the same answer with the bytes of any
file, and one that burns CPU as wsgi_apps.burn does. FastAPI's are in fastapi_apps.py, so that
serving these imports none of it."""

from __future__ import annotations

import os
import random
import time
from typing import Any

from benchmarks.wsgi_apps import BURN_S

_rng = random.Random(7)
BODY = bytes(_rng.choice(b"abcdefghij") for _ in range(1024))   # refbench's index.html


def answering(body: bytes) -> Any:
    """refbench's plain ASGI application, answering ``body``: what a server costs per request."""
    headers = [(b"content-type", b"text/html"), (b"content-length", str(len(body)).encode())]

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})
    return app


hello = answering(BODY)


def file_answer() -> Any:
    """A factory (uvicorn --factory): refbench's application answering with the bytes of the
    file named by the environment variable ``BENCH_FILE``, read once, as refbench's uvicorn
    serves its 1 KB file from memory."""
    with open(os.environ["BENCH_FILE"], "rb") as f:
        return answering(f.read())


async def burn(scope, receive, send):
    """Spends 5 ms of CPU per request, on the event loop: one core's worth of capacity."""
    if scope["type"] != "http":
        return
    end = time.thread_time() + BURN_S
    while time.thread_time() < end:
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})
