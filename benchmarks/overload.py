"""Shared parts of the overload experiments: an open-loop load generator, per-second bins of
what happened, and the plots and tables the scripts write into docs/results/.

The bottleneck stage sleeps for its service time instead of burning CPU, as a database call
would; that leaves the CPU to the load generator, which shares the interpreter.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import seda
from results import result_path
from seda.profile.sampler import rss_bytes


class Request:
    """One arrival: its class (0 = low priority) and when it was generated."""

    __slots__ = ("born", "cls")

    def __init__(self, cls: int, born: float) -> None:
        self.cls, self.born = cls, born


class Sleeper(seda.EventHandler):
    """The bottleneck: ``service`` seconds per event, times ``quality`` (1 = full service)."""

    def __init__(self, service: float) -> None:
        self.service = service
        self.quality = 1.0

    def handle_event(self, ev: Request) -> None:
        time.sleep(self.service * self.quality)


@dataclass
class Bin:
    admitted: dict[int, int] = field(default_factory=dict)
    rejected: dict[int, int] = field(default_factory=dict)
    responses: dict[int, list[float]] = field(default_factory=dict)
    queue: int = 0
    rss: int = 0
    control: dict = field(default_factory=dict)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Run:
    """Open-loop Poisson arrivals into ``stage`` following ``phases`` — a list of
    ``(seconds, {class: rate})`` — recording one Bin per second."""

    def __init__(self, stage: seda.Stage, phases: list[tuple[float, dict[int, float]]],
                 seed: int = 1, probe: Any = None) -> None:
        self.stage, self.phases, self.probe = stage, phases, probe
        self.rng = random.Random(seed)
        self.duration = sum(p[0] for p in phases)
        self.bins = [Bin() for _ in range(math.ceil(self.duration) + 1)]
        self.t0 = 0.0
        stage.observe(self._observe)

    def _observe(self, events: list, waits: list, responses: list) -> None:
        b = self.bins[min(len(self.bins) - 1, int(time.monotonic() - self.t0))]
        for ev, r in zip(events, responses, strict=True):
            b.responses.setdefault(ev.cls, []).append(r)

    def phase_rates(self, t: float) -> dict[int, float]:
        for seconds, rates in self.phases:
            if t < seconds:
                return rates
            t -= seconds
        return {}

    def go(self) -> Run:
        """Generate the load; returns when the last phase ends."""
        sink, rng = self.stage.sink, self.rng
        self.t0 = start = time.monotonic()
        due: dict[int, float] = {}
        second = -1
        while (t := time.monotonic() - start) < self.duration:
            if int(t) != second:
                second = int(t)
                self._snapshot(second)
            rates = {cls: rate for cls, rate in self.phase_rates(t).items() if rate > 0}
            for cls in [c for c in due if c not in rates]:
                del due[cls]                    # a class that falls silent starts afresh
            b = self.bins[second]
            for cls, rate in rates.items():
                nxt = due.get(cls, t)
                while nxt <= t:
                    ok = sink.enqueue_lossy(Request(cls, start + nxt))
                    counts = b.admitted if ok else b.rejected
                    counts[cls] = counts.get(cls, 0) + 1
                    nxt += rng.expovariate(rate)
                due[cls] = nxt
            time.sleep(0.001)       # the generator's tick: arrivals due within it go together
        return self

    def _snapshot(self, second: int) -> None:
        b = self.bins[second]
        b.queue, b.rss = len(self.stage.sink), rss_bytes()
        if self.probe is not None:
            b.control = self.probe()

    # -- summaries -----------------------------------------------------------------------------

    def window(self, first: float, last: float) -> list[Bin]:
        return self.bins[int(first):int(last)]

    def summary(self, first: float, last: float, capacity: float, cls: int | None = None) -> dict:
        """Figures over seconds [first, last): p90 of admitted, goodput, rejections, queue."""
        bins = self.window(first, last)

        def pick(counts: dict) -> int:
            return sum(counts.values()) if cls is None else counts.get(cls, 0)

        responses = [r for b in bins for c, rs in b.responses.items()
                     if cls is None or c == cls for r in rs]
        admitted = sum(pick(b.admitted) for b in bins)
        rejected = sum(pick(b.rejected) for b in bins)
        seconds = max(1, len(bins))
        return {
            "p90_ms": percentile(responses, 0.9) * 1000,
            "goodput": len(responses) / seconds / capacity,
            "rejected": rejected / max(1, admitted + rejected),
            "max_queue": max((b.queue for b in bins), default=0),
            "rss_growth_mb": (bins[-1].rss - bins[0].rss) / 2**20 if bins else 0.0,
        }


class _Loopback(Sleeper):
    """A Sleeper that sends each event back to itself, so its queue is never empty."""

    looping = True

    def init(self, ctx: seda.StageContext) -> None:
        self.own = ctx.stage.sink

    def handle_event(self, ev: Request) -> None:
        super().handle_event(ev)
        if self.looping:
            self.own.enqueue(ev)


def capacity(service: float, seconds: float = 2.0) -> float:
    """Events per second a one-thread Sleeper stage handles when it is never idle."""
    handler = _Loopback(service)
    with seda.Runtime() as rt:
        stage = rt.add_stage("probe", handler, batch=1)
        stage.sink.enqueue_many([Request(0, 0.0), Request(0, 0.0)])
        start, before = time.monotonic(), stage.processed
        time.sleep(seconds)                        # the measurement interval itself
        rate = (stage.processed - before) / (time.monotonic() - start)
        handler.looping = False
    return rate


def series(run: Run, cls: int | None = None) -> dict[str, list[float]]:
    """Per-second p90 (ms), admitted and rejected per second, for plotting."""
    out: dict[str, list[float]] = {"t": [], "p90_ms": [], "admitted": [], "rejected": []}
    for i, b in enumerate(run.bins[:int(run.duration)]):
        rs = [r for c, v in b.responses.items() if cls is None or c == cls for r in v]
        out["t"].append(i)
        out["p90_ms"].append(percentile(rs, 0.9) * 1000)
        out["admitted"].append(sum(b.admitted.values()) if cls is None else b.admitted.get(cls, 0))
        out["rejected"].append(sum(b.rejected.values()) if cls is None else b.rejected.get(cls, 0))
    return out


def write_table(name: str, header: list[str], rows: list[list[Any]], note: str = "") -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [f"{c:.2f}" if isinstance(c, float) else str(c) for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n" + (f"\n{note}\n" if note else "")
    result_path(f"{name}.md").write_text(text)
    print(text)
    return text


def figure(rows: int, title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, 1, sharex=True, figsize=(9, 2.6 * rows), squeeze=False)
    fig.suptitle(title, fontsize="medium")
    return fig, [a[0] for a in axes]


def save(fig, name: str) -> Path:
    import matplotlib.pyplot as plt

    path = result_path(f"{name}.png")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    print(f"wrote {path}")
    return path
