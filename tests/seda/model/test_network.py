"""Jackson networks (thesis 4.16-4.21) and the worked numbers of 4.4.2."""

from __future__ import annotations

import math

import pytest

from seda.model import JacksonNetwork, LoadDependent, MMm

from tests.helpers.networks import partition


def test_thesis_4_4_2_c_is_the_bottleneck_at_0_14():
    net = partition(c_threads=1)
    assert net.max_stable_rate() == pytest.approx(0.14)     # min(2 (4 mu_B), 2 mu_C)
    assert net.bottleneck() == "C"


def test_thesis_4_4_2_a_second_thread_at_c_gives_0_16_and_b_is_the_bottleneck():
    net = partition(c_threads=2)
    assert net.max_stable_rate() == pytest.approx(0.16)     # min(2 (4 mu_B), 2 (2 mu_C))
    assert net.bottleneck() == "B"


def test_max_stable_rate_is_the_edge_of_stability():
    net = partition(c_threads=2)
    top = net.max_stable_rate()
    net.arrive("A", top * 0.999)
    assert all(r.stable for r in net.results().values())
    assert net.mean_response() < math.inf
    net.arrive("A", top * 1.001)
    assert not net.results()["B"].stable and net.mean_response() == math.inf


def test_traffic_equations_with_feedback():
    """4.16 with a loop: a -> b always, b -> a 30 % of the time, c fed by both."""
    net = JacksonNetwork()
    for name in "abc":
        net.add_station(name, 10.0, 1)
    net.route("a", "b", 1.0)
    net.route("b", "a", 0.3)
    net.route("b", "c", 0.5)
    net.arrive("a", 1.4)
    net.arrive("c", 0.5)
    rates = net.arrival_rates()
    assert rates["a"] == pytest.approx(2.0)                 # 1.4 + 0.3 lam_b, lam_b = lam_a
    assert rates["b"] == pytest.approx(2.0)
    assert rates["c"] == pytest.approx(1.5)
    assert net.arrival_rates(scale=2.0)["c"] == pytest.approx(3.0)


def test_stages_behave_independently_and_little_holds_for_the_whole():
    net = partition(c_threads=2)
    net.arrive("A", 0.1)
    results = net.results()
    assert results["B"].mean_response == MMm(0.05, 0.02, 4).mean_response
    expected = (MMm(0.1, 0.9, 1).mean_jobs + MMm(0.05, 0.02, 4).mean_jobs
                + MMm(0.05, 0.07, 2).mean_jobs) / 0.1
    assert net.mean_response() == pytest.approx(expected)
    # per request: A, then B or C with equal chance
    per_path = (results["A"].mean_response
                + (results["B"].mean_response + results["C"].mean_response) / 2)
    assert net.mean_response() == pytest.approx(per_path)
    assert net.station("C") is not None and net.station("C").lam == pytest.approx(0.05)


def test_load_dependent_stations_count_every_thread_in_the_network():
    net = JacksonNetwork()
    net.add_station("front", 1.0, 10)
    net.add_station("back", 0.05, 10, alpha=4, m_prime=15, beta=0.01)
    net.route("front", "back", 1.0)
    net.arrive("front", 0.1)
    back = net.station("back")
    assert isinstance(back, LoadDependent) and back.total_threads == 20
    assert back.capacity == pytest.approx(0.15)              # 4 mu - 0.01 (20 - 15)
    assert net.max_stable_rate() == pytest.approx(0.15 / 0.1)
    assert isinstance(net.station("front"), MMm)


def test_mistakes_are_caught_early():
    net = JacksonNetwork()
    net.add_station("a", 1.0, 1)
    net.add_station("b", 1.0, 1)
    with pytest.raises(ValueError):
        net.add_station("a", 1.0, 1)
    with pytest.raises(KeyError):
        net.route("a", "nowhere", 0.5)
    with pytest.raises(ValueError):
        net.route("a", "b", 1.5)
    net.route("a", "b", 0.7)
    with pytest.raises(ValueError):
        net.route("a", "a", 0.4)                             # 1.1 in all
    with pytest.raises(TypeError):
        net.add_station("c", 1.0, 1, gamma=2)
    with pytest.raises(ValueError):
        net.add_station("c", 1.0, 1, alpha=-1)
    with pytest.raises(ValueError):
        net.mean_response()                                  # nothing arrives yet
    net.route("b", "a", 1.0)
    net.route("a", "b", 1.0)
    net.arrive("a", 1.0)
    with pytest.raises(ValueError, match="never leave"):
        net.arrival_rates()
