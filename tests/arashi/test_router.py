"""The router: each path to its request type's stage; a refused request is 503 at once."""

from __future__ import annotations

import seda
from arashi.router import ROUTES, Router


class Refusing:
    def enqueue(self, ev):
        raise seda.RejectedError("full")


class Taking:
    def __init__(self):
        self.got = []

    def enqueue(self, ev):
        self.got.append(ev)


class Req:
    def __init__(self, path):
        self.path, self.answer = path, None

    def respond(self, response):
        self.answer = response


def test_routes_by_path_and_refuses_with_503():
    kinds = set(ROUTES.values())
    assert kinds == {"login", "folders", "messages", "show", "search", "act"}
    sinks = {k: Taking() for k in kinds}
    sinks["search"] = Refusing()
    router = Router(sinks)
    for path, kind in (("/login", "login"), ("/folder/3", "messages"),
                       ("/message/4/part/1", "show"), ("/act", "act"), ("/", "folders")):
        req = Req(path)
        router.handle_event(req)
        assert sinks[kind].got[-1] is req and req.answer is None
    busy = Req("/search")
    router.handle_event(busy)
    assert busy.answer.status == 503 and b"Busy" in busy.answer.body
    assert busy.answer.header("retry-after") == "1"
    lost = Req("/etc/passwd")
    router.handle_event(lost)
    assert lost.answer.status == 404
