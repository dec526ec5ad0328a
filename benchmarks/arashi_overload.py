"""Chapter 7's overload-control experiments on Arashi itself (issue 17; thesis Figs. 52-59):
emulated users (benchmarks/arashi_load.py's Markov model, backing off 5 s after a refusal as
the thesis's client did) against ``arashi serve`` on SQLite, with each admission controller of
``arashi serve --admission`` in turn on the same load.

    python -m benchmarks.arashi_overload --experiment fig55            # the full run
    python -m benchmarks.arashi_overload --experiment fig55 --quick    # seconds, to try it

    fig52      the controller on the folder-list stage during a 1000-user spike
    fig53      p90 and the fraction refused against 2 to 1024 users, with and without control
    fig54      p90 per request type at 16 and 1024 users, with control
    fig55      the massive spike, 3 users -> 1000 -> 3: every controller on the same spike
    fig56      service degradation (Figs. 56-57): alone, and with admission control under it
    fig58      two classes of 128 users, the high one there from t=100 to 200 (Figs. 58-59)
    frontdoor  one controller for the whole request against one per request type, while
               search-only users overload the search stage

Every run starts a fresh server on a fresh copy of the data, pinned to core 0 (the users on
core 1), and every experiment first measures the service's capacity C: the successful answers
per second of ``--capacity-users`` users without admission control. Writes
docs/results/arashi_overload_NAME.{md,json,png} (``--out DIR`` elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.arashi_load import TYPES, arashi_server, make_data, measure, two_cores
from benchmarks.arashi_spike import Group, Phases, Searcher, drive, series, summary
from benchmarks.results import RESULTS

USERS = Group("users")
LOW, HIGH = Group("low", cookie="tier=0"), Group("high", cookie="tier=9")
# a refused searcher searches again after its back-off: logging in again (56 ms of scrypt)
# would make the login stage overloaded too, and the experiment is about search overloading
SEARCHERS = Group("searchers", user=Searcher, relogin=False)


@dataclass
class Setup:
    """What every run of an experiment shares."""

    target: float                   # seconds: the p90 target
    backoff: float                  # seconds a refused user waits before trying again
    relogin: bool                   # then logs in again (the thesis), or reloads the page
    accounts: int
    arrival: float                  # seconds over which users arriving together log in
    quick: bool
    threads: list[str] = field(default_factory=list)     # arashi serve --threads N, if given
    capacity: float | None = None   # successful answers/s, measured first
    data: Path = Path()


@dataclass
class Run:
    """One server configuration on one schedule."""

    label: str
    options: list[str]
    groups: list[Group]
    phases: Phases
    result: dict[str, Any] = field(default_factory=dict)


def controller(name: str, target: float) -> list[str]:
    """``arashi serve`` options for a controller by its label in the experiments."""
    ms = f"{target * 1000:g}"
    if name == "none":
        return []
    if name == "degrade":                       # degradation alone (Fig. 56)
        return ["--target-p90", ms, "--admission", "none", "--degrade"]
    if name == "degrade+rtc":                   # and the thesis's controller under it (57)
        return ["--target-p90", ms, "--admission", "rtc", "--degrade"]
    policy, _, where = name.partition("@")
    options = ["--target-p90", ms, "--admission", policy]
    return options + (["--admission-at", where] if where else [])


# -- schedules --------------------------------------------------------------------------------

def spike(setup: Setup, group: Group = USERS) -> tuple[Phases, float, float]:
    """3 users, 1000, 3 again (thesis 7.3.3), and the window the figures are taken over: from
    5 s into the spike to its end."""
    if setup.quick:
        base, length, after, few, many = 1.5, 3.0, 1.5, 2, 24
    else:
        base, length, after, few, many = 30.0, 60.0, 30.0, 3, 1000
    phases = [(base, {group.name: few}), (length, {group.name: many}), (after, {group.name: few})]
    return phases, base + (1.0 if setup.quick else 5.0), base + length


def steady(setup: Setup, users: int) -> tuple[Phases, float, float]:
    """``users`` all along; figures after the warm-up."""
    warmup, seconds = (0.5, 2.0) if setup.quick else (20.0, 60.0)
    return [(warmup + seconds, {USERS.name: users})], warmup, warmup + seconds


# -- running ----------------------------------------------------------------------------------

def execute(setup: Setup, run: Run, seed: int) -> Run:
    with arashi_server(setup.data, options=(*run.options, *setup.threads)) as port:
        timeline = asyncio.run(drive(port, run.groups, run.phases, setup.accounts,
                                     setup.backoff, seed, setup.arrival, setup.relogin))
    seconds = sum(s for s, _ in run.phases)
    run.result = {"label": run.label, "options": run.options, "seconds": seconds,
                  "refusal_pages": timeline.refusals, "bad_refusal_pages": timeline.bad_refusals,
                  "samples": timeline.samples,
                  "series": {g.name: series(timeline.rows, seconds, g.name) for g in run.groups},
                  "rows": timeline.rows}
    return run


def window(run: Run, setup: Setup, first: float, last: float,
           group: str | None = None) -> dict[str, Any]:
    return summary(run.result["rows"], first, last, setup.capacity, group)


def measure_capacity(setup: Setup, users: int) -> float:
    """Successful answers per second of ``users`` closed-loop users, no admission control."""
    warmup, seconds = (0.5, 1.5) if setup.quick else (10.0, 20.0)
    r = measure(setup.data, users, setup.accounts, warmup, seconds, options=tuple(setup.threads))
    return float(r["requests"] - sum(r["errors"].values())) / seconds


def stage_sample(run: Run, stage: str, key: str) -> tuple[list[float], list[Any]]:
    """One value of a stage's admission state over time, from the server's samples."""
    t, values = [], []
    for when, stages in run.result["samples"]:
        state = stages.get(stage, {}).get("admission", {})
        t.append(when)
        values.append(state.get(key))
    return t, values


# -- the experiments --------------------------------------------------------------------------

@dataclass
class Experiment:
    """A set of runs and what to make of them: ``runs(setup, labels)``; ``report(setup, runs,
    out)`` writes the table and the figure and returns the table's text."""

    title: str
    labels: tuple[str, ...]
    runs: Callable[[Setup, list[str]], list[Run]]
    report: Callable[[Setup, list[Run], Path], str]


def _fmt(v: Any, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _setup_line(setup: Setup) -> str:
    then = "logs in again" if setup.relogin else "reloads the page"
    threads = setup.threads[1] if setup.threads else "8 (Arashi's default)"
    return (f"Target p90 {setup.target * 1000:g} ms; a refused user waits {setup.backoff:g} s "
            f"and {then}; C = {_fmt(setup.capacity)} successful answers/s (measured "
            f"first, no admission control); {setup.accounts} accounts; at most {threads} "
            "threads a stage; server on core 0, users on core 1.")


def _nan(values: list[Any]) -> list[float]:
    """Gaps (None: nothing that second) as NaN, which matplotlib leaves out."""
    return [float("nan") if v is None else v for v in values]


def _plt() -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig: Any, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    _plt().close(fig)


def spike_runs(labels: list[str], setup: Setup, group: Group = USERS) -> list[Run]:
    phases, _, _ = spike(setup, group)
    return [Run(label, controller(label, setup.target), [group], phases) for label in labels]


def spike_table(setup: Setup, runs: list[Run]) -> tuple[str, list[dict[str, Any]]]:
    """Each run over the settled spike, against the issue's targets."""
    _, first, last = spike(setup)
    sums = [window(run, setup, first, last) for run in runs]
    thesis = next((s["refused"] for run, s in zip(runs, sums, strict=True)
                   if run.label == "rtc"), None)
    rows = []
    for run, s in zip(runs, sums, strict=True):
        p90 = s["p90_ms"]
        checks = [p90 is not None and p90 <= 1500 * setup.target,
                  s["goodput_c"] is not None and s["goodput_c"] >= 0.9,
                  s["refusal_p90_ms"] is None or s["refusal_p90_ms"] < 10,
                  thesis is None or run.label == "rtc" or (s["refused"] or 0) < thesis]
        rows.append([run.label, p90, None if p90 is None else p90 / (setup.target * 1000),
                     s["refused"], s["refusal_p90_ms"], s["goodput_c"],
                     sum(s["errors"].values()), run.result["bad_refusal_pages"],
                     "yes" if all(checks) else "no"])
    text = _table(["admission", "p90 admitted (ms)", "x target", "refused", "refusal p90 (ms)",
                   "goodput (x C)", "errors", "bad 503 pages", "meets targets"], rows)
    return (text + f"\nFigures from {first:g} s to {last:g} s (the spike, after its first "
            f"{first - spike(setup)[0][0][0]:g} s). Targets: p90 <= 1.5x target, goodput >= "
            "0.9 C, refusals answered in < 10 ms at p90, fewer refused than the thesis's "
            "controller (rtc).\n"), sums


def over_time(runs: list[Run], setup: Setup, path: Path, title: str, group: str = "users",
              quality: bool = False) -> None:
    plt = _plt()
    fig, axes = plt.subplots(3 if quality else 2, 1, sharex=True, figsize=(9, 7.5 if quality
                                                                            else 5.5))
    for i, run in enumerate(runs):
        s, color = run.result["series"][group], f"C{i}"
        axes[0].plot(s["t"], _nan(s["p90_ms"]), label=run.label, lw=1, color=color)
        axes[1].plot(s["t"], _nan(s["refused"]), label=run.label, lw=1, color=color)
        if quality:
            for stage, ls in (("arashi.messages", "-"), ("arashi.search", ":")):
                t, q = stage_sample(run, stage, "quality")
                if any(v is not None for v in q):
                    axes[2].step(t, _nan(q), where="post", ls=ls, color=color,
                                 label=f"{run.label}: {stage[7:]}")
    axes[0].axhline(setup.target * 1000, color="grey", ls="--", lw=0.8)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("p90 of admitted (ms)")
    axes[0].legend(fontsize="x-small", ncol=2)
    axes[1].set_ylabel("fraction refused")
    if quality:
        axes[2].set_ylabel("quality")
        axes[2].legend(fontsize="x-small", ncol=2)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(title, fontsize="medium")
    _save(fig, path)


# fig55 -----------------------------------------------------------------------------------------

def fig55_report(setup: Setup, runs: list[Run], out: Path) -> str:
    text, _ = spike_table(setup, runs)
    over_time(runs, setup, out / "arashi_overload_fig55.png",
              "Arashi, 3 -> 1000 -> 3 users (cf. thesis Fig. 55)")
    return text + per_type_table(setup, [(r.label, r) for r in runs], *spike(setup)[1:])


def per_type_table(setup: Setup, runs: list[tuple[str, Run]], first: float, last: float,
                   group: str | None = None) -> str:
    rows = []
    for label, run in runs:
        types = window(run, setup, first, last, group)["types"]
        rows.append([label] + [
            f"{_fmt(types[t]['p90_ms'], 0)} / {_fmt(types[t]['refused'], 2)}" if t in types
            else "-" for t in TYPES])
    return ("\np90 of admitted (ms) / fraction refused, per request type:\n\n"
            + _table(["admission", *TYPES], rows))


# fig52 -----------------------------------------------------------------------------------------

def fig52_report(setup: Setup, runs: list[Run], out: Path) -> str:
    plt = _plt()
    fig, (ax_p, ax_a) = plt.subplots(2, 1, sharex=True, figsize=(9, 5.5))
    rows = []
    for run in runs:
        t, est = stage_sample(run, "arashi.folders", "p90_ms")
        ax_p.plot(t, _nan(est),
                  label=f"{run.label}: p90 estimate")
        s = series(run.result["rows"], run.result["seconds"], kind="folders")
        ax_p.plot(s["t"], _nan(s["p90_ms"]), ls=":",
                  label=f"{run.label}: p90 seen by users")
        key, what = ("rate", "admission rate (req/s)") if run.label == "rtc" else \
            ("bound", "queue bound (requests)")
        t, act = stage_sample(run, "arashi.folders", key)
        ax_a.plot(t, _nan(act),
                  label=f"{run.label}: {what}")
        _, first, last = spike(setup)
        f = window(run, setup, first, last)["types"].get("folders", {})
        rows.append([run.label, f.get("p90_ms"), f.get("refused"), f.get("count")])
    ax_p.axhline(setup.target * 1000, color="grey", ls="--", lw=0.8, label="target")
    ax_p.set_yscale("log")
    ax_p.set_ylabel("folder list p90 (ms)")
    ax_p.legend(fontsize="x-small")
    ax_a.set_yscale("log")
    ax_a.set_ylabel("admission")
    ax_a.set_xlabel("time (s)")
    ax_a.legend(fontsize="x-small")
    fig.suptitle("The folder-list stage's controller during the spike (cf. thesis Fig. 52)",
                 fontsize="medium")
    _save(fig, out / "arashi_overload_fig52.png")
    return ("The folder-list stage (`arashi.folders`) over the settled spike:\n\n"
            + _table(["admission", "p90 admitted (ms)", "refused", "requests"], rows))


# fig53 / fig54 ---------------------------------------------------------------------------------

FIG53_USERS = (2, 8, 32, 128, 256, 512, 1024)   # past the knee (about 64 users) every doubling


def steady_runs(labels: list[str], setup: Setup, points: tuple[int, ...]) -> list[Run]:
    return [Run(f"{label}/{users}", controller(label, setup.target), [USERS],
                steady(setup, users)[0]) for label in labels for users in points]


def _points(runs: list[Run]) -> dict[str, list[tuple[int, Run]]]:
    by: dict[str, list[tuple[int, Run]]] = {}
    for run in runs:
        label, _, users = run.label.rpartition("/")
        by.setdefault(label, []).append((int(users), run))
    return by


def fig53_report(setup: Setup, runs: list[Run], out: Path) -> str:
    plt = _plt()
    fig, (ax_p, ax_r) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    rows = []
    for label, points in _points(runs).items():
        sums = [(u, window(r, setup, *steady(setup, u)[1:])) for u, r in points]
        ax_p.plot([u for u, _ in sums], _nan([s["p90_ms"] for _, s in sums]),
                  marker="o", label=label)
        ax_r.plot([u for u, _ in sums], [s["refused"] or 0.0 for _, s in sums], marker="o",
                  label=label)
        rows += [[label, u, s["p90_ms"], s["refused"], s["goodput_c"]] for u, s in sums]
    ax_p.axhline(setup.target * 1000, color="grey", ls="--", lw=0.8)
    ax_p.set_xscale("log", base=2)
    ax_p.set_yscale("log")
    ax_p.set_ylabel("p90 of admitted (ms)")
    ax_p.legend(fontsize="small")
    ax_r.set_ylabel("fraction refused")
    ax_r.set_xlabel("users")
    fig.suptitle("Arashi with and without per-stage control (cf. thesis Fig. 53)",
                 fontsize="medium")
    _save(fig, out / "arashi_overload_fig53.png")
    return _table(["admission", "users", "p90 admitted (ms)", "refused", "goodput (x C)"], rows)


FIG54_USERS = (16, 1024)


def fig54_report(setup: Setup, runs: list[Run], out: Path) -> str:
    plt = _plt()
    by = _points(runs)
    fig, axes = plt.subplots(len(by), 1, figsize=(8, 3.2 * len(by)), squeeze=False)
    text = ""
    for ax, (label, points) in zip((a[0] for a in axes), by.items(), strict=True):
        width = 0.8 / max(1, len(points))
        for i, (users, run) in enumerate(points):
            types = window(run, setup, *steady(setup, users)[1:])["types"]
            vals = [(types.get(t, {}).get("p90_ms") or 0.0) for t in TYPES]
            ax.bar([j + i * width for j in range(len(TYPES))], vals, width,
                   label=f"{users} users")
        ax.set_xticks([j + width * (len(points) - 1) / 2 for j in range(len(TYPES))], TYPES)
        ax.axhline(setup.target * 1000, color="grey", ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylabel("p90 (ms)")
        ax.set_title(f"admission: {label}", fontsize="small")
        ax.legend(fontsize="x-small")
        text += f"\n{label}:\n" + per_type_table(
            setup, [(f"{u} users", r) for u, r in points], *steady(setup, points[0][0])[1:])
    fig.suptitle("p90 per request type with control (cf. thesis Fig. 54)", fontsize="medium")
    _save(fig, out / "arashi_overload_fig54.png")
    return text


# fig56 -----------------------------------------------------------------------------------------

def fig56_report(setup: Setup, runs: list[Run], out: Path) -> str:
    text, _ = spike_table(setup, runs)
    rows = []
    _, first, last = spike(setup)
    for run in runs:
        cells: list[Any] = [run.label]
        for stage in ("arashi.messages", "arashi.search"):
            t, q = stage_sample(run, stage, "quality")
            q = [v for when, v in zip(t, q, strict=True) if first <= when < last and v is not None]
            cells.append(sum(q) / len(q) if q else None)
        rows.append(cells)
    over_time(runs, setup, out / "arashi_overload_fig56.png",
              "Service degradation on Arashi (cf. thesis Figs. 56-57)", quality=True)
    return (text + "\nMean quality over the settled spike (1: ten messages a page and search; "
            "lower: fewer messages, and no search below 0.5):\n\n"
            + _table(["run", "message list", "search"], rows))


# fig58 -----------------------------------------------------------------------------------------

def fig58_phases(setup: Setup) -> tuple[Phases, float, float]:
    """128 low-priority users all along, 128 high-priority ones from t=100 to t=200."""
    t1, t2, t3, n = (1.5, 3.0, 1.5, 8) if setup.quick else (100.0, 100.0, 100.0, 128)
    return ([(t1, {LOW.name: n}), (t2, {LOW.name: n, HIGH.name: n}), (t3, {LOW.name: n})],
            t1, t1 + t2)


def fig58_runs(setup: Setup, labels: list[str]) -> list[Run]:
    phases, _, _ = fig58_phases(setup)
    runs = []
    for label in labels:
        policy, _, classes = label.partition(",")
        options = controller(policy, setup.target)
        if classes:
            options += ["--class-cookie", "tier"]
        runs.append(Run(label, options, [LOW, HIGH], phases))
    return runs


def fig58_report(setup: Setup, runs: list[Run], out: Path) -> str:
    _, first, last = fig58_phases(setup)
    plt = _plt()
    fig, axes = plt.subplots(2, len(runs), sharex=True, sharey="row",
                             figsize=(3.6 * len(runs), 5.5), squeeze=False)
    rows = []
    for i, run in enumerate(runs):
        for group in (LOW, HIGH):
            s = run.result["series"][group.name]
            axes[0][i].plot(s["t"], _nan(s["p90_ms"]), label=group.name, lw=1)
            axes[1][i].plot(s["t"], _nan(s["refused"]), label=group.name, lw=1)
            w = window(run, setup, first, last, group.name)
            rows.append([run.label, group.name, w["p90_ms"], w["refused"], w["goodput_c"]])
        axes[0][i].set_title(run.label, fontsize="small")
        axes[0][i].axhline(setup.target * 1000, color="grey", ls="--", lw=0.8)
        axes[0][i].set_yscale("log")
        axes[1][i].set_xlabel("time (s)")
    axes[0][0].set_ylabel("p90 of admitted (ms)")
    axes[1][0].set_ylabel("fraction refused")
    axes[0][0].legend(fontsize="x-small")
    fig.suptitle("Two classes of users, the high one from t=100 to 200 (cf. thesis Figs. 58-59)",
                 fontsize="medium")
    _save(fig, out / "arashi_overload_fig58.png")
    return (_table(["run", "class", "p90 admitted (ms)", "refused", "goodput (x C)"], rows)
            + f"\nFigures from {first:g} s to {last:g} s, while both classes are there; a "
            "label with `,classes` runs with `--class-cookie tier` (low: tier=0, high: "
            "tier=9), without it every request is one class.\n")


# frontdoor -------------------------------------------------------------------------------------

def frontdoor_phases(setup: Setup) -> tuple[Phases, float, float]:
    """A few Markov users all along (below capacity), and a crowd of search-only users."""
    base, length, after, users, crowd = ((1.5, 3.0, 1.5, 2, 12) if setup.quick
                                         else (20.0, 60.0, 20.0, 4, 600))
    return ([(base, {USERS.name: users}), (length, {USERS.name: users, SEARCHERS.name: crowd}),
             (after, {USERS.name: users})], base + (1.0 if setup.quick else 5.0), base + length)


def frontdoor_runs(setup: Setup, labels: list[str]) -> list[Run]:
    phases, _, _ = frontdoor_phases(setup)
    return [Run(label, controller(label, setup.target), [USERS, SEARCHERS], phases)
            for label in labels]


def frontdoor_report(setup: Setup, runs: list[Run], out: Path) -> str:
    _, first, last = frontdoor_phases(setup)
    plt = _plt()
    fig, (ax_r, ax_p) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
    width = 0.8 / max(1, len(runs))
    rows = []
    for i, run in enumerate(runs):
        types = window(run, setup, first, last, USERS.name)["types"]
        search = window(run, setup, first, last, SEARCHERS.name)["types"].get("search", {})
        xs = [j + i * width for j in range(len(TYPES) + 1)]
        ax_r.bar(xs, [types.get(t, {}).get("refused") or 0.0 for t in TYPES]
                 + [search.get("refused") or 0.0], width, label=run.label)
        ax_p.bar(xs, [types.get(t, {}).get("p90_ms") or 0.0 for t in TYPES]
                 + [search.get("p90_ms") or 0.0], width, label=run.label)
        w = window(run, setup, first, last, USERS.name)
        rows.append([run.label, w["p90_ms"], w["refused"], search.get("p90_ms"),
                     search.get("refused"), w["goodput"]])
    ticks = [j + width * (len(runs) - 1) / 2 for j in range(len(TYPES) + 1)]
    ax_p.set_xticks(ticks, [*TYPES, "crowd's\nsearch"])
    ax_r.set_ylabel("fraction refused")
    ax_p.set_ylabel("p90 of admitted (ms)")
    ax_p.set_yscale("log")
    ax_p.axhline(setup.target * 1000, color="grey", ls="--", lw=0.8)
    ax_r.legend(fontsize="x-small")
    fig.suptitle("Per request type or at the front door, while searches overload "
                 "(the Markov users' requests)", fontsize="medium")
    _save(fig, out / "arashi_overload_frontdoor.png")
    return (_table(["admission", "users' p90 (ms)", "users' refused", "crowd's search p90 (ms)",
                    "crowd's search refused", "users' goodput (answers/s)"], rows)
            + f"\nFigures from {first:g} s to {last:g} s, while the search-only crowd is "
            "there. `NAME@front`: one stage and one controller for every request "
            "(`--admission-at front`).\n"
            + per_type_table(setup, [(r.label, r) for r in runs], first, last,
                             USERS.name))


EXPERIMENTS: dict[str, Experiment] = {
    "fig52": Experiment("The controller on the folder-list stage during a spike",
                        ("rtc", "bound"), lambda s, ls: spike_runs(ls, s), fig52_report),
    "fig53": Experiment("p90 and refusals against users", ("none", "rtc", "bound"),
                        lambda s, ls: steady_runs(ls, s, (2, 8) if s.quick else FIG53_USERS),
                        fig53_report),
    "fig54": Experiment("p90 per request type with control", ("rtc", "bound"),
                        lambda s, ls: steady_runs(ls, s, (2, 8) if s.quick else FIG54_USERS),
                        fig54_report),
    "fig55": Experiment("Every controller on the same massive spike",
                        ("none", "rtc", "bound", "queue-delay", "concurrency"),
                        lambda s, ls: spike_runs(ls, s), fig55_report),
    "fig56": Experiment("Service degradation", ("none", "degrade", "degrade+rtc"),
                        lambda s, ls: spike_runs(ls, s), fig56_report),
    "fig58": Experiment("Two classes of users", ("rtc", "rtc,classes", "bound",
                                                  "bound,classes"), fig58_runs, fig58_report),
    "frontdoor": Experiment("Per request type or at the front door",
                            ("bound", "bound@front", "rtc", "rtc@front"), frontdoor_runs,
                            frontdoor_report),
}

# the full runs' length, for --help and docs/control.md: seconds of load per run, runs
FULL = {"fig52": (120, 2), "fig53": (80, 21), "fig54": (80, 4), "fig55": (120, 5),
        "fig56": (120, 3), "fig58": (300, 4), "frontdoor": (100, 4)}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.arashi_overload",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="\n".join(f"  {n:10s} {e.title}: {', '.join(e.labels)}"
                                                 for n, e in EXPERIMENTS.items()))
    p.add_argument("--experiment", required=True, choices=sorted(EXPERIMENTS))
    p.add_argument("--quick", action="store_true",
                   help="a few seconds a run: 2 accounts of up to 40 messages, a few users, "
                   "target 100 ms, back-off 0.5 s, to check that it works")
    p.add_argument("--admission", help="comma-separated runs of the experiment to do "
                   "(default: all of them, listed below)")
    p.add_argument("--target-ms", type=float, help="p90 target (default 1000; --quick 100)")
    p.add_argument("--backoff", type=float, help="seconds a refused user waits (default 5, as "
                   "the thesis's client; --quick 0.5)")
    p.add_argument("--on-refusal", choices=("login", "reload"), default="login",
                   help="what a refused user does after its back-off: log in again (default, "
                   "the thesis's client) or reload the page it was refused (its session is "
                   "still good)")
    p.add_argument("--server-threads", type=int, metavar="N",
                   help="arashi serve --threads N: most threads of each stage (default: "
                   "Arashi's, 8)")
    p.add_argument("--accounts", type=int, default=128)
    p.add_argument("--max-messages", type=int, default=4000)
    p.add_argument("--capacity-users", type=int, default=64,
                   help="users of the capacity run (default 64, past the knee of Fig. 47)")
    p.add_argument("--data", help="reuse (or make) this data directory")
    p.add_argument("--out", help="directory of the results (default docs/results)")
    p.add_argument("--seed", type=int, default=1)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    experiment = EXPERIMENTS[args.experiment]
    if args.quick:
        args.accounts, args.max_messages, args.capacity_users = 2, 40, 4
    labels = args.admission.split(",") if args.admission else list(experiment.labels)
    unknown = [label for label in labels if label not in experiment.labels]
    if unknown:
        print(f"{args.experiment} has no run {', '.join(unknown)} (it has "
              f"{', '.join(experiment.labels)})", file=sys.stderr)
        return 2
    setup = Setup(target=(args.target_ms or (100.0 if args.quick else 1000.0)) / 1000,
                  backoff=args.backoff if args.backoff is not None else (
                      0.5 if args.quick else 5.0),
                  relogin=args.on_refusal == "login", accounts=args.accounts,
                  arrival=0.2 if args.quick else 1.0, quick=args.quick,
                  threads=[] if args.server_threads is None else
                  ["--threads", str(args.server_threads)])
    if two_cores():
        os.sched_setaffinity(0, {1})
    out = Path(args.out) if args.out else RESULTS
    out.mkdir(parents=True, exist_ok=True)
    tmp = None
    if args.data:
        setup.data = Path(args.data)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="arashi-data-")
        setup.data = Path(tmp.name)
    try:
        if not (setup.data / "arashi.db").exists():
            t = time.perf_counter()
            n = make_data(setup.data, args.accounts, args.max_messages)
            print(f"made {args.accounts} accounts with {n} messages in "
                  f"{time.perf_counter() - t:.1f} s", flush=True)
        setup.capacity = measure_capacity(setup, args.capacity_users)
        print(f"capacity C = {setup.capacity:.1f} successful answers/s "
              f"({args.capacity_users} users, no admission control)", flush=True)
        runs = experiment.runs(setup, labels)
        for i, run in enumerate(runs):
            execute(setup, run, args.seed + i)
            print(f"  {run.label}: {len(run.result['rows'])} answers", flush=True)
        text = experiment.report(setup, runs, out)
    finally:
        if tmp is not None:
            tmp.cleanup()
    name = f"arashi_overload_{args.experiment}"
    text = f"# {experiment.title} (Arashi, issue 17)\n\n{_setup_line(setup)}\n\n{text}"
    print(text)
    (out / f"{name}.md").write_text(text)
    doc = {"experiment": args.experiment, "quick": args.quick, "target_s": setup.target,
           "backoff_s": setup.backoff, "on_refusal": args.on_refusal,
           "capacity": setup.capacity, "accounts": setup.accounts,
           "server_threads": args.server_threads,
           "runs": [{k: v for k, v in run.result.items() if k != "rows"} for run in runs]}
    (out / f"{name}.json").write_text(json.dumps(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
