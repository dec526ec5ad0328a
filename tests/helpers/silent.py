"""A server whose path /silent goes to a stage that never answers: the 500 the server answers
for it shows that a response-timeout check has run past the deadline of any request sent
before it, without a test sleeping through the timeout."""

from __future__ import annotations

from typing import Any

import seda
from seda.http import Limits, serve

from tests.helpers.net import raw


class _Silent(seda.EventHandler):
    def handle_event(self, req: Any) -> None:
        pass                                   # never answers


def serve_beside_silent(rt: seda.Runtime, sink: Any, response_timeout: float) -> Any:
    """Serve ``sink`` with ``response_timeout``, /silent to a stage that never answers; the
    address."""
    silent = rt.add_stage("silent", _Silent(), blocking=False).sink

    class ByPath:
        def enqueue(self, req: Any) -> None:
            (silent if req.path == "/silent" else sink).enqueue(req)

    return serve(rt, ("127.0.0.1", 0), ByPath(),
                 limits=Limits(response_timeout=response_timeout)).address


def timed_out_silent(address: Any) -> bool:
    """Whether /silent got the server's 500: a timeout check has run past its deadline."""
    return raw(address, b"GET /silent HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"HTTP/1.1 500")
