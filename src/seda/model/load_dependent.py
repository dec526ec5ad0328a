"""The load-dependent service centre (thesis 4.10-4.15): a stage whose threads stop adding
speed past its natural parallelism and cost every stage speed past a system-wide thread count.

There is no closed form, so the birth-death chain is summed numerically (4.13-4.15). From
``level`` requests on the rate is constant, the terms shrink geometrically, and the sums are cut
off where the exact geometric sum of everything left out falls below ``tol``: the truncation
provably converges, and what it leaves out is reported (``truncation``, ``truncation_error``).
"""

from __future__ import annotations

import math

from .mmm import check_rates

#: the most states summed one by one past ``level``; more would be needed only within about
#: 1e-4 of saturation (r ** MAX_STATES > tol)
MAX_STATES = 200_000


def penalty(total_threads: int, m_prime: float, beta: float) -> float:
    """phi(m_t) (4.11): nothing below ``m_prime`` threads in the system, then ``beta`` a thread."""
    return beta * (total_threads - m_prime) if total_threads >= m_prime else 0.0


def service_rate(n: int, mu: float, m: int, alpha: float, m_prime: float, beta: float,
                 total_threads: int) -> float:
    """mu_m(n) (4.10, 4.12): the rate a stage with ``m`` threads and ``n`` requests completes
    them. The thesis's four cases are one expression: at most min(n, m, alpha) requests make
    progress, and the thread penalty applies whether or not the threads are busy."""
    busy = min(n, m, alpha)
    return max(0.0, busy * mu - penalty(total_threads, m_prime, beta)) if n > 0 else 0.0


class LoadDependent:
    """A stage of ``m`` threads with base rate ``mu``, parallelism limit ``alpha``, and a
    penalty of ``beta`` per thread beyond ``m_prime`` in the whole system (``total_threads``,
    by default this stage's ``m``). The same attributes as :class:`~seda.model.MMm`, whose
    results it reproduces when ``alpha >= m`` and ``beta = 0``.

    If the penalty reaches ``mu`` a lone request makes no progress until others arrive (the
    thesis floors the rate at 0): the chain then never empties and lives on the states from the
    first one with a positive rate, so ``p0`` is 0 though the stage may well be stable.

    ``response_cdf`` needs one more assumption than the means: how mu(n) is shared. It takes
    the simulator's rule, first come first served with the requests in service (at most ``m``)
    progressing at equal speed, which with exponential work is exactly the chain of 4.12.
    """

    def __init__(self, lam: float, mu: float, m: int, alpha: float, m_prime: float,
                 beta: float, total_threads: int | None = None, tol: float = 1e-12) -> None:
        check_rates(lam, mu, m)
        if not alpha > 0 or m_prime < 0 or not (math.isfinite(beta) and beta >= 0):
            raise ValueError(f"need alpha > 0, m_prime >= 0, beta >= 0; got {alpha!r}, "
                             f"{m_prime!r}, {beta!r}")
        total = m if total_threads is None else total_threads
        if total < m:
            raise ValueError(f"total_threads ({total}) counts this stage's {m} threads too")
        if not 0 < tol < 1:
            raise ValueError(f"tol is a relative error in (0, 1), got {tol!r}")
        self.lam, self.mu, self.m = float(lam), float(mu), int(m)
        self.alpha, self.m_prime, self.beta, self.total_threads = alpha, m_prime, beta, total
        #: from this many requests on the service rate no longer changes
        self.level = math.ceil(min(self.m, alpha))
        #: the most work the stage finishes per unit of time: mu_m(n) for n >= level
        self.capacity = self.rate(self.level)
        #: lam / capacity: below 1 the stage keeps up
        self.utilization = (self.lam / self.capacity if self.capacity > 0
                            else (math.inf if self.lam > 0 else 0.0))
        #: whether a steady state exists
        self.stable = self.utilization < 1
        #: the last state summed, and the probability mass beyond it that was left out
        self.truncation, self.truncation_error = 0, 0.0
        self._path: _TaggedPath | None = None    # response_cdf's chain, made when first asked
        if not self.stable:
            self.p0, self.erlang_c = 0.0, 1.0
            self.mean_jobs = self.var_jobs = self.mean_response = math.inf
            return
        if self.lam == 0:
            self.p0, self.erlang_c, self.mean_jobs, self.var_jobs = 1.0, 0.0, 0.0, 0.0
            first = self.rate(1)
            self.mean_response = 1 / first if first > 0 else math.inf
            return
        self._solve(tol)

    def __repr__(self) -> str:
        return (f"LoadDependent(lam={self.lam!r}, mu={self.mu!r}, m={self.m!r}, "
                f"alpha={self.alpha!r}, m_prime={self.m_prime!r}, beta={self.beta!r}, "
                f"total_threads={self.total_threads!r})")

    def rate(self, n: int) -> float:
        """mu_m(n) for this stage (4.12)."""
        return service_rate(n, self.mu, self.m, self.alpha, self.m_prime, self.beta,
                            self.total_threads)

    def _solve(self, tol: float) -> None:
        """p_n proportional to lam^n / prod mu(j) (4.13), summed for E[N] (4.14) and E[N^2];
        E[R] by Little's law (4.15). Terms are kept relative to the largest of the first
        ``level`` so that neither large thread counts overflow nor small rates underflow."""
        lam, level = self.lam, self.level
        first = next(n for n in range(level + 1) if self.rate(n + 1) > 0)
        logs = [0.0]
        for n in range(first + 1, level + 1):
            logs.append(logs[-1] + math.log(lam / self.rate(n)))
        top = max(logs)
        weights = [math.exp(x - top) for x in logs]
        s0 = s1 = s2 = 0.0
        for n, w in enumerate(weights, first):
            s0, s1, s2 = s0 + w, s1 + n * w, s2 + n * n * w
        # Beyond ``level`` each term is r times the one before, so what a cut at n leaves out
        # is exactly t_n sum_j r^j (n + j)^k for k = 0, 1, 2: geometric series in closed form.
        # Cut where each is below ``tol`` of its sum. If r is so near 1 that this would take
        # more than MAX_STATES states, add all of it from ``level`` on in that closed form.
        r, n, w = lam / self.capacity, level, weights[-1]
        closed = math.log(tol) / math.log(r) > MAX_STATES
        while True:
            g = r / (1 - r)
            tail0 = w * g
            tail1 = w * (n * g + g / (1 - r))
            tail2 = w * (n * n * g + 2 * n * g / (1 - r) + g * (1 + r) / (1 - r) ** 2)
            if closed:
                s0, s1, s2, tail0 = s0 + tail0, s1 + tail1, s2 + tail2, 0.0
                break
            if tail0 <= tol * s0 and tail1 <= tol * s1 and tail2 <= tol * s2:
                break
            n, w = n + 1, w * r
            weights.append(w)
            s0, s1, s2 = s0 + w, s1 + n * w, s2 + n * n * w
        self.truncation, self.truncation_error = n, tail0 / s0
        # p_n up to a constant, n = first ...
        self._weights, self._first, self._total = weights, first, s0
        self.p0 = self.pn(0)
        #: the probability that an arrival finds every thread busy and waits
        self.erlang_c = 1 - math.fsum(self.pn(k) for k in range(self.m))
        self.mean_jobs = s1 / s0
        self.var_jobs = max(0.0, s2 / s0 - self.mean_jobs ** 2)
        self.mean_response = self.mean_jobs / lam

    def response_cdf(self, t: float) -> float:
        """Pr[R <= t] for one request (the sharing rule above). No closed form: the request's
        own path is a Markov chain, uniformized at rate lam + capacity (no state leaves faster),
        so Pr[R <= t] = sum_j Poisson(j; (lam + capacity) t) Pr[left within j steps]."""
        if t <= 0 or not self.stable:
            return 0.0
        x = (self.lam + self.capacity) * t
        spread = 10 * math.sqrt(x) + 10
        low, high = max(0, math.floor(x - spread)), math.ceil(x + spread)
        left = self._left_within(high)
        return min(1.0, math.fsum(math.exp(j * math.log(x) - x - math.lgamma(j + 1)) * left[j]
                                  for j in range(low, high + 1)))

    def _left_within(self, steps: int) -> list[float]:
        """Pr[a request arriving now has left within j steps], j = 0..steps, extended on demand.

        An arrival finding n requests starts in service if n < m (n + 1 in the stage), else it
        waits for n - m + 1 departures, which come at the constant rate ``capacity`` (every
        thread busy) while arrivals pile up behind it: state (departures still to wait for,
        arrivals behind). In service with k in the stage it finishes at mu(k) / min(k, m), the
        others leave at the rest of mu(k), arrivals come at lam. States past the stationary
        distribution's 1e-9 tail are not tracked: arrivals there are lumped into the last one.
        """
        if self._path is None:
            self._path = _TaggedPath(self)
        path = self._path
        while len(path.left) <= steps:
            path.step()
        return path.left

    def pn(self, n: int) -> float:
        """The probability of ``n`` requests in the stage (4.13, 4.21)."""
        if not self.stable or n < 0:
            return 0.0
        if self.lam == 0:
            return 1.0 if n == 0 else 0.0
        if n < self._first:
            return 0.0
        k = n - self._first
        if k < len(self._weights):
            return self._weights[k] / self._total
        last = len(self._weights) - 1          # past the truncation: the geometric tail
        return self._weights[last] * (self.lam / self.capacity) ** (k - last) / self._total


class _TaggedPath:
    """The uniformized chain of one request through a LoadDependent stage, stepped forward;
    ``left[j]`` is the probability it has left within j steps."""

    def __init__(self, q: LoadDependent) -> None:
        m, lam = q.m, q.lam
        uniform = lam + q.capacity
        cut, mass = 0, q.pn(0)
        while 1 - mass > 1e-9 and cut < q.truncation + q.m:
            cut += 1
            mass += q.pn(cut)
        self.m, self.behind = m, max(cut - m, 1) + 1        # arrivals behind tracked: 0..behind-1
        if (cut - m + 1) * self.behind > MAX_STATES:
            raise ValueError(f"{q!r} is too near saturation for response_cdf (more than "
                             f"{MAX_STATES} states); simulate() gives its percentiles")
        top = m + self.behind                                # most requests in the stage tracked
        self.arrive = lam / uniform
        self.depart = q.capacity / uniform                   # while waiting: one goes ahead
        rates = [q.rate(k) for k in range(top + 1)]
        self.finish = [rates[k] / min(k, m) / uniform if k else 0.0 for k in range(top + 1)]
        self.others = [rates[k] / uniform - self.finish[k] for k in range(top + 1)]
        self.stay = [1 - f - o - self.arrive for f, o in zip(self.finish, self.others,
                                                              strict=True)]
        self.service = [0.0] * (top + 1)                     # by requests in the stage
        self.waiting = [[0.0] * self.behind for _ in range(max(cut - m + 1, 0) + 1)]
        for n in range(cut + 1):
            if n < m:
                self.service[n + 1] += q.pn(n)
            else:
                self.waiting[n - m + 1][0] += q.pn(n)
        self.left = [0.0]

    def step(self) -> None:
        service, waiting, m, up = self.service, self.waiting, self.m, self.arrive
        top = len(service) - 1
        done = math.fsum(p * f for p, f in zip(service, self.finish, strict=True))
        new = [0.0] * (top + 1)
        for k in range(1, top + 1):
            p = service[k]
            if not p:
                continue
            new[k] += p * self.stay[k]
            new[k - 1] += p * self.others[k]
            new[min(k + 1, top)] += p * up
        for b, p in enumerate(waiting[1] if len(waiting) > 1 else ()):
            new[m + b] += p * self.depart                    # the last one ahead went
        last = self.behind - 1
        moved = [[0.0] * self.behind for _ in waiting]
        for d in range(1, len(waiting)):
            row, out = waiting[d], moved[d]
            below = moved[d - 1] if d > 1 else None
            for b, p in enumerate(row):
                if not p:
                    continue
                out[min(b + 1, last)] += p * up
                if below is not None:      # a waiting request always moves: up + depart = 1
                    below[b] += p * self.depart
        self.service, self.waiting = new, moved
        self.left.append(self.left[-1] + done)
