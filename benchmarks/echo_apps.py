"""Echo applications for the conformance table (benchmarks/conformance.py): ``wsgi`` for Haboob,
gunicorn and waitress, ``asgi`` for uvicorn. Each reads the whole body and answers 200 with what
the application saw, one ``name: value`` line each, so the table can tell what reached it:

    method: POST
    path: /x
    query: a=1
    version: HTTP/1.1
    body: 5 b'hello'
    header HTTP_HOST: x          (WSGI: the environ's HTTP_* keys; ASGI: the raw names)

A query ``sleep=S`` makes the answer wait S seconds first (answers out of order, to be put back
in order by the server).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import parse_qs


def _sleep(query: str) -> float:
    try:
        return min(float(parse_qs(query).get("sleep", ["0"])[0]), 5.0)
    except ValueError:
        return 0.0


def _answer(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("latin-1", "backslashreplace")


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    body = environ["wsgi.input"].read()
    time.sleep(_sleep(environ.get("QUERY_STRING", "")))
    lines = [f"method: {environ['REQUEST_METHOD']}", f"path: {environ.get('PATH_INFO', '')}",
             f"query: {environ.get('QUERY_STRING', '')}",
             f"version: {environ.get('SERVER_PROTOCOL', '')}",
             f"body: {len(body)} {body[:40]!r}"]
    for key in sorted(environ):
        if key.startswith("HTTP_") or key in ("CONTENT_LENGTH", "CONTENT_TYPE"):
            lines.append(f"header {key}: {environ[key]}")
    answer = _answer(lines)
    start_response("200 OK", [("Content-Type", "text/plain"),
                              ("Content-Length", str(len(answer)))])
    return [answer]


async def asgi(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
               send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    """HTTP only: run uvicorn with ``--lifespan off``."""
    body = b""
    while True:
        message = await receive()
        if message["type"] != "http.request":     # http.disconnect: nobody to answer
            return
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await asyncio.sleep(_sleep(scope["query_string"].decode("latin-1")))
    lines = [f"method: {scope['method']}", f"path: {scope['path']}",
             f"query: {scope['query_string'].decode('latin-1')}",
             f"version: HTTP/{scope['http_version']}",
             f"body: {len(body)} {body[:40]!r}"]
    for name, value in scope["headers"]:
        lines.append(f"header {name.decode('latin-1')}: {value.decode('latin-1')}")
    answer = _answer(lines)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"),
                            (b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer})
