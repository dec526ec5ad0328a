"""Haboob with one application under ``--target-p90``, for tests that set its admission bounds
by hand and watch its decisions."""

from __future__ import annotations

import http.client
import queue
from typing import Any

import seda
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


# The two scenarios below run for a WSGI application (threads=1) and an ASGI one (tasks=1).
# ``blocked`` is (app, entered, release): an application on one thread (or task) holding each
# request until ``release`` is set, ``entered`` released as each one arrives. ``bound``: the
# queue length at which a request is refused with one in service and one queued (1 for a
# pool, whose queue leaves out the one in service; 2 for an asyncio stage, whose counts it).

def refuses_over_the_bound_at_once(blocked: tuple[Any, Any, Any], bound: float,
                                   **options: Any) -> None:
    app, entered, release = blocked
    with seda.Runtime() as rt:
        address, predicate, decided = start(rt, app, **options)
        for k in predicate.classes.values():
            k.bound = bound                               # as after a spike: admit one queued
        busy = send(address)
        assert entered.acquire(timeout=WAIT)              # the one thread or task is taken
        queued = send(address)
        assert decided.get(timeout=WAIT) and decided.get(timeout=WAIT)   # admitted, waiting
        refused = send(address).getresponse()             # over the bound: answered now
        assert refused.status == 503 and refused.getheader("retry-after") == "1"
        release.set()
        assert busy.getresponse().read() == queued.getresponse().read() == b"done"
        assert predicate.rejected == 1


def admits_a_higher_class_where_a_lower_is_refused(blocked: tuple[Any, Any, Any], bound: float,
                                                   **options: Any) -> None:
    app, entered, release = blocked
    with seda.Runtime() as rt:
        address, predicate, decided = start(rt, app, class_header="X-Class", **options)
        for c, k in predicate.classes.items():
            k.bound = 10.0 if c == 9 else bound
        busy = send(address)
        assert entered.acquire(timeout=WAIT)
        queued = send(address)
        assert decided.get(timeout=WAIT) and decided.get(timeout=WAIT)
        assert send(address).getresponse().status == 503               # class 0
        high = send(address, {"X-Class": "9"})                         # admitted
        release.set()
        assert high.getresponse().status == 200
        for c in (busy, queued):
            assert c.getresponse().status == 200
