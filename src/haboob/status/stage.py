"""The ``haboob.status`` stage: everything under /_seda/, for people (the page), programs
(JSON, DOT) and Prometheus. It samples the counters once a second on a timer, for the rates
over the last minute, and with ``--workers N`` trades snapshots with the other workers through
the ``haboob.status.share`` stage, so the answer is the whole server's whichever worker gives it.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import seda
from seda.http import Response, responses
from seda.profile.graph import to_dot

from .aggregate import merge, merge_graph
from .metrics import exposition
from .page import page
from .share import STALE, Peers, Publish, Share
from .traffic import EVERY, Traffic, connections, counters

PREFIX = "/_seda/"
NAME = "haboob.status"
SHARE = "haboob.status.share"


class _Sample:
    """Timer -> Status: time to sample the counters (and publish, with workers)."""

    __slots__ = ()


_SAMPLE = _Sample()


class Status(seda.EventHandler):
    """Answers /_seda/ from this process's stats and, when ``shared``, the other workers'
    latest snapshots. ``http`` is the HTTP stage whose requests the page counts."""

    def __init__(self, http: str = "http", shared: bool = False) -> None:
        self.http, self.shared = http, shared
        self.listener: Any = None       # the page's own listener, if it has an address of its own
        self.server: dict | None = None            # the supervisor's file, with workers
        self.peers: list[dict] = []
        self.traffic = Traffic()

    def init(self, ctx: Any) -> None:
        self.rt = ctx.runtime
        self.own = ctx.stage.sink
        self.share = self.rt.sink(SHARE) if self.shared else None
        self.started = time.time()
        self.metrics = exposition(self.workers, labelled=self.shared)
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
        stats = self.rt.stats()
        self.traffic.sample(time.monotonic(), counters(stats, self.http))
        if self.share is not None:
            self.share.enqueue_lossy(Publish(self.snapshot(stats)))
        self.rt.timer.schedule(EVERY, self.own, _SAMPLE)

    def snapshot(self, stats: dict) -> dict:
        """This process now: what a worker publishes, and its part of every answer."""
        return {"pid": os.getpid(), "started": self.started, "time": time.time(),
                "traffic": self.traffic.summary(time.monotonic(), counters(stats, self.http),
                                                connections(stats, self.http)),
                "stages": stats, "graph": self.rt.stage_graph()}

    def workers(self) -> list[dict]:
        """This process's snapshot, fresh, and the other workers' recent ones, by pid."""
        now = time.time()
        live = [p for p in self.peers if now - p["time"] <= STALE]
        return sorted([self.snapshot(self.rt.stats()), *live], key=lambda w: w["pid"])

    def document(self) -> dict:
        """The whole server: ``traffic``, ``stages`` and ``graph`` summed over the workers
        (see ``aggregate``), and ``workers``, each one's own traffic; with a supervisor,
        ``supervisor``: its pid, the workers it keeps and how many it restarted."""
        workers, now = self.workers(), time.time()
        started = self.server["started"] if self.server else self.started
        doc = {"started": started, "uptime_s": now - started,
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

    def _answer(self, req: Any) -> None:
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
                req.respond(Response(501, b"install prometheus-client (pyseda[haboob])\n"))
            else:
                text, ctype = self.metrics()
                req.respond(Response(200, text, content_type=ctype))
        else:
            req.respond(responses.not_found())


def _json(doc: Any) -> Response:
    return Response(200, json.dumps(doc).encode(), content_type="application/json")


def add_status(rt: seda.Runtime, share_dir: str | None = None, http: str = "http") -> Status:
    """Add the status stages to ``rt``: the page on the loop thread and, with ``share_dir``
    (a worker of ``haboob --workers``), the stage that trades snapshots through it. Route
    /_seda/ to ``rt.sink(NAME)``, or serve it on an address of its own."""
    status = Status(http, shared=share_dir is not None)
    rt.add_stage(NAME, status, blocking=False)
    if share_dir is not None:
        rt.add_stage(SHARE, Share(share_dir, NAME), threads=1, batch=8)
    return status


def served_at(rt: seda.Runtime) -> tuple[str, int] | None:
    """The status page's own address, when it has one (``Options.status_bind``), else None."""
    try:
        listener = rt.stage(NAME).handler.listener
    except KeyError:
        return None
    return None if listener is None else listener.address[:2]
