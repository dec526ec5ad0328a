"""The ASGI lifespan protocol: startup and shutdown, their failures with the application's
message, applications without a lifespan, and the state requests see."""

from __future__ import annotations

import asyncio
import http.client
import logging

import pytest

from seda.http import LifespanFailed, mount_asgi, serve
from seda.http.lifespan import Lifespan

from tests.helpers import WAIT


def lifespan_app(events, fail_startup=None, fail_shutdown=None):
    """An application whose lifespan records what happens and fails if told to."""
    async def app(scope, receive, send):
        if scope["type"] == "http":
            body = repr(sorted(scope["state"].items())).encode()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": body})
            return
        assert (await receive())["type"] == "lifespan.startup"
        if fail_startup:
            await send({"type": "lifespan.startup.failed", "message": fail_startup})
            return
        scope["state"]["pool"] = "open"
        events.append("started")
        await send({"type": "lifespan.startup.complete"})
        assert (await receive())["type"] == "lifespan.shutdown"
        events.append("stopped")
        if fail_shutdown:
            await send({"type": "lifespan.shutdown.failed", "message": fail_shutdown})
        else:
            await send({"type": "lifespan.shutdown.complete"})
    return app


async def cycle(lifespan: Lifespan) -> dict:
    await lifespan.startup()
    state = dict(lifespan.state)
    await lifespan.shutdown()
    return state


def test_startup_and_shutdown_run_and_the_state_is_kept():
    events: list = []
    lifespan = Lifespan(lifespan_app(events))
    assert asyncio.run(cycle(lifespan)) == {"pool": "open"}
    assert events == ["started", "stopped"]


def test_a_failed_startup_raises_with_the_applications_message():
    with pytest.raises(LifespanFailed, match="cannot reach the database"):
        asyncio.run(cycle(Lifespan(lifespan_app([], fail_startup="cannot reach the database"))))


def test_a_failed_shutdown_is_logged_with_its_message(caplog):
    events: list = []
    with caplog.at_level(logging.ERROR, logger="seda.asgi"):
        asyncio.run(cycle(Lifespan(lifespan_app(events, fail_shutdown="pool leaked"))))
    assert events == ["started", "stopped"] and "pool leaked" in caplog.text


async def http_only(scope, receive, send):
    """As Django's handler: anything but HTTP is an error."""
    if scope["type"] != "http":
        raise ValueError(f"cannot handle {scope['type']}")


def test_auto_serves_an_application_without_a_lifespan_and_on_does_not(caplog):
    with caplog.at_level(logging.INFO, logger="seda.asgi"):
        asyncio.run(cycle(Lifespan(http_only, "auto")))
    assert "does not support the lifespan protocol" in caplog.text
    with pytest.raises(LifespanFailed):
        asyncio.run(cycle(Lifespan(http_only, "on")))


def test_off_never_calls_the_application():
    asyncio.run(cycle(Lifespan(http_only, "off")))   # (it would raise, and be reported)
    with pytest.raises(ValueError, match="lifespan mode"):
        Lifespan(http_only, "sometimes")


def test_requests_see_a_copy_of_the_state_and_shutdown_follows_the_last(rt):
    events: list = []
    sink = mount_asgi(rt, lifespan_app(events), tasks=4)
    address = serve(rt, ("127.0.0.1", 0), sink).address
    rt.start()
    assert events == ["started"]                   # before the first request
    c = http.client.HTTPConnection(*address, timeout=WAIT)
    c.request("GET", "/")
    assert c.getresponse().read() == b"[('pool', 'open')]"
    c.close()
    rt.stop()
    assert events == ["started", "stopped"]


def test_a_failed_startup_stops_the_runtime_from_starting(rt):
    mount_asgi(rt, lifespan_app([], fail_startup="no config"), tasks=4)
    with pytest.raises(RuntimeError) as info:
        rt.start()
    assert isinstance(info.value.__cause__, LifespanFailed)
    assert str(info.value.__cause__) == "no config"
