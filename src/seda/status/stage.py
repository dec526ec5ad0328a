"""The status stage: everything under /_seda/, for people (the page), programs (JSON, DOT) and
Prometheus. It samples the counters once a second on a timer, for the rates over the last
minute, and in a service of several worker processes trades snapshots with the other workers
through the share stage (``share.py``), so the answer is the whole service's whichever worker
gives it.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

import seda
from seda.http import HttpRequest, Response, responses, serve
from seda.io import Listener
from seda.profile import to_dot

from .aggregate import merge, merge_graph
from .metrics import exposition
from .page import page
from .share import STALE, Peers, Publish, Share
from .traffic import EVERY, Traffic, connections, counters

PREFIX = "/_seda/"
_SERVICE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Sample:
    """Timer -> Status: time to sample the counters (and publish, with workers)."""

    __slots__ = ()


_SAMPLE = _Sample()


class Status(seda.EventHandler):
    """Answers /_seda/ from this process's stats and, when ``shared``, the other workers'
    latest snapshots. ``http`` is the seda.http server stage whose requests the page counts
    (None: a service that does not speak HTTP; the page shows its stages and errors).

    ``add_status`` makes one; route requests for PREFIX to ``sink``, or ``serve`` the page on
    an address of its own."""

    def __init__(self, rt: seda.Runtime, service: str, http: str | None = "http",
                 shared: bool = False) -> None:
        if not _SERVICE.fullmatch(service):
            raise ValueError(f"service {service!r}: letters, digits and '_', not starting with "
                             "a digit (it prefixes the Prometheus metric names)")
        self.runtime, self.service, self.http, self.shared = rt, service, http, shared
        self.name = f"{service}.status"
        self.sink: seda.Sink | None = None          # set by add_status (and init: see there)
        self.share: seda.Sink | None = None         # set by add_status, with a share_dir
        self.listener: Listener | None = None      # the page's own address, if it has one
        self.server: dict[str, Any] | None = None  # the supervisor's file, with workers
        self.peers: list[dict[str, Any]] = []
        self.traffic = Traffic()

    def serve(self, address: tuple[Any, ...], **listen_options: Any) -> Listener:
        """Serve the page on ``address`` (plain HTTP unless ``ssl_context`` is given), through
        an HTTP stage of its own, so that the page can be kept off a public address;
        ``listen_options`` go to ``seda.http.serve`` (``reuse_port``, ``sock``...)."""
        if self.sink is None:
            raise RuntimeError("add the stage first: seda.status.add_status(rt, service)")
        self.listener = serve(self.runtime, address, self.sink, name=f"{self.name}.http",
                              **listen_options)
        return self.listener

    @property
    def address(self) -> tuple[str, int] | None:
        """Where ``serve`` put the page, None if it shares the service's own address."""
        return None if self.listener is None else self.listener.address[:2]

    def init(self, ctx: seda.StageContext) -> None:
        # on a running runtime this runs inside add_stage, before add_status has the sink
        self.sink = ctx.stage.sink
        self.started = time.time()
        self.metrics = exposition(self.workers, self.service, self.http is not None,
                                  labelled=self.shared)
        self._sample()

    def handle_event(self, ev: Any) -> None:
        kind = type(ev)
        if kind is _Sample:
            self._sample()
        elif kind is Peers:
            self.server, self.peers = ev.server, ev.snapshots
        else:
            self._answer(ev)

    def _sample(self) -> None:
        stats = self.runtime.stats()
        self.traffic.sample(time.monotonic(), counters(stats, self.http))
        if self.share is not None:
            self.share.enqueue_lossy(Publish(self.snapshot(stats)))
        assert self.sink is not None           # init has run: it scheduled this
        self.runtime.timer.schedule(EVERY, self.sink, _SAMPLE)

    def snapshot(self, stats: dict[str, Any]) -> dict[str, Any]:
        """This process now: what a worker publishes, and its part of every answer."""
        return {"pid": os.getpid(), "started": self.started, "time": time.time(),
                "traffic": self.traffic.summary(time.monotonic(), counters(stats, self.http),
                                                connections(stats, self.http)),
                "stages": stats, "graph": self.runtime.stage_graph()}

    def workers(self) -> list[dict[str, Any]]:
        """This process's snapshot, fresh, and the other workers' recent ones, by pid."""
        now = time.time()
        live = [p for p in self.peers if now - p["time"] <= STALE]
        return sorted([self.snapshot(self.runtime.stats()), *live], key=lambda w: w["pid"])

    def document(self) -> dict[str, Any]:
        """The whole service: ``traffic``, ``stages`` and ``graph`` summed over the workers
        (see ``aggregate``), and ``workers``, each one's own traffic; with a supervisor,
        ``supervisor``: its pid, the workers it keeps and how many it restarted. ``service``
        and ``http`` (the HTTP stage counted, or None) say what the numbers are of."""
        workers, now = self.workers(), time.time()
        started = self.server["started"] if self.server else self.started
        doc = {"service": self.service, "http": self.http,
               "started": started, "uptime_s": now - started,
               "traffic": merge([w["traffic"] for w in workers]),
               "stages": merge([w["stages"] for w in workers]),
               "graph": merge_graph(w["graph"] for w in workers),
               "workers": [{"pid": w["pid"], "started": w["started"],
                            "uptime_s": now - w["started"], "age_s": max(0.0, now - w["time"]),
                            "traffic": w["traffic"],
                            "stages": {n: {k: s[k] for k in ("queue", "threads")}
                                       for n, s in w["stages"].items()}}
                           for w in workers]}
        if self.server is not None:
            doc["supervisor"] = self.server
        return doc

    def _answer(self, req: HttpRequest) -> None:
        path = req.path
        if req.method not in ("GET", "HEAD"):
            req.respond(responses.method_not_allowed(("GET", "HEAD")))
        elif not path.startswith(PREFIX):     # /_seda, or / on the page's own address
            req.respond(responses.redirect(PREFIX) if path in ("/", PREFIX[:-1])
                        else responses.not_found())
        elif path == PREFIX:
            req.respond(Response(200, page(self.document()),
                                 content_type="text/html; charset=utf-8"))
        elif path == PREFIX + "status.json":
            req.respond(_json(self.document()))
        elif path == PREFIX + "stats.json":
            req.respond(_json(self.document()["stages"]))
        elif path == PREFIX + "graph.dot":
            doc = self.document()
            req.respond(Response(200, to_dot(list(doc["stages"]), doc["graph"]).encode(),
                                 content_type="text/vnd.graphviz"))
        elif path == PREFIX + "metrics":
            if self.metrics is None:
                req.respond(Response(501, b"install prometheus-client (pyseda[status])\n"))
            else:
                text, ctype = self.metrics()
                req.respond(Response(200, text, content_type=ctype))
        else:
            req.respond(responses.not_found())


def _json(doc: Any) -> Response:
    return Response(200, json.dumps(doc).encode(), content_type="application/json")


def add_status(rt: seda.Runtime, service: str, *, http: str | None = "http",
               share_dir: str | None = None) -> Status:
    """Add the status stages of ``service`` to ``rt``: ``{service}.status`` on the loop thread
    and, with ``share_dir`` (a directory the workers of one service share, see ``share.py``),
    ``{service}.status.share``, which trades snapshots with the other workers through it.
    ``service`` names the page and prefixes the metrics (``{service}_http_responses_total``);
    ``http`` is the HTTP stage whose requests are counted (None if there is none).

    Route requests for PREFIX (and ``PREFIX[:-1]``, which redirects) to the returned
    ``Status.sink`` from the service's own HTTP routing, or call ``Status.serve(address)``."""
    status = Status(rt, service, http, shared=share_dir is not None)
    status.sink = rt.add_stage(status.name, status, blocking=False).sink
    if share_dir is not None:      # (after: its init looks the status stage up)
        status.share = rt.add_stage(f"{status.name}.share", Share(share_dir, status.name),
                                    threads=1, batch=8).sink
    return status


def served_at(rt: seda.Runtime, service: str) -> tuple[str, int] | None:
    """The address ``service``'s status page was given with ``Status.serve``; None if it has
    none of its own, or if the service has no status page."""
    try:
        status = rt.stage(f"{service}.status").handler
    except KeyError:
        return None
    return status.address if isinstance(status, Status) else None
