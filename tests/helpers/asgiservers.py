"""Haboob and uvicorn side by side for the ASGI tests: the same applications on each, in this
process, on free loopback ports, with ``urls[prefix]`` the base URL of each application."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import uvicorn
from websockets.exceptions import ConnectionClosed

import seda
from haboob.server import Options, build

from tests.helpers import WAIT
from tests.helpers.net import until


def _base(prefix: str) -> str:
    return prefix.rstrip("/")              # "/" -> "": paths are then appended whole


class Haboob:
    """The applications mounted in one Haboob, each at its prefix (``{"/": app}`` for one
    served as ``haboob module:app`` serves it)."""

    def __init__(self, apps: dict) -> None:
        self.rt = seda.Runtime()
        listener = build(self.rt, Options(port=0, apps=list(apps.items())))
        self.rt.start()
        host, port = listener.address[:2]
        self.urls = {prefix: f"http://{host}:{port}{_base(prefix)}" for prefix in apps}

    def stop(self) -> None:
        self.rt.stop()


class Uvicorn:
    """Each application on a uvicorn of its own, in a thread, with its prefix as root_path
    (so that it sees the scope Haboob gives it)."""

    def __init__(self, apps: dict) -> None:
        self.servers, self.threads, self.urls = [], [], {}
        for prefix, app in apps.items():
            server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0,
                                                   root_path=_base(prefix),
                                                   log_level="warning"))
            thread = threading.Thread(target=server.run, name=f"uvicorn{prefix}", daemon=True)
            thread.start()
            until(lambda server=server: server.started, bool)
            port = server.servers[0].sockets[0].getsockname()[1]
            self.servers.append(server)
            self.threads.append(thread)
            self.urls[prefix] = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        for server in self.servers:
            server.should_exit = True
        for thread in self.threads:
            thread.join(WAIT)


SERVERS = {"haboob": Haboob, "uvicorn": Uvicorn}


def echo_then_bye(ws: Any) -> tuple[int | None, str | None]:
    """The echo applications' exchange over a websockets client connection: a text and a
    binary message echoed, then "bye", which the application answers by closing; the close
    code and reason it gave."""
    ws.send("hello")
    assert ws.recv(WAIT) == "echo: hello"
    ws.send(b"ab")
    assert ws.recv(WAIT) == b"abab"
    ws.send("bye")
    with pytest.raises(ConnectionClosed):
        ws.recv(WAIT)
    return ws.close_code, ws.close_reason
