"""The thesis's Fig. 41 and 42 redone (6.2.3, issue 15): every query sleeps 20 ms in the
router (``--query-delay-ms 20``); the thesis's traffic mix (15 % queries, see
benchmarks/gnutella_load.py) at 100, 200, 400 and 1000 descriptors/s; the latency of pings and
queries with one router thread (``--router-threads 1``), with the thesis's thread pool rule
(``--thesis-controller``) and with ours; and the router stage's queue length and threads over
time at 1000/s under both controllers, from the router's own profile (``--profile``), set beside
Little's law (and the controller's own measure of it, the threads busy on average) and
``python -m seda.model plan``.

    python -m benchmarks.gnutella_conditioning [--duration 20] [--repeat 3] [--quick]

Router on core 0, generator on core 1. Writes docs/results/gnutella_fig41.{md,json,png} and
gnutella_fig42*.jsonl and gnutella_fig42.png (``--quick``: short runs, nothing written).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.gnutella_load import load, pin_to_core_1, router
from benchmarks.results import result_path

RATES = (100, 200, 400, 1000)
DELAY_MS = 20
QUERY_SHARE = 0.15
MODES = {"one thread": ["--router-threads", "1"],
         "thesis's controller": ["--thesis-controller"], "controller": []}
ROUTER = "gnutella.router"


def profile_series(path: Path) -> list[dict[str, float]]:
    """The router stage's queue and threads at each profiler sample, and the threads busy on
    average over the controller's last period (0 without a controller)."""
    out = []
    for line in path.read_text().splitlines():
        sample = json.loads(line)
        stage = sample["stages"][ROUTER]
        busy = stage.get("control", {}).get("threads", {}).get("busy", 0.0)
        out.append({"t": sample["t"], "queue": stage["queue"], "threads": stage["threads"],
                    "busy": busy})
    return out


def plan(path: Path, target: float) -> dict[str, Any]:
    """``python -m seda.model plan`` on the router's profile, for ``target`` descriptors/s
    entering the router: its text, and the router's row from its JSON."""
    args = [sys.executable, "-m", "seda.model", "plan", str(path), "--target", str(target),
            "--entry", ROUTER]
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    data = json.loads(subprocess.run([*args, "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    row = next(s for s in data["stages"] if s["name"] == ROUTER)
    return {"text": text, "router": row}


def one(mode: str, rate: float, duration: float, seed: int, keep: Path | None
        ) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "router.jsonl"
        args = ["--query-delay-ms", str(DELAY_MS), "--profile", str(profile),
                "--profile-interval", "0.1", *MODES[mode]]
        with router(*args) as (address, status):
            r = load(address, rate, duration, connections=4, drain=5.0, seed=seed,
                     status=status)
        series = profile_series(profile)
        during = [s for s in series if s["t"] <= series[0]["t"] + duration + 1] or series
        row = {"mode": mode, "rate": rate, "loss": r.loss, "shed": r.router.get("shed", 0),
               "ping": r.latency.get("ping", {}), "query": r.latency.get("query", {}),
               "max_threads": max(s["threads"] for s in series),
               "mean_threads": statistics.fmean(s["threads"] for s in during),
               "busy": statistics.fmean(s["busy"] for s in during),
               "max_queue": max(s["queue"] for s in series)}
        if keep is not None:
            keep.write_bytes(profile.read_bytes())
    print(f"{mode} {rate}/s: {r.summary()}\n  threads max {row['max_threads']}, "
          f"queue max {row['max_queue']}", flush=True)
    return row


def median_rows(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(runs[0])
    for key in ("loss", "shed", "max_threads", "mean_threads", "busy", "max_queue"):
        out[key] = statistics.median(r[key] for r in runs)
    for kind in ("ping", "query"):
        out[kind] = {p: statistics.median(r[kind].get(p, float("nan")) for r in runs)
                     for p in ("mean", "p50", "p90", "p99", "max")}
        out[kind + "_runs"] = [r[kind].get("mean", float("nan")) for r in runs]
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| router | offered /s | ping mean ms | ping p90 ms | query mean ms | "
             "query p90 ms | lost | threads: mean (max) | busy | Little's law λpL | "
             "queue (max) | runs: query mean ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        runs = ", ".join(f"{m:.1f}" for m in r["query_runs"])
        lines.append(f"| {r['mode']} | {r['rate']} | {r['ping']['mean']:.1f} | "
                     f"{r['ping']['p90']:.1f} | {r['query']['mean']:.1f} | "
                     f"{r['query']['p90']:.1f} | {r['loss']:.1%} | "
                     f"{r['mean_threads']:.1f} ({r['max_threads']:g}) | {r['busy']:.1f} | "
                     f"{r['rate'] * QUERY_SHARE * DELAY_MS / 1000:.1f} | "
                     f"{r['max_queue']:g} | {runs} |")
    return "\n".join(lines)


def plot41(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(MODES), figsize=(14, 4), sharey=True)
    for ax, mode in zip(axes, MODES, strict=True):
        mine = [r for r in rows if r["mode"] == mode]
        x = [r["rate"] for r in mine]
        for kind, colour in (("ping", "tab:blue"), ("query", "tab:red")):
            ax.plot(x, [r[kind]["mean"] for r in mine], "o-", color=colour,
                    label=f"{kind} mean")
            ax.plot(x, [r[kind]["p90"] for r in mine], "x--", color=colour,
                    label=f"{kind} p90")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(x, [str(v) for v in x])
        ax.set_xlabel("offered load (descriptors/s)")
        ax.set_title(f"({'abc'[list(MODES).index(mode)]}) {mode}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("latency (ms)")
    axes[0].legend()
    fig.suptitle(f"Gnutella router, {DELAY_MS} ms per query, 15 % queries (thesis Fig. 41)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot42(runs: dict[str, list[dict[str, float]]], path: Path, duration: float) -> None:
    """One panel per controller: the queue, the threads, and the threads busy on average."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 1, figsize=(8, 3.4 * len(runs)))
    top = max(s["threads"] for series in runs.values() for s in series) + 1
    for ax, (mode, series) in zip(axes, runs.items(), strict=True):
        t0 = series[0]["t"]
        t = [s["t"] - t0 for s in series]
        ax.plot(t, [s["queue"] for s in series], color="tab:blue", label="queue length")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("router queue (descriptors)")
        ax.axvline(duration, color="grey", lw=0.8, ls=":")
        ax2 = ax.twinx()
        ax2.step(t, [s["threads"] for s in series], where="post", color="tab:red",
                 label="threads")
        ax2.plot(t, [s["busy"] for s in series], color="tab:orange", lw=0.8,
                 label="threads busy (Little's law, measured)")
        ax2.axhline(1000 * QUERY_SHARE * DELAY_MS / 1000, color="tab:orange", ls="--", lw=0.8)
        ax2.set_ylabel("threads", color="tab:red")
        ax2.set_ylim(0, top)
        ax.set_title(f"GnutellaRouter at 1000 descriptors/s: {mode} (Fig. 42)")
        handles = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
        ax.legend(handles=handles, loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(prog="python -m benchmarks.gnutella_conditioning",
                                  description=__doc__.split("\n\n")[0])
    cli.add_argument("--duration", type=float, default=20, help="seconds per point")
    cli.add_argument("--repeat", type=int, default=3, help="runs per point (medians)")
    cli.add_argument("--quick", action="store_true",
                     help="1 s at 100 and 1000/s, once, nothing written (a smoke test)")
    args = cli.parse_args(argv)
    pin_to_core_1()
    rates, duration, repeat = ((100, 1000), 1.0, 1) if args.quick else (
        RATES, args.duration, args.repeat)
    rows = []
    # the first run at 1000/s of each controller keeps its profile, for Fig. 42
    profiles = {"controller": "gnutella_fig42.jsonl",
                "thesis's controller": "gnutella_fig42_thesis.jsonl"}
    for mode in MODES:
        for rate in rates:
            keep = (result_path(profiles[mode])
                    if mode in profiles and rate == 1000 and not args.quick else None)
            runs = [one(mode, rate, duration, k, keep if k == 0 else None)
                    for k in range(repeat)]
            rows.append(median_rows(runs))
    print(table(rows))
    if args.quick:
        return 0
    fig42 = {mode: profile_series(result_path(name)) for mode, name in profiles.items()}
    planned = plan(result_path(profiles["controller"]), 1000)
    summary: dict[str, Any] = {"rows": rows, "plan": planned["router"],
                               "little": 1000 * QUERY_SHARE * DELAY_MS / 1000, "fig42": {}}
    for mode, series in fig42.items():
        during = [s for s in series if s["t"] - series[0]["t"] <= duration]
        summary["fig42"][mode] = {
            "threads_max": max(s["threads"] for s in series),
            "threads_mean": statistics.fmean(s["threads"] for s in during),
            "threads_end": series[-1]["threads"],
            "busy_mean": statistics.fmean(s["busy"] for s in during[2:] or during)}
    result_path("gnutella_fig41.json").write_text(json.dumps(summary, indent=1))
    plot41(rows, result_path("gnutella_fig41.png"))
    plot42({m: fig42[m] for m in ("thesis's controller", "controller")},
           result_path("gnutella_fig42.png"), duration)
    runs42 = "".join(
        f"- {mode}: threads mean {f['threads_mean']:.1f} while loaded, most {f['threads_max']},"
        f" {f['threads_end']} at the end; threads busy on average {f['busy_mean']:.2f}\n"
        for mode, f in summary["fig42"].items())
    text = (f"# Gnutella router under a 20 ms query delay (thesis Fig. 41, 42)\n\n"
            f"`--query-delay-ms {DELAY_MS}`, 4 connections, {duration:g} s per point, "
            f"{repeat} runs per point (medians; the last column shows each run). Router on "
            f"core 0, generator on core 1. Threads: the pool's size at each 0.1 s profile "
            f"sample; busy: the threads in batches on average, the controller's measure of "
            f"Little's law.\n\n{table(rows)}\n\n"
            f"Fig. 42 runs (1000/s, the first run of each controller); Little's law "
            f"{summary['little']:.1f}:\n\n{runs42}\n"
            f"`python -m seda.model plan gnutella_fig42.jsonl --target 1000 --entry "
            f"{ROUTER}`:\n\n```text\n{planned['text']}```\n")
    result_path("gnutella_fig41.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
