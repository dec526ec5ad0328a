"""The M/M/m service centre in closed form: one stage whose m threads serve Poisson arrivals
with exponential service times (thesis 4.3-4.9)."""

from __future__ import annotations

import math


def check_rates(lam: float, mu: float, m: int) -> None:
    """Refuse parameters the formulas would turn into silent nonsense."""
    if not (math.isfinite(lam) and lam >= 0):
        raise ValueError(f"the arrival rate must be finite and >= 0, got {lam!r}")
    if not (math.isfinite(mu) and mu > 0):
        raise ValueError(f"the service rate must be finite and > 0, got {mu!r}")
    if isinstance(m, bool) or int(m) != m or m < 1:
        raise ValueError(f"the number of servers (threads) must be an integer >= 1, got {m!r}")


def _logsumexp(logs: list[float]) -> float:
    top = max(logs)
    return top + math.log(math.fsum(math.exp(x - top) for x in logs))


class MMm:
    """Arrival rate ``lam``, service rate ``mu`` per server, ``m`` servers (a stage's threads).

    The results are attributes computed once. They hold only in steady state, which exists
    only while the traffic intensity rho = lam / (m mu) is below 1: past that the queue grows
    without bound, so ``stable`` is False and the means are infinite rather than the negative
    numbers the formulas would give. Sums run in logarithms so that hundreds of threads neither
    overflow ``(m rho)^m`` nor underflow ``p0``.
    """

    def __init__(self, lam: float, mu: float, m: int) -> None:
        check_rates(lam, mu, m)
        self.lam, self.mu, self.m = float(lam), float(mu), int(m)
        #: the most work the centre finishes per unit of time: m mu
        self.capacity = self.m * self.mu
        #: rho, the traffic intensity; also the mean fraction of threads busy
        self.utilization = self.lam / self.capacity
        #: whether a steady state exists (rho < 1)
        self.stable = self.utilization < 1
        rho, m = self.utilization, self.m
        if not self.stable:
            self.p0, self.erlang_c = 0.0, 1.0
            self.mean_jobs = self.var_jobs = self.mean_response = math.inf
            return
        if self.lam == 0:
            self.p0, self.erlang_c = 1.0, 0.0
        else:
            log_a = math.log(self.lam / self.mu)          # a = m rho, the offered load
            busy = m * log_a - math.lgamma(m + 1) - math.log1p(-rho)
            self._log_p0 = -_logsumexp(
                [n * log_a - math.lgamma(n + 1) for n in range(m)] + [busy])   # (4.4)
            #: p0, the probability that the stage is empty (4.4)
            self.p0 = math.exp(self._log_p0)
            #: Erlang's C: the probability that an arrival finds every thread busy and waits (4.5)
            self.erlang_c = math.exp(self._log_p0 + busy)
        c = self.erlang_c
        #: E[N], requests in the stage, queued or in service (4.6)
        self.mean_jobs = m * rho + rho * c / (1 - rho)
        #: Var[N] (4.7)
        self.var_jobs = m * rho + rho * c * ((1 + rho - rho * c) / (1 - rho) ** 2 + m)
        #: E[R], time in queue plus service (4.8)
        self.mean_response = (1 + c / (m * (1 - rho))) / self.mu

    def __repr__(self) -> str:
        return f"MMm(lam={self.lam!r}, mu={self.mu!r}, m={self.m!r})"

    def pn(self, n: int) -> float:
        """The probability of ``n`` requests in the stage (4.3)."""
        if n < 0 or not self.stable:
            return 0.0
        if self.lam == 0:
            return 1.0 if n == 0 else 0.0
        m = self.m
        if n < m:
            log = n * math.log(self.lam / self.mu) - math.lgamma(n + 1)
        else:
            log = n * math.log(self.utilization) + m * math.log(m) - math.lgamma(m + 1)
        return math.exp(self._log_p0 + log)

    def response_cdf(self, t: float) -> float:
        """Pr[R <= t], the response-time distribution (4.9).

        Written with ``expm1(mu d t) / d``, d = 1 - m + m rho, so that the thesis's two cases
        (d != 0 and d = 0) are one formula with no cancellation near d = 0. Zero everywhere for
        an unstable stage: every response time is infinite.
        """
        if t <= 0 or not self.stable:
            return 0.0
        mu, c = self.mu, self.erlang_c
        d = 1 - self.m + self.m * self.utilization
        if abs(d) < 1e-12:
            waited = mu * t * math.exp(-mu * t)
        elif mu * d * t < 700:
            waited = math.exp(-mu * t) * math.expm1(mu * d * t) / d
        else:                                  # expm1 would overflow; exp(-mu t) is negligible
            waited = math.exp(-mu * (1 - d) * t) / d
        return max(0.0, 1 - math.exp(-mu * t) - c * waited)
