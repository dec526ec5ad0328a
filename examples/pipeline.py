"""A small SEDA service: sentences flow through four stages while live per-stage stats print.

    python examples/pipeline.py [--seconds N] [--rate SENTENCES_PER_S]

    source (timer ticks) -> split (shared loop) -> lookup (4 threads, blocks) -> tally (1 thread)

``lookup`` stands for a slow dependency (2 ms per word). When words arrive faster than its four
threads can look them up, its queue threshold rejects the excess and ``split`` counts it as shed:
the overload shows up as rejections, not as a queue growing without bound.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter

import seda
from seda.control import QueueThreshold

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while",
         "stages", "pass", "events", "along"]


class Source(seda.EventHandler):
    """Each tick makes ``rate / 100`` sentences and schedules the next tick 10 ms later."""

    def init(self, ctx):
        self.rt, self.own = ctx.runtime, ctx.stage.sink
        self.out = ctx.runtime.sink("split")
        self.per_tick = max(1, ctx.params["rate"] // 100)
        self.dropped = 0

    def handle_event(self, tick):
        for _ in range(self.per_tick):
            if not self.out.enqueue_lossy(" ".join(random.choices(WORDS, k=8))):
                self.dropped += 1
        self.rt.timer.schedule(0.01, self.own, tick + 1)


class Split(seda.EventHandler):
    def init(self, ctx):
        self.out = ctx.runtime.sink("lookup")
        self.shed = 0

    def handle_event(self, sentence):
        try:
            self.out.enqueue_many(sentence.split())
        except seda.RejectedError:
            self.shed += 1          # overload: drop the whole sentence, never half of it


class Lookup(seda.EventHandler):
    def init(self, ctx):
        self.out = ctx.runtime.sink("tally")

    def handle_event(self, word):
        time.sleep(0.002)           # a blocking call: this is why the stage has its own pool
        self.out.enqueue((word, len(word)))


@seda.single_threaded
class Tally(seda.EventHandler):
    def __init__(self):
        self.counts = Counter()

    def handle_events(self, events):
        self.counts.update(word for word, _ in events)


def show(rt: seda.Runtime, started: float, shed: int, out) -> None:
    rows = rt.stats()
    lines = [f"pyseda pipeline, {time.monotonic() - started:5.1f} s   sentences shed: {shed}",
             f"{'stage':8} {'queue':>6} {'threads':>7} {'processed':>10} {'rejected':>9} "
             f"{'errors':>6} {'p90 ms':>7}"]
    for name, s in rows.items():
        lines.append(f"{name:8} {s['queue']:6} {s['threads']:7} {s['processed']:10} "
                     f"{s['rejected']:9} {s['errors']:6} {s['p90_ms']:7.2f}")
    if out.isatty():
        out.write("\033[H\033[J")   # redraw in place
    out.write("\n".join(lines) + "\n\n")
    out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=None, help="stop after N s (default: "
                        "run until Ctrl-C)")
    parser.add_argument("--rate", type=int, default=400, help="sentences per second (default 400,"
                        " more than lookup's four threads can take)")
    args = parser.parse_args(argv)
    if args.rate < 1:
        parser.error("--rate must be at least 1")

    tally = Tally()
    with seda.Runtime() as rt:
        rt.add_stage("tally", tally)
        rt.add_stage("lookup", Lookup(), threads=4, predicate=QueueThreshold(200))
        split = Split()
        rt.add_stage("split", split, blocking=False)
        rt.add_stage("source", Source(), blocking=False, params={"rate": args.rate})
        rt.sink("source").enqueue(0)
        started = time.monotonic()
        try:
            while args.seconds is None or time.monotonic() - started < args.seconds:
                time.sleep(min(1.0, args.seconds or 1.0))
                show(rt, started, split.shed, sys.stdout)
        except KeyboardInterrupt:
            pass
        rt.stage("source").destroy()       # stop producing, then let the rest drain
    print("most common words:", ", ".join(f"{w} {n}" for w, n in tally.counts.most_common(5)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
