"""The /_seda/ page: what an operator looks at first (uptime, connections, request rate,
responses and errors over the last minute), the workers, then the stage graph and table.
Plain HTML and SVG, refreshed every 2 s, no script."""

from __future__ import annotations

import html
import math
from typing import Any

from .layout import layout
from .metrics import handler_values

FONT, SMALL = 12, 10          # px: stage names, and numbers (both monospace)
CHAR = 0.62                   # a monospace character's width, in em (DejaVu, Liberation: 0.6)
PAD, BOX_H = 10, 36           # a box's padding either side, and its height (two lines)
COUNTS = {                    # the HTTP stage's counters, as an operator reads them
    "dropped": "dropped: the connection went before the response",
    "aborted": "aborted: the application failed mid-response",
    "shed": "shed: 503 at once, overloaded",
    "timeouts": "timed out",
    "refused": "connections refused: too many open",
}


def compact(n: float) -> str:
    """1234 -> 1.2k: edge labels stay short."""
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.1f}{unit}".replace(".0", "")
    return f"{n:.0f}"


def duration(seconds: float) -> str:
    s = int(seconds)
    d, h, m = s // 86400, s // 3600 % 24, s // 60 % 60
    if d:
        return f"{d} d {h} h"
    if h:
        return f"{h} h {m:02d} min"
    if m:
        return f"{m} min {s % 60:02d} s"
    return f"{s} s"


def _num(n: float) -> str:
    return f"{n:,.0f}".replace(",", "\u2009")       # thin space: 12 345


def _detail(s: dict[str, Any]) -> str:
    return f"threads {s['threads']} · queue {s['queue']}"


def _text_width(text: str, size: int) -> float:
    return len(text) * CHAR * size


def graph_svg(stages: dict[str, dict[str, Any]], graph: list[tuple[str, str, int]]) -> str:
    """The stage graph, laid out in layers (``layout``): a box per stage with its threads and
    queue (amber while events wait), an arrow per edge labelled with its events."""
    sizes = {name: (max(_text_width(name, FONT), _text_width(_detail(s), SMALL)) + 2 * PAD,
                    float(BOX_H)) for name, s in stages.items()}
    labels = [compact(count) for _, _, count in graph]
    drawn = layout(sizes, [(src, dst, (_text_width(text, SMALL) + 8, SMALL + 5.0))
                           for (src, dst, _), text in zip(graph, labels, strict=True)])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{drawn.width:.0f}" '
             f'height="{drawn.height:.0f}" font-family="DejaVu Sans Mono,monospace">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
             'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto">'
             '<path d="M0,0L10,5L0,10z" fill="#555"/></marker></defs>']
    for route in drawn.routes:
        (x, y) = route.curves[0][0]
        d = f"M{x:.1f},{y:.1f}" + "".join(
            f"C{a:.1f},{b:.1f} {c:.1f},{e:.1f} {f:.1f},{g:.1f}"
            for _, (a, b), (c, e), (f, g) in route.curves)
        width = min(1 + math.log10(graph[route.index][2] + 1) * 0.3, 3)
        parts.append(f'<path d="{d}" fill="none" stroke="#777" stroke-width="{width:.1f}" '
                     'marker-end="url(#arrow)"/>')
    for name, box in drawn.boxes.items():
        s = stages[name]
        fill, stroke = ("#fff1cc", "#c98a00") if s["queue"] else ("#eef3fb", "#3b6db3")
        tip = (f"{name}: {s['processed']} events, {s['errors']} errors, "
               f"p90 {s['p90_ms']:.2f} ms, runs on {s['manager']}")
        cx = box.x + box.w / 2
        parts.append(
            f'<g><title>{html.escape(tip)}</title><rect x="{box.x:.1f}" y="{box.y:.1f}" '
            f'width="{box.w:.1f}" height="{box.h:.1f}" rx="4" fill="{fill}" stroke="{stroke}"/>'
            f'<text x="{cx:.1f}" y="{box.y + 15:.1f}" font-size="{FONT}" '
            f'text-anchor="middle">{html.escape(name)}</text>'
            f'<text x="{cx:.1f}" y="{box.y + 29:.1f}" font-size="{SMALL}" fill="#555" '
            f'text-anchor="middle">{html.escape(_detail(s))}</text></g>')
    for route in drawn.routes:
        r = route.label
        parts.append(
            f'<g class="label"><rect x="{r.x:.1f}" y="{r.y:.1f}" width="{r.w:.1f}" '
            f'height="{r.h:.1f}" rx="3" fill="#fff" fill-opacity="0.9" stroke="#ccc"/>'
            f'<text x="{r.x + r.w / 2:.1f}" y="{r.y + r.h - 4:.1f}" font-size="{SMALL}" '
            f'text-anchor="middle" fill="#333">{labels[route.index]}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _row(cells: list[Any], cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<tr{attr}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def traffic_table(traffic: dict[str, Any], http: bool = True) -> str:
    """Requests, responses by class and code, errors and the other counts: over the window
    and since the start, side by side. Without ``http``, only the errors there are: handler
    exceptions."""
    recent, total = traffic["recent"], traffic["total"]
    window = traffic["window_s"]
    rate = traffic["requests_per_s"]
    rows = []
    if http:
        rows.append(_row(["requests", f"{_num(recent['requests'])} ({rate:,.1f}/s)",
                          _num(total["requests"])], "head"))
    for cls in sorted(total["classes"]):
        rows.append(_row([cls, _num(recent["classes"].get(cls, 0)),
                          _num(total["classes"][cls])], f"class c{cls[0]}"))
        rows += [_row([f"&emsp;{code}", _num(recent["responses"].get(code, 0)), _num(n)], "code")
                 for code, n in total["responses"].items() if code[0] == cls[0]]
    errors = total["errors"]
    rows.append(_row(["errors", _num(recent["errors"]["total"]), _num(errors["total"])],
                     "head errors" if recent["errors"]["total"] else "head"))
    names = {"5xx": "5xx answers", "handler": "handler exceptions", **COUNTS}
    shown = [k for k in errors if k != "total" and (http or k == "handler")]
    rows += [_row([f"&emsp;{html.escape(names.get(k, k))}", _num(recent["errors"].get(k, 0)),
                   _num(errors[k])]) for k in shown]
    rows += [_row([html.escape(COUNTS.get(k, k)), _num(recent["counts"].get(k, 0)), _num(n)])
             for k, n in total["counts"].items() if k not in errors]
    return (f'<table id="traffic"><tr><th></th><th>last {window:.0f} s</th>'
            f'<th>since start</th></tr>{"".join(rows)}</table>')


def workers_table(workers: list[dict[str, Any]]) -> str:
    head = ("worker (pid)", "up", "connections", "requests/s", "errors, last minute",
            "responses", "threads", "queued", "reported")
    rows = []
    for w in workers:
        t, stages = w["traffic"], w["stages"].values()
        rows.append(_row([w["pid"], duration(w["uptime_s"]), _num(t["connections"]),
                          f"{t['requests_per_s']:,.1f}", _num(t["recent"]["errors"]["total"]),
                          _num(t["total"]["requests"]), sum(s["threads"] for s in stages),
                          sum(s["queue"] for s in stages), f"{w['age_s']:.1f} s ago"]))
    return (f'<table id="workers"><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>'
            f'{"".join(rows)}</table>')


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return html.escape(str(value))


def stages_table(stages: dict[str, dict[str, Any]]) -> str:
    head = ("stage", "runs on", "queue", "threads", "batch", "processed", "rejected", "errors",
            "service p90 ms", "response p90 ms", "admission rate / limit")
    rows = []
    for name, s in stages.items():
        admission = s.get("control", {}).get("admission", {})
        rows.append(_row([_cell(v) for v in (
            name, s["manager"], s["queue"], s["threads"], s["batch"], s["processed"],
            s["rejected"], s["errors"], s["p90_ms"],
            admission.get("p90_ms", ""), admission.get("rate", admission.get("limit", "")))]))
    return (f'<table id="stages"><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>'
            f'{"".join(rows)}</table>')


def cluster_table(stages: dict[str, dict[str, Any]]) -> str:
    """Stages whose queue is a Redis stream (``seda.cluster``): the stream's state."""
    head = ("stage", "stream", "backlog", "pending", "oldest ms", "consumers", "redelivered",
            "dead letters")
    rows = [_row([_cell(v) for v in (
        name, c["stream"], c["backlog"], c["pending"], c["oldest_ms"], c["consumers"],
        c["redelivered"], c["dead_letters"])])
        for name, s in stages.items() if (c := s.get("cluster"))]
    return (f'<table id="cluster"><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>'
            f'{"".join(rows)}</table>') if rows else ""


def counters_table(stages: dict[str, dict[str, Any]]) -> str:
    """What each handler counts itself (``EventHandler.stats``): a service's own numbers."""
    rows = [_row([html.escape(stage) if i == 0 else "", html.escape(key), _cell(value)])
            for stage, s in stages.items()
            for i, (key, value) in enumerate(handler_values(s.get("handler")))]
    return (f'<table id="counters"><tr><th>stage</th><th>counter</th><th>value</th></tr>'
            f'{"".join(rows)}</table>') if rows else ""


_STYLE = """body{font-family:sans-serif;margin:1.5em;color:#222}
h1{margin:0 0 .2em}h2{margin:1.2em 0 .4em;font-size:1.15em}
#summary{font-size:1.1em;margin:.2em 0 1em}#summary b{font-size:1.2em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}tr.head td{font-weight:bold;background:#f4f4f4}
tr.errors td,b.errors{color:#b00020}tr.code td{color:#555}tr.c5 td:first-child{color:#b00020}
#graph{overflow-x:auto;margin-bottom:1em}"""


def page(doc: dict[str, Any]) -> bytes:
    """The page for a status document (``Status.document``)."""
    traffic, http = doc["traffic"], doc["http"] is not None
    errors = traffic["recent"]["errors"]["total"]
    facts = [f"up <b>{duration(doc['uptime_s'])}</b>"]
    supervisor = doc.get("supervisor")
    if supervisor is not None:
        facts.append(f"<b>{len(doc['workers'])}</b> of {supervisor['workers']} workers "
                     f"reporting, {supervisor['restarts']} restarted")
    if http:
        facts += [f"<b>{_num(traffic['connections'])}</b> open connections",
                  f"<b>{traffic['requests_per_s']:,.1f}</b> requests/s"]
    facts.append(f'<b{" class=errors" if errors else ""}>{_num(errors)}</b> errors '
                 f"in the last {traffic['window_s']:.0f} s")
    workers = ""
    if supervisor is not None:
        workers = f"<h2>Workers</h2>{workers_table(doc['workers'])}"
    cluster = cluster_table(doc["stages"])
    if cluster:
        cluster = f"<h2>Cluster queues</h2>{cluster}"
    counters = counters_table(doc["stages"])
    if counters:
        counters = f"<h2>Counters</h2>{counters}"
    service = html.escape(doc["service"])
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>{service}: status</title><style>{_STYLE}</style></head><body>
<h1>{service}</h1>
<p id="summary">{" · ".join(facts)}</p>
<h2>{"Requests" if http else "Errors"}</h2>{traffic_table(traffic, http)}
{workers}
<h2>Stages</h2>
<div id="graph">{graph_svg(doc["stages"], doc["graph"])}</div>
{stages_table(doc["stages"])}
{cluster}
{counters}
<p>Refreshes every 2 s. Whole service{" (all workers)" if supervisor else ""}.
<a href="metrics">Prometheus metrics</a> · <a href="status.json">JSON</a> ·
<a href="stats.json">stages JSON</a> · <a href="graph.dot">DOT</a></p>
</body></html>"""
    return body.encode()
