"""What a run measured: counters kept cheaply during the run, and the Report made from them.

Latencies are counted in a plain dict of microseconds while the run goes (a dict increment costs a
tenth of an HdrHistogram record) and poured into the histogram once, when the report is made.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

HIGHEST_US = 3_600_000_000          # one hour: anything slower is clamped, not dropped


@dataclass
class Errors:
    """Failed requests by cause; a 503 is a rejection (the server shedding load), not a success."""

    refused: int = 0        # connect refused (ECONNREFUSED)
    connect: int = 0        # any other connect failure, e.g. no local port left
    reset: int = 0          # connection reset or closed before the response was complete
    timeout: int = 0        # no complete response within the timeout
    rejected: int = 0       # 503 Service Unavailable
    status: int = 0         # any other status outside 2xx
    protocol: int = 0       # bytes that are not an HTTP response

    @property
    def total(self) -> int:
        return sum(asdict(self).values())


def jain(counts: list[int]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when one has all."""
    square_sum = sum(x * x for x in counts)
    if not counts or not square_sum:
        return 1.0
    return sum(counts) ** 2 / (len(counts) * square_sum)


class Stats:
    """Counters the engine bumps as requests finish."""

    def __init__(self, clients: int) -> None:
        self.latency_us: dict[int, int] = {}
        self.rejected_us: dict[int, int] = {}
        self.ok = 0
        self.bytes = 0
        self.connections = 0
        self.errors = Errors()
        self.per_client = [0] * clients

    def success(self, latency_s: float, client: int) -> None:
        us = int(latency_s * 1e6)
        self.latency_us[us] = self.latency_us.get(us, 0) + 1
        self.ok += 1
        if client >= 0:
            self.per_client[client] += 1

    def rejection(self, latency_s: float) -> None:
        """A 503: counted, and timed apart (a server should refuse at once)."""
        us = int(latency_s * 1e6)
        self.rejected_us[us] = self.rejected_us.get(us, 0) + 1
        self.errors.rejected += 1

    def histogram(self, latency_us: dict[int, int] | None = None) -> HdrHistogram:
        hist = HdrHistogram(1, HIGHEST_US, 3)
        for us, count in (self.latency_us if latency_us is None else latency_us).items():
            hist.record_value(min(max(us, 1), HIGHEST_US), count)
        return hist


def cdf(hist: HdrHistogram) -> list[tuple[float, float]]:
    """Response-time CDF as (ms, fraction of requests at or below), one point per histogram
    bucket in use; read off the counts array, which is far quicker than hdrh's iterators."""
    total = hist.get_total_count()
    points = []
    seen = 0
    for index, count in enumerate(hist.counts):
        if count:
            seen += count
            top = hist.get_highest_equivalent_value(hist.get_value_from_index(index))
            points.append((top / 1000, seen / total))
    return points


@dataclass
class Report:
    """The result of one run. Times are in milliseconds, over successful (2xx) responses only."""

    mode: str
    url: str
    workload: str
    clients: int            # closed loop: clients; open loop: the socket cap
    duration: float         # seconds measured
    requests: int           # successful responses
    throughput: float       # successful responses per second
    mbit_s: float           # response bytes (headers and bodies, all statuses) per second, Mbit
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    errors: Errors
    connections: int        # connections opened
    per_client: list[int] = field(default_factory=list)  # closed loop: successes of each client
    fairness: float | None = None                         # Jain's index over per_client
    offered_rate: float | None = None                     # open loop: the Poisson rate asked for
    cdf: list[tuple[float, float]] = field(default_factory=list)
    rejected_p90_ms: float = 0.0                          # how fast 503s came back
    rejected_max_ms: float = 0.0

    @classmethod
    def from_stats(cls, stats: Stats, *, mode: str, url: str, workload: str, clients: int,
                   duration: float, offered_rate: float | None = None) -> Report:
        hist = stats.histogram()
        refused, refused_n = stats.histogram(stats.rejected_us), stats.errors.rejected
        duration = max(duration, 1e-9)

        def at(p: float) -> float:
            return hist.get_value_at_percentile(p) / 1000 if stats.ok else 0.0

        return cls(
            mode=mode, url=url, workload=workload, clients=clients, duration=duration,
            requests=stats.ok, throughput=stats.ok / duration,
            mbit_s=stats.bytes * 8 / duration / 1e6,
            mean_ms=hist.get_mean_value() / 1000 if stats.ok else 0.0,
            p50_ms=at(50), p90_ms=at(90), p99_ms=at(99),
            max_ms=hist.get_max_value() / 1000 if stats.ok else 0.0,
            errors=stats.errors, connections=stats.connections,
            per_client=list(stats.per_client),
            fairness=jain(stats.per_client) if stats.per_client else None,
            offered_rate=offered_rate, cdf=cdf(hist),
            rejected_p90_ms=refused.get_value_at_percentile(90) / 1000 if refused_n else 0.0,
            rejected_max_ms=refused.get_max_value() / 1000 if refused_n else 0.0)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["errors"]["total"] = self.errors.total
        out["cdf"] = [list(point) for point in self.cdf]
        return out

    def summary(self) -> str:
        e = self.errors
        fair = "" if self.fairness is None else f", fairness {self.fairness:.3f}"
        offered = "" if self.offered_rate is None else f" (offered {self.offered_rate:.0f}/s)"
        return (f"{self.mode} {self.workload} x{self.clients}: {self.throughput:.0f} req/s"
                f"{offered}, {self.mbit_s:.1f} Mbit/s; ms mean {self.mean_ms:.2f} p50 "
                f"{self.p50_ms:.2f} p90 {self.p90_ms:.2f} p99 {self.p99_ms:.2f} max "
                f"{self.max_ms:.2f}; errors {e.total} (refused {e.refused} connect {e.connect} "
                f"reset {e.reset} timeout {e.timeout} rejected {e.rejected} status {e.status} "
                f"protocol {e.protocol}){fair}")

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    def write_cdf(self, path: str | Path) -> None:
        with open(path, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["ms", "fraction"])
            out.writerows(self.cdf)
