"""The thesis's runtime microbenchmarks (5.8.2), as ratios to a plain Python queue loop.

    python benchmarks/micro.py [--repeat 5] [--quick]

Every sample of an operation is paired with a sample of the baseline taken just before it: one
iteration of ``q.append(x); f(q.popleft())``, the least any Python queue hand-off can cost. The
table gives the median over ``--repeat`` pairs of the ratio, and the median time. Pairing matters
on shared machines, whose speed drifts by tens of percent within a minute. Targets (issue 2):
enqueue with a predicate <= 5x, one hop between two stages on the shared loop <= 10x.
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import threading
import time
from collections import deque

import seda
from seda.control import QueueThreshold


def baseline(n: int) -> float:
    """Seconds per ``append`` + ``popleft`` + function call."""
    q = deque()
    append, popleft = q.append, q.popleft
    seen = []

    def f(x):
        seen.append(x) if x < 0 else None

    start = time.perf_counter()
    for i in range(n):
        append(i)
        f(popleft())
    return (time.perf_counter() - start) / n


class Idle(seda.EventHandler):
    def handle_events(self, events):
        pass


def enqueue_cost(n: int, blocking: bool, predicate: bool) -> float:
    """Seconds per ``sink.enqueue`` on a stage that is not running (so nothing drains)."""
    rt = seda.Runtime()
    gate = QueueThreshold(10 * n) if predicate else None
    enqueue = rt.add_stage("s", Idle(), blocking=blocking, predicate=gate).sink.enqueue
    start = time.perf_counter()
    for i in range(n):
        enqueue(i)
    elapsed = time.perf_counter() - start
    rt.stop()
    return elapsed / n


class RingStage(seda.EventHandler):
    """Passes each event (hops still to go) to the next stage; signals when all have arrived."""

    def __init__(self, nxt: str, done: threading.Event, tally: list) -> None:
        self.nxt, self.done, self.tally = nxt, done, tally

    def init(self, ctx):
        self.out = ctx.runtime.sink(self.nxt)

    def handle_events(self, events):
        out = self.out
        for ev in events:
            if ev:
                out.enqueue(ev - 1)
            else:
                self.tally[0] -= 1
                if not self.tally[0]:
                    self.done.set()


def ring_cost(stages: int, hops: int, in_flight: int, blocking: bool, batch: int) -> float:
    """Seconds per event per stage crossing, around a ring of ``stages`` stages."""
    done, tally = threading.Event(), [in_flight]
    rt = seda.Runtime()
    for i in range(stages):
        rt.add_stage(f"r{i}", RingStage(f"r{(i + 1) % stages}", done, tally),
                     blocking=blocking, batch=batch)
    rt.start()
    start = time.perf_counter()
    rt.sink("r0").enqueue_many([hops] * in_flight)
    if not done.wait(120):
        raise RuntimeError("ring did not finish")
    elapsed = time.perf_counter() - start
    rt.stop()
    return elapsed / (hops * in_flight)


def measure(fn, repeat: int, n: int) -> tuple[float, float]:
    """Median seconds per operation and median ratio to a baseline sample taken just before."""
    times, ratios = [], []
    for _ in range(repeat):
        gc.collect()
        base = baseline(n)
        secs = fn()
        times.append(secs)
        ratios.append(secs / base)
    return statistics.median(times), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--quick", action="store_true", help="fewer operations per run")
    args = parser.parse_args()
    n = 100_000 if args.quick else 500_000
    hops = 20_000 if args.quick else 100_000

    rows = [
        ("deque append + popleft + call (baseline)", lambda: baseline(n), None),
        ("enqueue, no predicate, shared-loop stage", lambda: enqueue_cost(n, False, False), None),
        ("enqueue, no predicate, thread-pool stage", lambda: enqueue_cost(n, True, False), None),
        ("enqueue, threshold predicate, shared-loop stage",
         lambda: enqueue_cost(n, False, True), 5),
        ("enqueue, threshold predicate, thread-pool stage",
         lambda: enqueue_cost(n, True, True), 5),
        ("hop, ring of 10, shared loop, 1 event", lambda: ring_cost(10, hops, 1, False, 64), 10),
        ("hop, ring of 100, shared loop, 1 event", lambda: ring_cost(100, hops, 1, False, 64), 10),
        ("hop, ring of 10, shared loop, 64 events, batch 1",
         lambda: ring_cost(10, hops // 16, 64, False, 1), None),
        ("hop, ring of 10, shared loop, 64 events, batch 64",
         lambda: ring_cost(10, hops // 16, 64, False, 64), None),
        ("hop, ring of 10, private pools, 1 event",
         lambda: ring_cost(10, hops // 20, 1, True, 64), None),
        ("hop, ring of 100, private pools, 1 event",
         lambda: ring_cost(100, hops // 20, 1, True, 64), None),
        ("hop, ring of 10, private pools, 64 events, batch 1",
         lambda: ring_cost(10, hops // 100, 64, True, 1), None),
        ("hop, ring of 10, private pools, 64 events, batch 64",
         lambda: ring_cost(10, hops // 100, 64, True, 64), None),
    ]
    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"median of {args.repeat} paired runs\n")
    print("| operation | ns | x baseline | target |")
    print("|---|---:|---:|---|")
    for name, fn, target in rows:
        secs, ratio = measure(fn, args.repeat, n)
        met = target is not None and ratio <= target
        verdict = "" if target is None else f"<= {target}x {'ok' if met else 'MISSED'}"
        print(f"| {name} | {secs * 1e9:,.0f} | {ratio:.1f} | {verdict} |", flush=True)


if __name__ == "__main__":
    main()
