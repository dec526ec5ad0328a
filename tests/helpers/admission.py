"""Haboob with one application under ``--target-p90``, for tests that set its admission bounds
by hand and watch its decisions."""

from __future__ import annotations

import http.client
import queue
from typing import Any

from haboob.server import Options, build
from seda.control import ResponseTimeBound

from tests.helpers import WAIT


def start(rt: Any, app: Any, **options: Any) -> tuple[Any, ResponseTimeBound, queue.Queue]:
    """Serve ``app`` (``options`` say how: ``threads=1``, ``tasks=1``...); return the address,
    its ResponseTimeBound with the controller stopped (the bounds a test sets stay: nothing is
    measured) and the queue of its admission decisions as they are made, so that a test knows
    a request is queued before it sends the next."""
    address = build(rt, Options(port=0, apps=[("/", app)], target_p90=0.1, **options)).address
    sink = rt.sink("haboob.app0:/")
    predicate, decided = sink.predicate, queue.Queue()
    assert isinstance(predicate, ResponseTimeBound)
    accept = predicate.accept

    def recording(ev: Any) -> bool:
        ok = accept(ev)
        decided.put(ok)
        return ok

    predicate.accept = recording              # type: ignore[method-assign]
    sink.predicate = predicate                # the sink binds accept when it is set
    rt.remove_controller(predicate)
    return address, predicate, decided


def send(address: tuple[str, int], headers: dict[str, str] | None = None) -> Any:
    """A GET of / sent, its answer not yet read."""
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request("GET", "/", headers=headers or {})
    return c
