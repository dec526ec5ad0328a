"""The thesis's worked example of 4.4.2 (Partition) as a Jackson network, for the model tests."""

from __future__ import annotations

from seda.model import JacksonNetwork


def partition(c_threads: int, lam: float = 1.0) -> JacksonNetwork:
    """A (mu 0.9) sends half its requests to B (0.02, 4 threads), half to C (0.07,
    ``c_threads`` threads); ``lam`` requests per unit of time arrive at A."""
    net = JacksonNetwork()
    net.add_station("A", 0.9, 1)
    net.add_station("B", 0.02, 4)
    net.add_station("C", 0.07, c_threads)
    net.route("A", "B", 0.5)
    net.route("A", "C", 0.5)
    net.arrive("A", lam)
    return net
