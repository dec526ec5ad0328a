"""Thesis Fig. 31: thrashing detection in the thread pool controller.

    python benchmarks/overload_thrashing.py [--seconds 40] [--max 128]

One stage, always overloaded (a fixed population of events that each handler sends back to the
stage). Half the events do CPU work; the other half enter a critical section guarded by a
condition variable, block in it for 0.5 ms (a call made while holding a lock), and on leaving
wake every waiter: a thundering herd whose cost grows with the number of threads. The
controller adds a thread whenever more than 100 events wait, so without thrashing detection the
pool grows to its maximum while throughput falls.

Under CPython's GIL a critical section of pure computation is rarely preempted, hence rarely
contended, and blocked waiters cost almost nothing: pools of CPU-bound threads do not thrash the
way the thesis's Java pools did. Contention appears when the lock is held across a blocking call,
which is what this workload does. Writes docs/results/overload_thrashing.{png,md}.
"""

from __future__ import annotations

import argparse
import random
import threading
import time

import seda
from overload import figure, save, write_table
from seda.control import ThreadPoolController

SAMPLE = 0.5


class Contended(seda.EventHandler):
    def __init__(self, work: int = 1000, hold: float = 0.0005) -> None:
        self.work, self.hold = work, hold
        self.cond = threading.Condition()
        self.busy = False
        self.own = None

    def init(self, ctx):
        self.own = ctx.stage.sink

    def compute(self) -> None:
        rnd = random.random
        for _ in range(self.work):
            rnd()

    def handle_event(self, critical: bool) -> None:
        if critical:
            with self.cond:
                while self.busy:
                    self.cond.wait()
                self.busy = True
            time.sleep(self.hold)               # a blocking call made under the lock
            with self.cond:
                self.busy = False
                self.cond.notify_all()          # the thundering herd
        else:
            self.compute()
        if self.own is not None:
            self.own.enqueue_lossy(critical)


def run(detect: bool, seconds: float, most: int) -> list[tuple[float, int, float]]:
    """(time, threads, events/s) every SAMPLE seconds."""
    handler = Contended()
    ctl = ThreadPoolController(max=most, period=0.25, thrash_detect=detect)
    samples = []
    with seda.Runtime() as rt:
        stage = rt.add_stage("contended", handler, threads=ctl, batch=1)
        rng = random.Random(7)
        stage.sink.enqueue_many([rng.random() < 0.5 for _ in range(2000)])
        start = last_t = time.monotonic()
        last_n = stage.processed
        while (now := time.monotonic()) - start < seconds:
            time.sleep(SAMPLE)                  # the sampling interval of the experiment
            now, n = time.monotonic(), stage.processed
            rate = (n - last_n) / (now - last_t)
            samples.append((now - start, stage.manager.thread_count(), rate))
            last_t, last_n = now, n
        handler.own = None                      # stop recirculating; the rest drains
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--max", type=int, default=128, help="the pool's upper bound")
    args = parser.parse_args()
    results = {detect: run(detect, args.seconds, args.max) for detect in (False, True)}

    fig, axes = figure(2, "Fig. 31: thread pool thrashing, (a) without and (b) with detection")
    rows = []
    for ax, detect in zip(axes, (False, True), strict=True):
        t, threads, rate = zip(*results[detect], strict=True)
        ax.plot(t, rate, label="throughput (events/s)")
        ax.set_ylabel("events/s")
        twin = ax.twinx()
        twin.step(t, threads, where="post", color="tab:red", label="threads")
        twin.set_ylabel("threads")
        ax.set_title("with thrashing detection" if detect else "without thrashing detection",
                     fontsize="small")
        late = [r for (tt, _, r) in results[detect] if tt > args.seconds / 2]
        rows.append(["on" if detect else "off", max(threads), threads[-1],
                     sum(late) / len(late), max(rate)])
    axes[-1].set_xlabel("time (s)")
    save(fig, "overload_thrashing")
    write_table("overload_thrashing",
                ["detection", "most threads", "threads at end", "events/s (2nd half)",
                 "best events/s"], rows,
                "One stage always overloaded; half the events enter a critical section whose "
                f"release wakes every waiter. ThreadPoolController(max={args.max}, period=0.25 s).")


if __name__ == "__main__":
    main()
