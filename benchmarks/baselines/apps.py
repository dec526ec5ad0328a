"""The static-file application the Python reference servers run: ``asgi`` for uvicorn, ``wsgi``
for gunicorn and waitress. Each answers from ``static_http.answer``, so the status, Content-Type,
Content-Length and body are the baselines' own; the servers add their own other headers.

The root is read from the environment variable ``BASELINE_ROOT`` when the module is imported,
because the servers' command lines name an application, not its arguments:

    BASELINE_ROOT=DIR uvicorn benchmarks.baselines.apps:asgi --loop uvloop --http httptools
    BASELINE_ROOT=DIR gunicorn benchmarks.baselines.apps:wsgi
    BASELINE_ROOT=DIR waitress-serve benchmarks.baselines.apps:wsgi

Files are read inline, blocking: on uvicorn's event loop as in SPED, on the worker in the WSGI
servers.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from benchmarks.baselines.static_http import REASONS, answer

ROOT = os.path.abspath(os.environ.get("BASELINE_ROOT", "."))


async def asgi(scope: dict[str, Any], receive: Callable[[], Awaitable[dict[str, Any]]],
               send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
    """HTTP only: run uvicorn with ``--lifespan off``. The query is not needed: files have none."""
    status, ctype, body = answer(scope["method"].encode(), scope["raw_path"], ROOT)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", ctype.encode()),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The request target as sent (not PATH_INFO, which is decoded already): gunicorn gives it
    as RAW_URI, waitress as REQUEST_URI."""
    target = environ.get("RAW_URI") or environ["REQUEST_URI"]
    status, ctype, body = answer(environ["REQUEST_METHOD"].encode(), target.encode("latin-1"),
                                 ROOT)
    start_response(f"{status} {REASONS[status]}",
                   [("Content-Type", ctype), ("Content-Length", str(len(body)))])
    return [body]
