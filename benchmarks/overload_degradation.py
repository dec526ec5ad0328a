"""Thesis Fig. 56-57: service degradation alone, and with admission control at the bottom.

    python benchmarks/overload_degradation.py [--target-ms 50]

A stage whose work scales with a quality factor (1 = full, at least 0.1) meets a spike of 20x
its full-quality capacity, more than even the lowest quality can serve. A Degrader lowers the
quality while the p90 exceeds the target; in the second run it also turns admission control on
once quality is at its lowest. Writes docs/results/overload_degradation.{png,md}.
"""

from __future__ import annotations

import argparse

import seda
from overload import Run, Sleeper, capacity, figure, save, series, write_table
from seda.control import Degrader, ResponseTimeController

SERVICE = 0.002


class Degradable(Sleeper):
    """Service time follows the degrader's quality."""

    def __init__(self, service: float, degrader: Degrader) -> None:
        super().__init__(service)
        self.degrader = degrader

    def handle_event(self, ev):
        self.quality = self.degrader.quality
        super().handle_event(ev)


def run(readmit: bool, c: float, target: float) -> Run:
    ctl = ResponseTimeController(target, enabled=False, rate_max=2 * c)
    # halve quality every 0.25 s: from full to the floor in about a second, before a 20x
    # open-loop spike has queued more than the lowest quality can drain
    degrader = Degrader(ctl, min_quality=0.1, decrease=0.5, period=0.25, readmit=readmit)
    phases = [(5.0, {0: 0.5 * c}), (30.0, {0: 20 * c}), (10.0, {0: 0.5 * c})]
    with seda.Runtime() as rt:
        stage = rt.add_stage("bottleneck", Degradable(SERVICE, degrader), batch=1, predicate=ctl)
        rt.add_controller(degrader)
        result = Run(stage, phases, probe=lambda: {**ctl.state(), **degrader.state()}).go()
        rt.stop(timeout=1.0)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target-ms", type=float, default=50.0)
    args = parser.parse_args()
    target = args.target_ms / 1000
    c = capacity(SERVICE)
    runs = {"degradation only (Fig. 56)": run(False, c, target),
            "degradation + admission control (Fig. 57)": run(True, c, target)}

    fig, (ax_p, ax_q) = figure(2, "Fig. 56-57: service degradation under a 20x spike")
    rows = []
    for name, result in runs.items():
        ser = series(result)
        ax_p.plot(ser["t"], ser["p90_ms"], label=name)
        quality = [b.control.get("quality", float("nan")) for b in result.bins[:-1]]
        ax_q.step(range(len(quality)), quality, where="post", label=name)
        s = result.summary(15, 35, c)
        rows.append([name, s["p90_ms"], s["rejected"], s["goodput"],
                     sum(quality[15:35]) / 20, s["max_queue"]])
    ax_p.axhline(args.target_ms, color="grey", ls="--", lw=0.8)
    ax_p.set_yscale("log")
    ax_p.set_ylabel("p90 (ms)")
    ax_p.legend(fontsize="small")
    ax_q.set_ylabel("quality")
    ax_q.set_xlabel("time (s); spike from 5 s to 35 s")
    save(fig, "overload_degradation")
    write_table("overload_degradation",
                ["policy", "p90 (ms)", "rejected", "served (x C)", "mean quality", "max queue"],
                rows, f"C = {c:.0f} events/s at full quality; spike of 20C for 30 s; figures from "
                f"15 s to 35 s; target p90 {args.target_ms:.0f} ms.")


if __name__ == "__main__":
    main()
