"""The simulator against the analysis wherever both apply: Jackson networks with exponential
service, load-dependent stages, and single-server stages with general service times
(Pollaczek-Khinchine). Seeds are fixed and runs long enough that 5 % is several standard
errors (checked over other seeds when the sizes were chosen)."""

from __future__ import annotations

import math
import random

import pytest

from seda.model import JacksonNetwork, LoadDependent, MMm, simulate
from seda.model.simulate import sampler

from tests.helpers.networks import partition


def single(mu: float, m: int, lam: float, **load_dependence: float) -> JacksonNetwork:
    net = JacksonNetwork()
    net.add_station("s", mu, m, **load_dependence)
    net.arrive("s", lam)
    return net


def tandem() -> JacksonNetwork:
    """Fig. 20b with two threads a stage, at 57 % load."""
    net = JacksonNetwork()
    net.add_station("A", 0.07, 2)
    net.add_station("B", 0.07, 2)
    net.route("A", "B", 1.0)
    net.arrive("A", 0.08)
    return net


def feedback() -> JacksonNetwork:
    net = JacksonNetwork()
    net.add_station("a", 1.0, 1)
    net.add_station("b", 2.0, 2)
    net.route("a", "b", 1.0)
    net.route("b", "a", 0.3)
    net.arrive("a", 0.4)
    return net


NETWORKS = {                                                 # network, requests to simulate
    "M/M/1": (lambda: single(1.0, 1, 0.5), 100_000),
    "M/M/3": (lambda: single(1.0, 3, 2.1), 100_000),
    "tandem": (tandem, 60_000),
    "partition": (lambda: partition(c_threads=2, lam=0.1), 60_000),   # 4.4.2, C doubled
    "feedback": (feedback, 60_000),
    "load-dependent": (lambda: single(0.05, 17, 0.1, alpha=4, m_prime=15, beta=0.01), 30_000),
    "lone requests wait": (lambda: single(0.05, 22, 0.1, alpha=4, m_prime=15, beta=0.01),
                           100_000),
}


@pytest.mark.parametrize("name", NETWORKS)
def test_simulation_agrees_with_analysis_within_5_percent(name):
    build, jobs = NETWORKS[name]
    net = build()
    lam = sum(net.external.values())
    sim = simulate(net, jobs / lam, seed=1)
    assert sim.unfinished <= 1          # a lone request may wait for company that never comes
    assert sim.mean_response == pytest.approx(net.mean_response(), rel=0.05)
    assert sim.throughput == pytest.approx(lam, rel=0.03)
    for station, model in net.results().items():
        got = sim.stations[station]
        assert got.mean_response == pytest.approx(model.mean_response, rel=0.05), station
        assert got.mean_jobs == pytest.approx(model.mean_jobs, rel=0.05), station


def quantile(q: MMm, p: float) -> float:
    lo, hi = 0.0, 1.0
    while q.response_cdf(hi) < p:
        hi *= 2
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if q.response_cdf(mid) < p else (lo, mid)
    return hi


def test_percentiles_follow_the_response_time_distribution():
    """The simulated percentiles against 4.9 inverted; the 99th is the noisiest."""
    q, sim = MMm(2.1, 1.0, 3), simulate(single(1.0, 3, 2.1), 120_000 / 2.1, seed=3)
    for pct, t in sim.percentiles.items():
        assert t == pytest.approx(quantile(q, pct / 100), rel=0.1 if pct == 99 else 0.05), pct
    assert sim.percentiles == sim.stations["s"].percentiles


def test_load_dependent_percentiles_follow_its_response_cdf():
    """The simulator shares mu(n) the way LoadDependent.response_cdf assumes: Fig. 18's stage
    with 10 threads, past its parallelism (4) and below the penalty (15 threads)."""
    shape = {"alpha": 4, "m_prime": 15, "beta": 0.01}
    q = LoadDependent(0.15, 0.05, 10, **shape)
    sim = simulate(single(0.05, 10, 0.15, **shape), 60_000 / 0.15, seed=3)
    for pct, t in sim.percentiles.items():
        assert t == pytest.approx(quantile(q, pct / 100), rel=0.1 if pct == 99 else 0.05), pct


@pytest.mark.parametrize(("service", "second_moment", "jobs"),
                         [("deterministic", 1.0, 60_000), ("erlang", 1.5, 100_000),
                          ("lognormal", math.e, 150_000)])
def test_general_service_times_match_pollaczek_khinchine(service, second_moment, jobs):
    """M/G/1 at rho = 0.5 with mean service 1: E[R] = 1 + lam E[S^2] / (2 (1 - rho))."""
    sim = simulate(single(1.0, 1, 0.5), jobs / 0.5, seed=5, service=service)
    assert sim.mean_response == pytest.approx(1 + 0.5 * second_moment / 1.0, rel=0.05)


@pytest.mark.parametrize("name", ["exponential", "erlang", "deterministic", "lognormal",
                                  "pareto"])
def test_every_distribution_has_the_stage_mean(name):
    rng, draw = random.Random(11), sampler(name, 2.0)
    n = 200_000 if name == "pareto" else 20_000
    assert math.fsum(draw(rng) for _ in range(n)) / n == pytest.approx(2.0, rel=0.03)


def test_heavy_tails_show_in_the_percentiles_not_the_load():
    net = single(1.0, 2, 1.0)
    exp = simulate(net, 30_000, seed=2)
    heavy = simulate(net, 30_000, seed=2, service="pareto", shape=2.1)
    assert heavy.throughput == pytest.approx(exp.throughput, rel=0.03)
    assert heavy.percentiles[50] < exp.percentiles[50]       # most requests are shorter...
    assert heavy.percentiles[99] > exp.percentiles[99]       # ...and a few far longer


def test_a_combined_stage_is_a_custom_service():
    """Fig. 20a: one stage doing two exponential steps of rate mu is an Erlang-2 stage of
    mean 2 / mu; drawing the two steps by hand gives the same answer."""
    net = single(0.035, 2, 0.04)
    erlang = simulate(net, 20_000 / 0.04, seed=4, service="erlang")
    steps = simulate(net, 20_000 / 0.04, seed=4,
                     service={"s": lambda rng: rng.expovariate(0.07) + rng.expovariate(0.07)})
    assert steps.mean_response == pytest.approx(erlang.mean_response, rel=0.05)


def test_same_seed_same_result_other_seed_other_result():
    net = partition(c_threads=2, lam=0.1)
    a, b = simulate(net, 20_000, seed=9), simulate(net, 20_000, seed=9)
    assert a == b
    assert simulate(net, 20_000, seed=10).mean_response != a.mean_response


def test_an_unstable_network_runs_out_its_time_and_says_what_is_left():
    sim = simulate(single(1.0, 1, 3.0), 4_000, seed=1)      # twice what it can serve
    assert sim.unfinished > 1000
    assert sim.stations["s"].mean_jobs > 1000                # growing by 2 a unit of time


def test_bad_arguments():
    with pytest.raises(ValueError):
        simulate(JacksonNetwork(), 10, seed=1)               # nothing arrives
    net = single(1.0, 1, 0.5)
    for kwargs in ({"duration": 0}, {"duration": 10, "warmup": 10},
                   {"duration": 10, "service": "uniform"},
                   {"duration": 10, "service": "erlang", "shape": 1.5},
                   {"duration": 10, "service": "pareto", "shape": 1.0}):
        with pytest.raises(ValueError):
            simulate(net, seed=1, **kwargs)
