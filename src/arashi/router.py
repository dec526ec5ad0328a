"""The web side's stage graph (thesis Fig. 43): seda.http's server stage parses requests, the
router (on the loop thread) sends each to the stage of its request type by the first segment
of its path, and each request type runs on its own thread pool, sized by a
``ThreadPoolController`` and, with a target p90, guarded by the response-time admission
controller (``ResponseTimeBound``, what Haboob's ``--target-p90`` uses). A request its stage
refuses is answered 503 at once by the router, with a short page. Requests for ``/_seda/``
go to the runtime's status page (``seda.status``: stages, queues, controllers, the router's
counters, and Prometheus metrics at ``/_seda/metrics``).

    seda.http -> arashi.http -> arashi.login | arashi.logout | arashi.folders
                                | arashi.messages | arashi.show | arashi.search
                                | arashi.act                                  (thread pools)
"""

from __future__ import annotations

from typing import Any

import seda
from seda.control import ThreadPoolController
from seda.http import Response, mount, serve
from seda.status import PREFIX, add_status

from .degrade import degrade as degrade_pages
from .overload import admission, front_door
from .web import CSP, REQUEST_TYPES, SECURITY_HEADERS, STYLE, STYLE_URL, Web

ROUTER = "arashi.http"
SERVICE = "arashi"      # names the status page and prefixes its metrics (arashi_http_...)
HTTP = "http"           # seda.http's server stage, whose requests the status page counts
# the first segment of a path -> its request type
ROUTES = {"login": "login", "logout": "logout", "": "folders", "folders": "folders",
          "folder": "messages", "message": "show", "search": "search", "act": "act"}
_BUSY = (b"<!doctype html><html><head><meta charset=utf-8><title>Busy</title></head><body>"
         b"<h1>Busy</h1><p>Arashi has more to do than it can do quickly right now. Please try "
         b"again in a moment.</p></body></html>")
_MISSING = (b"<!doctype html><html><head><meta charset=utf-8><title>Not found</title></head>"
            b"<body><h1>Not found</h1><p><a href=\"/folders\">Your folders</a></p></body></html>")
_HTML = "text/html; charset=utf-8"
# pages name the stylesheet by its digest (web.STYLE_URL): under that address it never changes
STYLE_CACHE = "max-age=31536000, immutable"
STYLE_QUERY = STYLE_URL.partition("?")[2]
# the icon every browser asks for at /favicon.ico (else a 404 in each new visitor's console)
_ICON = (b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
         b'<rect width="16" height="16" rx="3" fill="#234"/><path d="M4 13 8 3l4 10M5.6 9h4.8" '
         b'stroke="#fff" stroke-width="1.6" fill="none"/></svg>')


def stage_name(kind: str) -> str:
    return f"arashi.{kind}"


def kind_of(path: str) -> str | None:
    """The request type of ``path``, None if it has none (404)."""
    return ROUTES.get(path[1:].partition("/")[0]) if path.startswith("/") else None


class Router(seda.EventHandler):
    """Sends each request to its request type's stage; 503 when that stage refuses it."""

    def __init__(self, sinks: dict[str, Any], status: Any = None) -> None:
        self.sinks, self.status = sinks, status     # status: the /_seda/ page's sink, or None
        self.headers = [h for h in SECURITY_HEADERS if h[0] != "Cache-Control"]
        self.routed = dict.fromkeys(sinks, 0)        # counted on the loop thread only
        self.busy = dict.fromkeys(sinks, 0)
        self.missing = 0

    def stats(self) -> dict[str, Any]:
        """Requests sent to each request type's stage, refused by it (503), and not found."""
        return {"routed": dict(self.routed), "busy": dict(self.busy), "not_found": self.missing}

    def handle_event(self, req: Any) -> None:
        path = req.path
        if self.status is not None and (path == PREFIX[:-1] or path.startswith(PREFIX)):
            try:
                self.status.enqueue(req)
            except seda.SinkError:
                req.respond(Response(503, _BUSY, [*self.headers, ("Retry-After", "1")], _HTML))
            return
        if path == "/style.css":
            # kept for ever only under this version's address: a page of another version (a
            # node not yet upgraded) must not have it keep this one under its address
            cache = STYLE_CACHE if req.query == STYLE_QUERY else "no-cache"
            req.respond(Response(200, STYLE, [("Content-Security-Policy", CSP),
                                              ("Cache-Control", cache)],
                                 "text/css; charset=utf-8"))
            return
        if path == "/favicon.ico":
            req.respond(Response(200, _ICON, [("Content-Security-Policy", CSP),
                                              ("Cache-Control", "max-age=86400")],
                                 "image/svg+xml"))
            return
        kind = kind_of(path)
        if kind is None:
            self.missing += 1
            req.respond(Response(404, _MISSING, self.headers, _HTML))
            return
        try:
            self.sinks[kind].enqueue(req)
            self.routed[kind] += 1
        except seda.SinkError:
            self.busy[kind] += 1
            req.respond(Response(503, _BUSY, [*self.headers, ("Retry-After", "1")], _HTML))


def build_web(rt: seda.Runtime, web: Web, bind: tuple[str, int], *, threads: int = 8,
              target_p90: float | None = None, class_cookie: str | None = None,
              policy: str = "bound", front: bool = False, degrade: bool = False,
              sock: Any = None, status: bool = True, reuse_port: bool = False,
              status_dir: str | None = None) -> Any:
    """Add the web stages to ``rt`` and listen on ``bind``; the listener (``.address``).
    ``target_p90`` (seconds): admission control on each request type's stage, by ``policy``
    (``overload.POLICIES``), per request class from cookie ``class_cookie`` if given;
    ``front``: one stage ``arashi.front`` for every request type instead (as many threads
    as they would have together), the whole request under one predicate; ``status``: the
    /_seda/ page on the same port (``status_dir``: the directory the workers of ``arashi
    serve --workers N`` share their snapshots in, so each one's page shows them all);
    ``reuse_port``: a worker's listener; ``degrade``: shorter message lists and no search
    while those stages are over ``target_p90`` (degrade.py; their own controller is then the
    thesis's, switched on at the lowest quality unless ``policy`` is none)."""
    apps = {kind: web.app(handler, login=login, methods=methods)
            for kind, (handler, login, methods) in REQUEST_TYPES.items()}
    stages = {"front": front_door(apps, kind_of)} if front else apps
    guards: dict[str, Any] = {}
    if degrade and target_p90 is not None:
        guards = degrade_pages(rt, web, target_p90, readmit=policy != "none")
    mounted = {name: mount(rt, app, name=stage_name(name),
                           threads=ThreadPoolController(max=threads * len(apps) // len(stages),
                                                        queue_threshold=4),
                           predicate=guards[name] if name in guards else admission(
                               target_p90, class_cookie, policy),
                           server_name=bind[0], server_port=bind[1])
               for name, app in stages.items()}
    sinks = {kind: mounted["front" if front else kind] for kind in apps}
    page = add_status(rt, SERVICE, http=HTTP, share_dir=status_dir).sink if status else None
    rt.add_stage(ROUTER, Router(sinks, page), blocking=False, batch=256)
    return serve(rt, bind, rt.sink(ROUTER), name=HTTP, reuse_port=reuse_port)
