"""The load-dependent centre (thesis 4.10-4.15): its rate function, its numerical solution and
the convergence of the truncation that solution rests on."""

from __future__ import annotations

import itertools
import math

import pytest

from seda.model import LoadDependent, MMm
from seda.model import load_dependent as ld
from seda.model.load_dependent import penalty, service_rate

FIG18 = {"alpha": 4, "m_prime": 15, "beta": 0.01}           # with mu = 0.05


def test_the_four_cases_of_the_service_rate():
    mu, args = 0.05, (4, 15, 0.01)
    # m < alpha: n mu below m requests, m mu from then on (4.12, first two cases)
    assert [service_rate(n, mu, 3, *args, 3) for n in (0, 1, 2, 3, 9)] == \
        pytest.approx([0, 0.05, 0.10, 0.15, 0.15])
    # m >= alpha: n mu below alpha, alpha mu from then on, however many threads
    assert [service_rate(n, mu, 10, *args, 10) for n in (1, 3, 4, 10, 50)] == \
        pytest.approx([0.05, 0.15, 0.20, 0.20, 0.20])
    # the penalty of 4.11 counts every thread in the system, busy or not, floored at 0
    assert penalty(14, 15, 0.01) == 0 and penalty(20, 15, 0.01) == pytest.approx(0.05)
    assert service_rate(4, mu, 10, *args, 20) == pytest.approx(0.15)
    assert service_rate(1, mu, 10, *args, 30) == 0


@pytest.mark.parametrize(("lam", "mu", "m"), [(1.0, 3.0, 1), (5.0, 3.0, 2), (8.9, 3.0, 3),
                                               (100.0, 1.0, 120)])
def test_without_load_dependence_it_is_mmm(lam, mu, m):
    a, b = MMm(lam, mu, m), LoadDependent(lam, mu, m, alpha=m, m_prime=10**9, beta=0)
    for attr in ("p0", "erlang_c", "mean_jobs", "var_jobs", "mean_response", "utilization"):
        assert getattr(b, attr) == pytest.approx(getattr(a, attr), rel=1e-9), attr
    assert [b.pn(n) for n in range(0, 400, 7)] == pytest.approx(
        [a.pn(n) for n in range(0, 400, 7)], rel=1e-9, abs=1e-300)


@pytest.mark.parametrize(("lam", "mu", "m"), [(2.0, 3.0, 1), (5.0, 2.0, 3), (0.15, 0.05, 4)])
def test_without_load_dependence_the_response_cdf_is_mmm(lam, mu, m):
    a, b = MMm(lam, mu, m), LoadDependent(lam, mu, m, alpha=m, m_prime=10**9, beta=0)
    for t in (0.1 / mu, 1 / mu, 3 / mu, 10 / mu):
        assert b.response_cdf(t) == pytest.approx(a.response_cdf(t), abs=1e-9)


@pytest.mark.parametrize("m", [10, 22])          # 22: a lone request waits for company
def test_the_response_cdf_has_the_mean_response(m):
    """The integral of 1 - F is E[R] (4.15), with and without a thread penalty."""
    q = LoadDependent(0.1, 0.05, m, **FIG18)
    step, cdf = 0.5, [0.0]
    while cdf[-1] < 1 - 1e-7:
        cdf.append(q.response_cdf(len(cdf) * step))
    area = step * sum(2 - a - b for a, b in itertools.pairwise(cdf)) / 2     # trapezoids
    assert area == pytest.approx(q.mean_response, rel=1e-3)


def test_the_truncation_converges_and_reports_what_it_leaves_out():
    """Loosening tol cuts the sum earlier; each result is within its reported error of the
    tightest one, and the errors shrink geometrically with the states summed."""
    exact = LoadDependent(0.15, 0.05, 10, **FIG18, tol=1e-15)
    second = exact.var_jobs + exact.mean_jobs**2             # E[N^2]
    cuts = []
    for tol in (1e-2, 1e-4, 1e-6, 1e-9, 1e-12):
        q = LoadDependent(0.15, 0.05, 10, **FIG18, tol=tol)
        assert q.truncation_error <= tol
        assert abs(q.mean_jobs - exact.mean_jobs) <= 2 * tol * exact.mean_jobs
        assert abs(q.var_jobs - exact.var_jobs) <= tol * (2 * second + 4 * exact.mean_jobs**2)
        cuts.append(q.truncation)
    assert cuts == sorted(cuts) and cuts[0] < cuts[-1]


def test_near_saturation_the_remainder_is_summed_in_closed_form(monkeypatch):
    monkeypatch.setattr(ld, "MAX_STATES", 50)
    lam = 0.15 * (1 - 1e-3)
    capped = LoadDependent(lam, 0.05, 3, alpha=4, m_prime=15, beta=0)
    assert capped.truncation == capped.level == 3 and capped.truncation_error == 0
    assert capped.mean_jobs == pytest.approx(MMm(lam, 0.05, 3).mean_jobs, rel=1e-9)
    assert capped.var_jobs == pytest.approx(MMm(lam, 0.05, 3).var_jobs, rel=1e-9)
    assert capped.pn(5000) == pytest.approx(MMm(lam, 0.05, 3).pn(5000), rel=1e-9)


def test_thread_overhead_makes_more_threads_worse():
    """Fig. 18: past alpha threads add nothing; past m' they cost; the best pool is between."""
    r = {m: LoadDependent(0.1, 0.05, m, **FIG18).mean_response for m in (2, 3, 4, 8, 15, 18)}
    assert r[2] == math.inf and r[3] > r[4]                  # 2 threads: capacity 0.1 = lam
    assert r[4] == pytest.approx(r[8]) == pytest.approx(r[15])
    assert r[18] > r[15]
    assert not LoadDependent(0.1, 0.05, 26, **FIG18).stable  # capacity 0.2 - 0.11 < 0.1


def test_a_lone_request_may_wait_for_company():
    """With the penalty at least mu, mu(1) = 0: the stage never empties, yet is stable."""
    q = LoadDependent(0.1, 0.05, 22, **FIG18)                # phi = 0.07: mu(1) = 0
    assert q.stable and q.p0 == 0 and q.pn(1) > 0
    assert math.fsum(q.pn(n) for n in range(q.truncation + 1)) == pytest.approx(1)
    assert q.mean_response == pytest.approx(q.mean_jobs / 0.1)


def test_total_threads_of_the_system_set_the_penalty():
    alone = LoadDependent(0.1, 0.05, 4, **FIG18)
    crowded = LoadDependent(0.1, 0.05, 4, **FIG18, total_threads=20)
    assert alone.capacity == pytest.approx(0.2) and crowded.capacity == pytest.approx(0.15)
    assert crowded.mean_response > alone.mean_response
    with pytest.raises(ValueError):
        LoadDependent(0.1, 0.05, 4, **FIG18, total_threads=3)


def test_unstable_and_idle():
    q = LoadDependent(0.25, 0.05, 8, **FIG18)
    assert not q.stable and q.mean_response == q.mean_jobs == math.inf and q.pn(3) == 0
    idle = LoadDependent(0.0, 0.05, 8, **FIG18)
    assert idle.p0 == 1 and idle.mean_jobs == 0 and idle.mean_response == pytest.approx(20)


@pytest.mark.parametrize("bad", [{"alpha": 0}, {"beta": -1}, {"m_prime": -1}, {"tol": 0}])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ValueError):
        LoadDependent(0.1, 0.05, 4, **{**FIG18, **bad})
