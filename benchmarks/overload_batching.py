"""Thesis Fig. 32: the batching controller finds the batch size a handler works best at.

    python benchmarks/overload_batching.py [--seconds 40]

The handler amortises an expensive operation (2 ms) over each batch, costs 5 us per event, and
20 us more per event beyond 200, so its throughput peaks at batches of 200. The stage is always
busy (events are sent back to it). Writes docs/results/overload_batching.{png,md}.
"""

from __future__ import annotations

import argparse
import time

import seda
from overload import figure, save, write_table
from seda.control import BatchingController

EXPENSIVE, PER_EVENT, PENALTY, BEST = 0.002, 5e-6, 20e-6, 200


def burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def ideal(n: int) -> float:
    return n / (EXPENSIVE + PER_EVENT * n + PENALTY * max(0, n - BEST))


class Amortising(seda.EventHandler):
    def init(self, ctx):
        self.own = ctx.stage.sink

    def handle_events(self, events):
        n = len(events)
        burn(EXPENSIVE + PER_EVENT * n + PENALTY * max(0, n - BEST))
        if self.own is not None:
            self.own.enqueue_many(events)


def run(batch, seconds: float, every: float = 0.5) -> list[tuple[float, int, float]]:
    """(time, batch size, events/s) every ``every`` seconds."""
    handler = Amortising()
    samples = []
    with seda.Runtime() as rt:
        stage = rt.add_stage("amortising", handler, batch=batch)
        stage.sink.enqueue_many(range(5000))
        start = last_t = time.monotonic()
        last_n = stage.processed
        while time.monotonic() - start < seconds:
            time.sleep(every)                   # the sampling interval of the experiment
            now, n = time.monotonic(), stage.processed
            samples.append((now - start, stage.batch, (n - last_n) / (now - last_t)))
            last_t, last_n = now, n
        handler.own = None
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args()
    controlled = run(BatchingController(max=1000, period=0.5), args.seconds)
    fixed = {b: run(b, 5.0) for b in (1000, BEST, 50)}

    fig, (ax_b, ax_t) = figure(2, "Fig. 32: batching controller, optimum at 200 events")
    t, batch, rate = zip(*controlled, strict=True)
    ax_b.step(t, batch, where="post")
    ax_b.axhline(BEST, color="grey", ls="--", lw=0.8)
    ax_b.set_ylabel("batch size")
    ax_t.plot(t, rate, label="controlled")
    for b, samples in fixed.items():
        mean = sum(r for *_, r in samples[2:]) / len(samples[2:])
        ax_t.axhline(mean, ls=":", lw=1, label=f"fixed batch {b}", color=f"C{1 + len(ax_t.lines)}")
    ax_t.set_ylabel("events/s")
    ax_t.set_xlabel("time (s)")
    ax_t.legend(fontsize="small")
    save(fig, "overload_batching")

    late = [s for s in controlled if s[0] > args.seconds / 2]
    rows = [["controller (2nd half)", f"{min(b for _, b, _ in late)}-{max(b for _, b, _ in late)}",
             sum(r for *_, r in late) / len(late), ideal(BEST)]]
    for b, samples in fixed.items():
        rows.append([f"fixed {b}", b, sum(r for *_, r in samples[2:]) / len(samples[2:]), ideal(b)])
    write_table("overload_batching", ["batching", "batch size", "events/s", "model events/s"],
                rows, "Model: n / (2 ms + 5 us n + 20 us max(0, n - 200)), peak at n = 200.")


if __name__ == "__main__":
    main()
