"""``/_seda/``: what the runtime is doing, for people (an HTML page with the stage graph and a
table of every stage, refreshing) and for Prometheus (``/_seda/metrics``)."""

from __future__ import annotations

import html
import json
from typing import Any

import seda
from seda.http import Response, responses

PREFIX = "/_seda/"


def layers(stages: list[str], edges: list[tuple[str, str, int]]) -> list[list[str]]:
    """Stages in columns: sources first, then each stage one column right of the first stage
    that feeds it (breadth first, so cycles are cut where they are met)."""
    feeds: dict[str, list[str]] = {s: [] for s in stages}
    fed = set()
    for src, dst, _ in edges:
        if src in feeds and dst in feeds and src != dst:
            feeds[src].append(dst)
            fed.add(dst)
    column = {s: 0 for s in stages if s not in fed}
    frontier = list(column)
    while frontier:
        nxt = []
        for s in frontier:
            for d in feeds[s]:
                if d not in column:
                    column[d] = column[s] + 1
                    nxt.append(d)
        frontier = nxt
    last = max(column.values(), default=-1) + 1
    out: list[list[str]] = [[] for _ in range(last + 1)]
    for s in stages:
        out[column.get(s, last)].append(s)
    return [col for col in out if col]


def graph_svg(stages: list[str], edges: list[tuple[str, str, int]]) -> str:
    """The stage graph as an SVG drawing: boxes in columns, arrows labelled with event counts."""
    box_w, box_h, gap_x, gap_y = 150, 28, 70, 18
    cols = layers(stages, edges)
    where = {}
    for x, col in enumerate(cols):
        for y, name in enumerate(col):
            where[name] = (10 + x * (box_w + gap_x), 10 + y * (box_h + gap_y))
    width = 20 + len(cols) * (box_w + gap_x)
    height = 20 + max((len(c) for c in cols), default=1) * (box_h + gap_y)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             'font-family="sans-serif" font-size="11">',
             '<defs><marker id="a" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
             'markerHeight="7" orient="auto"><path d="M0,0L10,5L0,10z"/></marker></defs>']
    for src, dst, count in edges:
        if src not in where or dst not in where:
            continue
        (x1, y1), (x2, y2) = where[src], where[dst]
        ax, ay = x1 + box_w, y1 + box_h / 2
        if x2 > x1:                          # forward: into the left side
            bx, by = x2, y2 + box_h / 2
        else:                                # back or sideways: into the top or bottom
            bx, by = x2 + box_w / 2, y2 + (0 if y2 > y1 else box_h)
        parts.append(f'<line x1="{ax}" y1="{ay}" x2="{bx}" y2="{by}" stroke="#666" '
                     'marker-end="url(#a)"/>')
        parts.append(f'<text x="{(ax + bx) / 2}" y="{(ay + by) / 2 - 3}" text-anchor="middle" '
                     f'fill="#444">{count}</text>')
    for name, (x, y) in where.items():
        parts.append(f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="4" '
                     'fill="#eef3fb" stroke="#3b6db3"/>')
        parts.append(f'<text x="{x + box_w / 2}" y="{y + box_h / 2 + 4}" '
                     f'text-anchor="middle">{html.escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return html.escape(str(value))


def page(rt: seda.Runtime) -> bytes:
    stats = rt.stats()
    rows = []
    for name, s in stats.items():
        control = s.get("control", {})
        admission = control.get("admission", {})
        rows.append("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in (
            name, s["manager"], s["queue"], s["threads"], s["batch"], s["processed"],
            s["rejected"], s["errors"], s["p90_ms"],
            admission.get("p90_ms", ""), admission.get("rate", admission.get("limit", "")),
        )) + "</tr>")
    head = ("stage", "runs on", "queue", "threads", "batch", "processed", "rejected", "errors",
            "service p90 ms", "response p90 ms", "admission rate / limit")
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>seda: stages</title>
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}td:first-child{{text-align:left}}
</style></head><body>
<h1>Stages</h1>
<div id="graph">{graph_svg(list(stats), rt.stage_graph())}</div>
<table id="stages"><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>{"".join(rows)}</table>
<p>Refreshes every 2 s. <a href="metrics">Prometheus metrics</a> ·
<a href="stats.json">JSON</a> · <a href="graph.dot">DOT</a></p>
</body></html>"""
    return body.encode()


class Metrics:
    """A Prometheus collector over ``rt.stats()``: read when scraped, nothing kept."""

    def __init__(self, rt: seda.Runtime) -> None:
        self.rt = rt

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        families = {
            "queue": GaugeMetricFamily("seda_stage_queue", "Events waiting", labels=["stage"]),
            "threads": GaugeMetricFamily("seda_stage_threads", "Threads", labels=["stage"]),
            "batch": GaugeMetricFamily("seda_stage_batch", "Batch size", labels=["stage"]),
            "processed": CounterMetricFamily("seda_stage_processed", "Events handled",
                                             labels=["stage"]),
            "rejected": CounterMetricFamily("seda_stage_rejected", "Events refused",
                                            labels=["stage"]),
            "errors": CounterMetricFamily("seda_stage_errors", "Handler errors",
                                          labels=["stage"]),
            "p90_ms": GaugeMetricFamily("seda_stage_service_p90_seconds",
                                        "90th percentile handler time per event",
                                        labels=["stage"]),
        }
        rate = GaugeMetricFamily("seda_stage_admission_rate", "Admission rate, events/s",
                                 labels=["stage"])
        for name, s in self.rt.stats().items():
            for key, family in families.items():
                value = s[key] / 1000 if key == "p90_ms" else s[key]
                family.add_metric([name], value)
            admission = s.get("control", {}).get("admission", {})
            if "rate" in admission:
                rate.add_metric([name], admission["rate"])
        yield from families.values()
        yield rate


class Status(seda.EventHandler):
    """Answers everything under /_seda/."""

    def init(self, ctx: Any) -> None:
        self.rt = ctx.runtime
        try:
            from prometheus_client import CollectorRegistry
            from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
        except ImportError:                  # the metrics are an extra: pip install pyseda[haboob]
            self.metrics = None
        else:
            registry = CollectorRegistry()
            registry.register(Metrics(self.rt))
            self.metrics = (registry, generate_latest, CONTENT_TYPE_LATEST)

    def handle_event(self, req: Any) -> None:
        sub = req.path[len(PREFIX):]
        if req.method not in ("GET", "HEAD"):
            req.respond(responses.method_not_allowed(("GET", "HEAD")))
        elif sub == "":
            req.respond(Response(200, page(self.rt), content_type="text/html; charset=utf-8"))
        elif sub == "stats.json":
            req.respond(Response(200, json.dumps(self.rt.stats()).encode(),
                                 content_type="application/json"))
        elif sub == "graph.dot":
            req.respond(Response(200, self.rt.graph_dot().encode(),
                                 content_type="text/vnd.graphviz"))
        elif sub == "metrics":
            if self.metrics is None:
                req.respond(Response(501, b"install prometheus-client (pyseda[haboob])\n"))
                return
            registry, generate, ctype = self.metrics
            req.respond(Response(200, generate(registry), content_type=ctype))
        else:
            req.respond(responses.not_found())
