"""Open Jackson networks of stages (thesis 4.16-4.21): a service's stage graph with routing
probabilities, solved as independent stages fed at the rates the traffic equations give."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .load_dependent import LoadDependent, service_rate
from .mmm import MMm, check_rates

_LOAD_DEPENDENCE = {"alpha", "m_prime", "beta"}


@dataclass(frozen=True)
class Station:
    """One stage: base rate ``mu``, ``servers`` threads, and when ``load_dependent`` its
    parallelism limit ``alpha`` and thread penalty ``beta`` beyond ``m_prime`` (4.10-4.12)."""

    name: str
    mu: float
    servers: int
    alpha: float = math.inf
    m_prime: float = math.inf
    beta: float = 0.0
    load_dependent: bool = False

    def model(self, lam: float, total_threads: int) -> MMm | LoadDependent:
        """This stage alone, fed at ``lam``, in a system of ``total_threads`` threads."""
        if not self.load_dependent:
            return MMm(lam, self.mu, self.servers)
        return LoadDependent(lam, self.mu, self.servers, self.alpha, self.m_prime, self.beta,
                             total_threads)

    def rate(self, n: int, total_threads: int) -> float:
        """How fast the stage completes requests while ``n`` are in it."""
        return service_rate(n, self.mu, self.servers, self.alpha, self.m_prime, self.beta,
                            total_threads)


class JacksonNetwork:
    """Stages, routes between them and external Poisson arrivals. A request finishing at a
    stage goes to each ``route``'d stage with its probability and leaves with what remains.
    Jackson's theorem (and its load-dependent form, 4.18-4.21) makes each stage behave as an
    M/M/m (or load-dependent) centre fed at its total arrival rate, so the whole network is
    solved one stage at a time. Load-dependent stages count every thread in the network as
    the thesis's m_t."""

    def __init__(self) -> None:
        self.stations: dict[str, Station] = {}
        self.routes: dict[str, dict[str, float]] = {}
        self.external: dict[str, float] = {}

    def add_station(self, name: str, mu: float, servers: int = 1,
                    **load_dependence: float) -> None:
        """A stage with service rate ``mu`` per thread and ``servers`` threads; any of
        ``alpha``, ``m_prime``, ``beta`` makes it load-dependent."""
        check_rates(0.0, mu, servers)
        unknown = set(load_dependence) - _LOAD_DEPENDENCE
        if unknown:
            raise TypeError(f"unknown load-dependence parameter(s) {sorted(unknown)}; "
                            f"expected {sorted(_LOAD_DEPENDENCE)}")
        if name in self.stations:
            raise ValueError(f"station {name!r} already exists")
        station = Station(name, float(mu), int(servers), load_dependent=bool(load_dependence),
                          **load_dependence)
        station.model(0.0, station.servers)          # the parameters' checks, now, not later
        self.stations[name] = station
        self.routes[name] = {}

    def route(self, src: str, dst: str, p: float) -> None:
        """Send a request finishing at ``src`` on to ``dst`` with probability ``p``."""
        self._known(src, dst)
        if not 0 <= p <= 1:
            raise ValueError(f"a routing probability is in [0, 1], got {p!r}")
        out = dict(self.routes[src], **{dst: p})
        if math.fsum(out.values()) > 1 + 1e-9:
            raise ValueError(f"routes out of {src!r} would add up to more than 1: {out}")
        self.routes[src] = out

    def arrive(self, name: str, rate: float) -> None:
        """Requests from outside reach ``name`` as a Poisson process of ``rate``."""
        self._known(name)
        if not (math.isfinite(rate) and rate >= 0):
            raise ValueError(f"an arrival rate is finite and >= 0, got {rate!r}")
        self.external[name] = float(rate)

    def _known(self, *names: str) -> None:
        for name in names:
            if name not in self.stations:
                raise KeyError(f"no station {name!r}; add_station first")

    @property
    def total_threads(self) -> int:
        """m_t: every thread in the network."""
        return sum(s.servers for s in self.stations.values())

    def arrival_rates(self, scale: float = 1.0) -> dict[str, float]:
        """lambda_i = r_i + sum_j lambda_j P_ji (4.16) for each stage, with the external rates
        multiplied by ``scale``, by Gaussian elimination on (I - P^T) lambda = r."""
        names = list(self.stations)
        index = {name: i for i, name in enumerate(names)}
        size = len(names)
        rows = [[float(i == j) for j in range(size)] + [scale * self.external.get(name, 0.0)]
                for i, name in enumerate(names)]
        for src, out in self.routes.items():
            for dst, p in out.items():
                rows[index[dst]][index[src]] -= p
        for col in range(size):
            pivot = max(range(col, size), key=lambda r: abs(rows[r][col]))
            if abs(rows[pivot][col]) < 1e-12:
                raise ValueError(f"requests routed among stages including {names[col]!r} "
                                 "never leave the network: no steady state")
            rows[col], rows[pivot] = rows[pivot], rows[col]
            for r in range(size):
                if r != col and rows[r][col]:
                    f = rows[r][col] / rows[col][col]
                    rows[r] = [a - f * b for a, b in zip(rows[r], rows[col], strict=True)]
        return {name: max(0.0, rows[i][size] / rows[i][i]) for i, name in enumerate(names)}

    def results(self, scale: float = 1.0) -> dict[str, MMm | LoadDependent]:
        """Each stage solved alone at its arrival rate (Jackson's product form, 4.17)."""
        rates, total = self.arrival_rates(scale), self.total_threads
        return {name: s.model(rates[name], total) for name, s in self.stations.items()}

    def station(self, name: str) -> MMm | LoadDependent:
        """One stage's results."""
        self._known(name)
        return self.stations[name].model(self.arrival_rates()[name], self.total_threads)

    def mean_response(self, scale: float = 1.0) -> float:
        """E[T] from entry to exit: requests in the network over the rate they enter (Little's
        law on the whole network); infinite if any stage with traffic is unstable."""
        entering = scale * math.fsum(self.external.values())
        if entering <= 0:
            raise ValueError("no external arrivals: call arrive() first")
        return math.fsum(r.mean_jobs for r in self.results(scale).values()
                         if r.lam > 0) / entering

    def capacities(self) -> dict[str, float]:
        """The most each stage can finish per unit of time (m mu, or mu_m(n) at saturation)."""
        total = self.total_threads
        return {name: s.model(0.0, total).capacity for name, s in self.stations.items()}

    def _headroom(self) -> dict[str, float]:
        """Capacity over arrival rate for each stage with traffic."""
        rates, caps = self.arrival_rates(), self.capacities()
        headroom = {name: caps[name] / rate for name, rate in rates.items() if rate > 0}
        if not headroom:
            raise ValueError("no stage receives any traffic: call arrive() first")
        return headroom

    def bottleneck(self) -> str:
        """The stage that saturates first as the arrival rates grow together."""
        headroom = self._headroom()
        return min(headroom, key=headroom.__getitem__)

    def max_stable_rate(self) -> float:
        """The supremum of the factors by which the external arrival rates can be multiplied
        with every stage still stable: min over stages of capacity / arrival rate. With unit
        external rates it is the thesis's lambda_max (4.4.2)."""
        return min(self._headroom().values())
