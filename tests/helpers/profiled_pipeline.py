"""A small real service to record profiles from: Poisson arrivals at ``parse``, which sends 3 in
20 events to ``query`` (one thread, 18 ms each: the bottleneck, like the thesis's Gnutella
router in 6.2.3) and the rest to ``route`` (on the shared event loop, 0.5 ms of CPU each).
Handlers sleep for their service times, except on the event loop, which must never block.

``python tests/helpers/profiled_pipeline.py`` records ``tests/seda/model/data/pipeline.jsonl``
again.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from pathlib import Path

import seda

PARSE, QUERY, ROUTE = 0.0015, 0.018, 0.0005     # service times, seconds
QUERIES = 3                                     # in every 20 events
DATA = Path(__file__).parents[1] / "seda" / "model" / "data" / "pipeline.jsonl"


class Finished:
    """Counts events leaving the service; ``wait(n)`` blocks until n have."""

    def __init__(self) -> None:
        self.count = 0
        self._cond = threading.Condition()

    def add(self) -> None:
        with self._cond:
            self.count += 1
            self._cond.notify_all()

    def wait(self, n: int, timeout: float) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self.count >= n, timeout):
                raise TimeoutError(f"{self.count} of {n} events finished in {timeout} s")


class Parse(seda.EventHandler):
    def init(self, ctx: seda.StageContext) -> None:
        self.query, self.route = ctx.runtime.sink("query"), ctx.runtime.sink("route")

    def handle_event(self, ev: int) -> None:
        time.sleep(PARSE)
        (self.query if ev % 20 < QUERIES else self.route).enqueue(ev)


class Query(seda.EventHandler):
    def __init__(self, finished: Finished) -> None:
        self.finished = finished

    def handle_event(self, ev: int) -> None:
        time.sleep(QUERY)
        self.finished.add()


class Route(seda.EventHandler):
    def __init__(self, finished: Finished) -> None:
        self.finished = finished

    def handle_event(self, ev: int) -> None:
        end = time.perf_counter() + ROUTE
        while time.perf_counter() < end:
            pass
        self.finished.add()


def record(path: str | Path, rate: float = 100.0, seconds: float = 10.0,
           interval: float = 0.25, seed: int = 7) -> int:
    """Offer Poisson arrivals at ``rate`` for ``seconds`` with the profiler writing to
    ``path``; return how many events were offered. The sleeps between arrivals are the
    workload's pacing; completion is awaited on a condition."""
    rng = random.Random(seed)
    finished = Finished()
    sent = 0
    with seda.Runtime() as rt:
        rt.add_stage("query", Query(finished), threads=1)
        rt.add_stage("route", Route(finished), blocking=False)
        rt.add_stage("parse", Parse(), threads=1)        # last: its init finds the others
        sampler = rt.start_profiler(path, interval=interval)
        start = due = time.monotonic()
        while True:
            due += rng.expovariate(rate)
            if due - start >= seconds:
                break
            time.sleep(max(0.0, due - time.monotonic()))
            rt.sink("parse").enqueue(sent)
            sent += 1
        sampler.stop()
        finished.wait(sent, timeout=30 + seconds)
    return sent


if __name__ == "__main__":
    DATA.parent.mkdir(exist_ok=True)
    DATA.unlink(missing_ok=True)
    print(record(DATA), "events offered;", DATA, file=sys.stderr)
