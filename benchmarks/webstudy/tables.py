"""The study's results as Markdown: every run, the thesis's Fig. 39 summary, and the plots."""

from __future__ import annotations

from typing import Any

from benchmarks.webstudy.study import highlighted


def _errors(e: dict[str, int]) -> str:
    causes = ", ".join(f"{k} {v}" for k, v in e.items() if k != "total" and v)
    return f"{e['total']} ({causes})" if causes else "0"


def _jain(run: dict[str, Any]) -> str:
    return "-" if run["fairness"] is None else f"{run['fairness']:.3f}"


def markdown(results: dict[str, Any], command: str, plots: list[str]) -> str:
    s = results["settings"]
    lines = [
        "# Web-server study (thesis 6.1.3-6.1.4, Fig. 37-40)", "",
        f"Measured {results['date']} on {results['machine']}, with", "",
        f"    {command}", "",
        f"Closed loop from `benchmarks.loadgen`: each client connects, requests, thinks "
        f"{s['think_ms']:g} ms and reconnects after {s['requests_per_conn']} requests (the "
        f"connect counts in the response time); {s['duration']:g} s per run, responses slower "
        f"than {s['timeout']:g} s are errors. SPECweb99 file set of {s['fileset_mb']:g} MB. Each "
        f"server on core 0, the load generator on core 1. Times in ms over successful responses;"
        f" Jain's index over the requests each client completed.", "",
        "## All runs", "",
        "| server | clients | req/s | Mbit/s | mean | p50 | p90 | p99 | max | errors | Jain |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for name, entry in results["servers"].items():
        for r in entry["runs"]:
            lines.append(f"| {name} | {r['clients']} | {r['throughput']:.0f} | {r['mbit_s']:.1f}"
                         f" | {r['mean_ms']:.1f} | {r['p50_ms']:.1f} | {r['p90_ms']:.1f} | "
                         f"{r['p99_ms']:.1f} | {r['max_ms']:.0f} | {_errors(r['errors'])} | "
                         f"{_jain(r)} |")
    lines += ["", "## Summary (as the thesis's Fig. 39)", ""]
    for clients in highlighted(s["clients"]):
        lines += [f"{clients} clients:", "",
                  "| server | Mbit/s | RT mean ms | RT max ms | fairness |",
                  "|---|---:|---:|---:|---:|"]
        for name, entry in results["servers"].items():
            for r in entry["runs"]:
                if r["clients"] == clients:
                    lines.append(f"| {name} | {r['mbit_s']:.1f} | {r['mean_ms']:.1f} | "
                                 f"{r['max_ms']:.0f} | {_jain(r)} |")
        lines.append("")
    lines += ["## Servers", ""]
    lines += [f"- `{name}`: {entry['what']}" for name, entry in results["servers"].items()]
    lines += [f"- `{name}`: skipped, {why}" for name, why in results["skipped"].items()]
    lines += ["", "## Plots", ""]
    lines += [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"
