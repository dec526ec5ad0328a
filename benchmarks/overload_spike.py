"""Thesis Fig. 52 and 55: a bottleneck stage hit by an open-loop spike of 20x its capacity, with
the thesis's response-time controller, without control, and with modern admission predicates.

    python benchmarks/overload_spike.py [--spike 30] [--target-ms 50] [--only NAME,...]

Writes docs/results/overload_spike.png (p90 and admission over time), overload_compare.png and
overload_spike.md (figures over the settled part of the spike, from 10 s into it to its end).
"""

from __future__ import annotations

import argparse

import seda
from overload import Run, Sleeper, capacity, figure, save, series, write_table
from seda.control import (
    RED,
    AdaptiveConcurrency,
    QueueDelay,
    QueueThreshold,
    ResponseTimeController,
    TokenBucket,
)

SERVICE = 0.002     # seconds per event: a capacity of about 450 events/s on this machine


def predicates(c: float, target: float) -> dict:
    """Each contender built from the same two facts: capacity c and the p90 target."""
    return {
        "none": lambda: None,
        "thesis RTC (Fig. 50 defaults)": lambda: ResponseTimeController(target),
        "thesis RTC (rate_max 2C)": lambda: ResponseTimeController(target, rate_max=2 * c),
        "queue threshold (C x target)": lambda: QueueThreshold(max(1, int(c * target))),
        "token bucket at C": lambda: TokenBucket(c, depth=max(1.0, c * 0.05)),
        "RED": lambda: RED(min_th=int(c * target / 2), max_th=int(c * target * 1.5)),
        "CoDel-style queue delay": lambda: QueueDelay(target=target / 2, interval=target),
        "adaptive concurrency": lambda: AdaptiveConcurrency(),
    }


def probe(stage: seda.Stage):
    def snapshot() -> dict:
        ctl = stage.sink.predicate
        return ctl.state() if hasattr(ctl, "state") else {}
    return snapshot


def run_one(name: str, make, c: float, spike: float) -> Run:
    phases = [(5.0, {0: 0.5 * c}), (spike, {0: 20 * c}), (10.0, {0: 0.5 * c})]
    with seda.Runtime() as rt:
        stage = rt.add_stage("bottleneck", Sleeper(SERVICE), batch=1, predicate=make())
        run = Run(stage, phases, probe=probe(stage)).go()
        rt.stop(timeout=1.0)         # "none" has far more queued than it could ever drain
    print(f"  {name}: done")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spike", type=float, default=30.0, help="spike length, s")
    parser.add_argument("--target-ms", type=float, default=50.0, help="p90 target, ms")
    parser.add_argument("--only", default="", help="comma-separated contenders to run")
    args = parser.parse_args()
    target = args.target_ms / 1000
    c = capacity(SERVICE)
    print(f"capacity C = {c:.0f} events/s; spike 20C = {20 * c:.0f}/s for {args.spike:.0f} s")
    contenders = predicates(c, target)
    chosen = [n for n in contenders if not args.only or n in args.only.split(",")]
    runs = {name: run_one(name, contenders[name], c, args.spike) for name in chosen}

    first, last = 5 + 10, 5 + args.spike
    rows = []
    for name, run in runs.items():
        s = run.summary(first, last, c)
        ok = s["p90_ms"] <= 1.5 * args.target_ms and s["goodput"] >= 0.8
        rows.append([name, s["p90_ms"], s["goodput"], s["rejected"], s["max_queue"],
                     s["rss_growth_mb"], "yes" if ok else "no"])
    note = (f"C = {c:.0f} events/s (one thread, {SERVICE * 1000:.0f} ms each); spike of 20C "
            f"for {args.spike:.0f} s after 5 s at 0.5C; figures from {first} s to "
            f"{last:.0f} s; target p90 {args.target_ms:.0f} ms; targets: p90 <= 1.5x target, "
            "goodput >= 0.8C.")
    write_table("overload_spike",
                ["admission", "p90 admitted (ms)", "goodput (x C)", "rejected", "max queue",
                 "RSS growth (MB)", "meets targets"], rows, note)

    if "thesis RTC (Fig. 50 defaults)" in runs:
        fig, (ax_p, ax_r) = figure(2, "Fig. 52/55: 20x spike, thesis controller vs none")
        for name in ("none", "thesis RTC (Fig. 50 defaults)", "thesis RTC (rate_max 2C)"):
            if name in runs:
                ser = series(runs[name])
                ax_p.plot(ser["t"], ser["p90_ms"], label=name)
        ax_p.axhline(args.target_ms, color="grey", ls="--", lw=0.8)
        ax_p.set_yscale("log")
        ax_p.set_ylabel("p90 of completions (ms)")
        ax_p.legend(fontsize="small")
        for name in ("thesis RTC (Fig. 50 defaults)", "thesis RTC (rate_max 2C)"):
            if name in runs:
                rates = [b.control.get("rate", float("nan")) for b in runs[name].bins[:-1]]
                ax_r.plot(range(len(rates)), rates, label=f"{name}: admission rate")
                ax_r.plot(series(runs[name])["t"], series(runs[name])["admitted"], ls=":",
                          label=f"{name}: admitted/s")
        ax_r.axhline(c, color="grey", ls="--", lw=0.8)
        ax_r.set_yscale("log")
        ax_r.set_ylabel("events/s")
        ax_r.set_xlabel("time (s); spike from 5 s")
        ax_r.legend(fontsize="x-small")
        save(fig, "overload_spike")

    fig, (ax_p, ax_a) = figure(2, "The same spike: every admission policy")
    for name, run in runs.items():
        ser = series(run)
        ax_p.plot(ser["t"], ser["p90_ms"], label=name, lw=1)
        ax_a.plot(ser["t"], [a / c for a in ser["admitted"]], label=name, lw=1)
    ax_p.axhline(args.target_ms, color="grey", ls="--", lw=0.8)
    ax_p.set_yscale("log")
    ax_p.set_ylabel("p90 (ms)")
    ax_a.set_ylabel("admitted (x C)")
    ax_a.set_xlabel("time (s); spike from 5 s")
    ax_p.legend(fontsize="x-small", ncol=2)
    save(fig, "overload_compare")


if __name__ == "__main__":
    main()
