"""A discrete-event simulator of the same networks, for what the formulas cannot reach: service
times that are not exponential (the heavy tails of real services, thesis 4.5), percentiles, and
single stages that combine several steps.

Each stage serves first come, first served with ``servers`` threads. A load-dependent stage
shares its rate mu(n) (4.12) equally among the requests in service, so each progresses at
mu(n) / (min(n, m) mu) of its nominal speed; with exponential service that is exactly the
thesis's chain, and with any other distribution it is the same slowdown applied to other work.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .network import JacksonNetwork

#: a distribution's name, or a function drawing one request's work (time at full speed)
Service = str | Callable[[random.Random], float]

#: the shape each named distribution takes when none is given: Erlang phases, lognormal sigma,
#: Pareto tail index (above 2, so the variance and hence the mean queueing delay are finite)
DEFAULT_SHAPE: dict[str, float] = {"erlang": 2, "lognormal": 1.0, "pareto": 2.5}
PERCENTILES = (50, 90, 95, 99)

#: a request in the network: (when it entered the network, when it entered this stage)
_Request = tuple[float, float]


def sampler(name: str, mean: float, shape: float | None = None
            ) -> Callable[[random.Random], float]:
    """A function drawing service times with the given ``mean`` from a named distribution."""
    if name not in ("exponential", "deterministic", *DEFAULT_SHAPE):
        raise ValueError(f"unknown service distribution {name!r}; expected exponential, "
                         "erlang, deterministic, lognormal or pareto")
    if name == "exponential":
        rate = 1 / mean
        return lambda rng: rng.expovariate(rate)
    if name == "deterministic":
        return lambda rng: mean
    k = DEFAULT_SHAPE[name] if shape is None else shape
    if name == "erlang":
        if k != int(k) or k < 1:
            raise ValueError(f"an Erlang distribution has a whole number of phases, got {k!r}")
        return lambda rng: rng.gammavariate(k, mean / k)
    if name == "lognormal":
        if not k > 0:
            raise ValueError(f"a lognormal sigma is > 0, got {k!r}")
        mu_log = math.log(mean) - k * k / 2
        return lambda rng: rng.lognormvariate(mu_log, k)
    if not k > 1:
        raise ValueError(f"a Pareto tail index must exceed 1 for a finite mean, got {k!r}")
    scale = mean * (k - 1) / k
    return lambda rng: scale * rng.paretovariate(k)


def _quantiles(values: list[float], qs: tuple[float, ...]) -> dict[float, float]:
    if not values:
        return {q: math.nan for q in qs}
    values.sort()
    last = len(values) - 1
    out = {}
    for q in qs:
        x = q / 100 * last
        i = int(x)
        out[q] = values[i] if i == last else values[i] + (values[i + 1] - values[i]) * (x - i)
    return out


@dataclass(frozen=True)
class StationStats:
    """One stage over the measured window: requests that finished there, their mean time in
    the stage (queue plus service) and its percentiles, and the time-averaged number present."""

    completed: int
    mean_response: float
    percentiles: dict[float, float]
    mean_jobs: float


@dataclass(frozen=True)
class SimResult:
    """The whole network: time from entry to exit for requests that entered after the
    warm-up, its percentiles, throughput, and per-stage statistics. ``unfinished`` counts the
    measured requests still inside when the run gave up draining (an unstable network)."""

    completed: int
    unfinished: int
    throughput: float
    mean_response: float
    percentiles: dict[float, float]
    stations: dict[str, StationStats]


class _Stage:
    """Simulation state of one stage. Requests in service all run at the same speed, so one
    clock of work done (``done``) and each request's finishing mark on it order completions
    without touching every request when the speed changes."""

    __slots__ = ("area", "done", "draw", "heap", "last", "m", "mark", "n", "queue", "route",
                 "speed", "speeds", "times", "version")

    def __init__(self, m: int, speeds: list[float], draw: Callable[[random.Random], float],
                 route: list[tuple[float, int]]) -> None:
        self.m, self.speeds, self.draw, self.route = m, speeds, draw, route
        self.n = 0
        self.queue: deque[_Request] = deque()
        # (finishing mark, seq, request) for those in service
        self.heap: list[tuple[float, int, _Request]] = []
        self.done = self.last = self.area = 0.0
        self.speed = speeds[0]
        self.version = 0
        # (first mark, speed) of the completion scheduled
        self.mark: tuple[float, float] | None = None
        self.times: list[float] = []


def simulate(net: JacksonNetwork, duration: float, seed: int,
             service: Service | Mapping[str, Service] = "exponential", *,
             shape: float | None = None, warmup: float | None = None,
             percentiles: tuple[float, ...] = PERCENTILES) -> SimResult:
    """Run ``net`` for ``duration`` time units of external arrivals, then let it drain.

    ``service`` is a distribution name for every stage, a function drawing a request's work,
    or a mapping from stage name to either; named distributions have the stage's mean 1/mu and
    take ``shape`` (see :data:`DEFAULT_SHAPE`). Requests entering before ``warmup`` (default a
    tenth of the run) are not measured, nor is time before it in ``mean_jobs``. The same seed
    gives the same result.
    """
    if not duration > 0:
        raise ValueError(f"the duration must be > 0, got {duration!r}")
    warmup = duration / 10 if warmup is None else warmup
    if not 0 <= warmup < duration:
        raise ValueError(f"the warm-up must be in [0, duration), got {warmup!r}")
    if not any(rate > 0 for rate in net.external.values()):
        raise ValueError("no external arrivals: call arrive() first")
    rng = random.Random(seed)
    names = list(net.stations)
    index = {name: i for i, name in enumerate(names)}
    total = net.total_threads
    stages = []
    for name, st in net.stations.items():
        spec = service.get(name, "exponential") if isinstance(service, Mapping) else service
        draw = spec if callable(spec) else sampler(spec, 1 / st.mu, shape)
        speeds = [1.0] + [st.rate(n, total) / (min(n, st.servers) * st.mu)
                          for n in range(1, st.servers + 1)]
        cumulative, route = 0.0, []
        for target, p in net.routes[name].items():
            cumulative += p
            route.append((cumulative, index[target]))
        stages.append(_Stage(st.servers, speeds, draw, route))

    # (time, seq, stage, version or -1 for an arrival)
    events: list[tuple[float, int, int, int]] = []
    seq = 0
    for name, rate in net.external.items():
        if rate > 0:
            seq += 1
            events.append((rng.expovariate(rate), seq, index[name], -1))
    heapq.heapify(events)
    rates = [net.external.get(name, 0.0) for name in names]
    push, pop = heapq.heappush, heapq.heappop
    network_times: list[float] = []
    entered = 0
    give_up = 2 * duration

    def advance(s: _Stage, now: float) -> None:
        s.done += (now - s.last) * s.speed
        lo, hi = max(s.last, warmup), min(now, duration)
        if hi > lo:
            s.area += s.n * (hi - lo)
        s.last = now

    def reschedule(s: _Stage, i: int, now: float) -> None:
        nonlocal seq
        s.speed = s.speeds[min(s.n, s.m)]
        key = (s.heap[0][0], s.speed) if s.heap and s.speed > 0 else None
        if key != s.mark:
            s.mark = key
            s.version += 1
            if key is not None:
                seq += 1
                push(events, (now + max(0.0, key[0] - s.done) / s.speed, seq, i, s.version))

    def start(s: _Stage, request: _Request) -> None:
        nonlocal seq
        seq += 1
        push(s.heap, (s.done + s.draw(rng), seq, request))

    def enter(i: int, request: _Request, now: float) -> None:
        s = stages[i]
        advance(s, now)
        s.n += 1
        if len(s.heap) < s.m:
            start(s, request)
        else:
            s.queue.append(request)
        reschedule(s, i, now)

    while events:
        now, _, i, version = pop(events)
        if now > give_up:
            break
        s = stages[i]
        if version < 0:                    # an external arrival; the next one while open
            if now >= warmup:
                entered += 1
            seq += 1
            nxt = now + rng.expovariate(rates[i])
            if nxt < duration:
                push(events, (nxt, seq, i, -1))
            enter(i, (now, now), now)
            continue
        if version != s.version:           # superseded by a later change at that stage
            continue
        advance(s, now)
        request = pop(s.heap)[2]
        s.n -= 1
        if s.queue:
            start(s, s.queue.popleft())
        reschedule(s, i, now)
        born = request[0]
        if born >= warmup:
            s.times.append(now - request[1])
        u = rng.random()
        for cumulative, dst in s.route:
            if u < cumulative:
                enter(dst, (born, now), now)
                break
        else:
            if born >= warmup:
                network_times.append(now - born)

    window = duration - warmup
    stations = {}
    for name, s in zip(names, stages, strict=True):
        advance(s, max(s.last, duration))            # the last stretch of mean_jobs
        times = s.times
        stations[name] = StationStats(len(times), math.fsum(times) / len(times) if times
                                      else math.nan, _quantiles(times, percentiles),
                                      s.area / window)
    done = len(network_times)
    return SimResult(done, entered - done, done / window,
                     math.fsum(network_times) / done if done else math.nan,
                     _quantiles(network_times, percentiles), stations)
