"""M/M/m closed forms (thesis 4.3-4.9) against textbook values and against their own
definitions: sums over p_n and the response-time density."""

from __future__ import annotations

import math

import pytest

from seda.model import MMm


def moments(q: MMm, upto: int = 5000) -> tuple[float, float, float]:
    ps = [q.pn(n) for n in range(upto)]
    mean = math.fsum(n * p for n, p in enumerate(ps))
    return math.fsum(ps), mean, math.fsum(n * n * p for n, p in enumerate(ps)) - mean**2


def test_mm1_matches_the_textbook():
    q = MMm(1.0, 3.0, 1)                                  # rho = 1/3
    assert q.utilization == pytest.approx(1 / 3)
    assert q.p0 == pytest.approx(2 / 3)
    assert q.erlang_c == pytest.approx(1 / 3)             # M/M/1: Pr[wait] = rho
    assert q.mean_jobs == pytest.approx(0.5)              # rho / (1 - rho)
    assert q.var_jobs == pytest.approx(0.75)              # rho / (1 - rho)^2
    assert q.mean_response == pytest.approx(0.5)          # 1 / (mu - lam)
    assert q.response_cdf(1.0) == pytest.approx(1 - math.exp(-2.0))   # Exp(mu - lam)


@pytest.mark.parametrize(("lam", "mu", "m"),
                         [(5.0, 3.0, 2), (8.9, 3.0, 3), (0.3, 0.07, 8), (45.0, 1.0, 50)])
def test_closed_forms_agree_with_sums_over_pn(lam, mu, m):
    q = MMm(lam, mu, m)
    total, mean, var = moments(q)
    assert total == pytest.approx(1, abs=1e-9)
    assert q.mean_jobs == pytest.approx(mean, rel=1e-9)
    assert q.var_jobs == pytest.approx(var, rel=1e-9)
    assert q.erlang_c == pytest.approx(1 - math.fsum(q.pn(n) for n in range(m)), rel=1e-9)
    assert q.mean_response == pytest.approx(q.mean_jobs / lam, rel=1e-12)   # Little


def test_erlang_c_known_value():
    # two servers, a = lam / mu = 1, rho = 1/2: C = (a^2/2!/(1-rho)) / (1 + a + a^2/2!/(1-rho))
    assert MMm(1.0, 1.0, 2).erlang_c == pytest.approx(1 / 3)


@pytest.mark.parametrize(("lam", "mu", "m"),
                         [(1.0, 3.0, 1), (5.0, 3.0, 2), (4.0, 3.0, 3), (8.9, 3.0, 3)])
def test_response_cdf_is_the_distribution_of_the_mean(lam, mu, m):
    """E[R] = integral of (1 - F); F rises from 0 to 1. (4.0, 3.0, 3) is the thesis's second
    case, rho = (m - 1) / m, and must join the first without a jump."""
    q = MMm(lam, mu, m)
    h = q.mean_response / 500
    ts = [h * (k + 0.5) for k in range(20_000)]
    integral = math.fsum((1 - q.response_cdf(t)) * h for t in ts)
    assert integral == pytest.approx(q.mean_response, rel=1e-4)
    values = [q.response_cdf(t) for t in ts[::100]]
    assert values == sorted(values) and values[-1] == pytest.approx(1, abs=1e-6)
    assert q.response_cdf(0) == 0


def test_the_special_case_joins_smoothly():
    mid = MMm(4.0, 3.0, 3)                                  # d = 1 - m + m rho = 0
    near = MMm(4.0 + 1e-7, 3.0, 3)
    for t in (0.1, 0.5, 2.0):
        assert mid.response_cdf(t) == pytest.approx(near.response_cdf(t), rel=1e-6)


def test_unstable_says_so():
    for q in (MMm(3.0, 3.0, 1), MMm(10.0, 3.0, 3)):
        assert not q.stable and q.utilization >= 1
        assert q.mean_jobs == q.var_jobs == q.mean_response == math.inf
        assert q.p0 == 0 and q.erlang_c == 1 and q.pn(0) == 0 and q.response_cdf(1e9) == 0


def test_no_load_and_many_threads():
    idle = MMm(0.0, 2.0, 4)
    assert (idle.p0, idle.erlang_c, idle.mean_jobs, idle.pn(0)) == (1, 0, 0, 1)
    assert idle.mean_response == 0.5                        # one request alone: 1/mu
    big = MMm(2000.0, 1.0, 2100)                            # (m rho)^m / m! overflows floats
    assert big.stable and big.mean_response == pytest.approx(1.000156, rel=1e-5)


@pytest.mark.parametrize(("lam", "mu", "m"),
                         [(-1, 1, 1), (1, 0, 1), (1, 1, 0), (1, 1, 1.5), (math.nan, 1, 1)])
def test_bad_parameters_are_refused(lam, mu, m):
    with pytest.raises(ValueError):
        MMm(lam, mu, m)
