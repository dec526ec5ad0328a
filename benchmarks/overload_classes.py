"""Thesis Fig. 58-59: service differentiation between two classes of requests.

    python benchmarks/overload_classes.py [--target-ms 50]

A low-priority class offers 1.5x the stage's capacity throughout; from 10 s to 30 s a
high-priority class offers another 1.5x. Run once with one response-time controller that treats
all requests alike (Fig. 58) and once with the multiclass controller (Fig. 59). Writes
docs/results/overload_classes.{png,md}.
"""

from __future__ import annotations

import argparse

import seda
from overload import Run, Sleeper, capacity, figure, save, series, write_table
from seda.control import MulticlassResponseTimeController, ResponseTimeController

SERVICE = 0.002
LOW, HIGH = 0, 1


def run(multiclass: bool, c: float, target: float) -> Run:
    # rate_max = 2C for both, so neither starts from the default 5000/s (see overload_spike.md)
    if multiclass:
        ctl = MulticlassResponseTimeController(lambda ev: ev.cls, {LOW: target, HIGH: target},
                                               rate_max=2 * c)
    else:
        ctl = ResponseTimeController(target, rate_max=2 * c)
    phases = [(10.0, {LOW: 1.5 * c}), (20.0, {LOW: 1.5 * c, HIGH: 1.5 * c}),
              (10.0, {LOW: 1.5 * c})]
    with seda.Runtime() as rt:
        stage = rt.add_stage("bottleneck", Sleeper(SERVICE), batch=1, predicate=ctl)
        result = Run(stage, phases, probe=ctl.state).go()
        rt.stop(timeout=1.0)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target-ms", type=float, default=50.0)
    args = parser.parse_args()
    target = args.target_ms / 1000
    c = capacity(SERVICE)
    runs = {"one class (Fig. 58)": run(False, c, target),
            "multiclass (Fig. 59)": run(True, c, target)}

    fig, axes = figure(len(runs), "Fig. 58-59: two classes, without and with differentiation")
    rows = []
    for ax, (name, result) in zip(axes, runs.items(), strict=True):
        for cls, label in ((LOW, "low"), (HIGH, "high")):
            ser = series(result, cls)
            offered = [a + r for a, r in zip(ser["admitted"], ser["rejected"], strict=True)]
            share = [r / o if o else float("nan") for r, o in zip(ser["rejected"], offered,
                                                                   strict=True)]
            ax.plot(ser["t"], share, label=f"{label}: fraction rejected")
            s = result.summary(12, 30, c, cls)
            rows.append([name, label, s["rejected"], s["p90_ms"], s["goodput"]])
        ax.set_title(name, fontsize="small")
        ax.set_ylabel("rejected")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize="small")
    axes[-1].set_xlabel("time (s); high class active from 10 s to 30 s")
    save(fig, "overload_classes")
    write_table("overload_classes",
                ["controller", "class", "rejected", "p90 admitted (ms)", "goodput (x C)"], rows,
                f"C = {c:.0f} events/s; each class offers 1.5C; figures from 12 s to 30 s, "
                f"while both are active; target p90 {args.target_ms:.0f} ms for both classes.")


if __name__ == "__main__":
    main()
