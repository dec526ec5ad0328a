"""The overlay experiment: router processes joined as a random regular graph, a servent at every
node. A small overlay in the default run; the 20-node one of issue 15 is marked slow."""

from __future__ import annotations

import random

import pytest

from benchmarks.gnutella_overlay import (
    distances,
    expected_duplicates,
    ok_result,
    regular_graph,
    report,
    run,
)


@pytest.mark.parametrize(("n", "degree"), [(6, 3), (20, 4), (10, 2)])
def test_the_graph_is_simple_regular_and_connected(n, degree):
    edges = regular_graph(n, degree, random.Random(n))
    assert len(set(edges)) == len(edges) == n * degree // 2
    assert all(a < b for a, b in edges)
    assert sorted(v for e in edges for v in e) == sorted(list(range(n)) * degree)
    assert max(distances(n, edges, 0)) < n


def test_duplicates_expected_on_a_ring():
    # 0-1-2-3-0: a query from 0 with TTL 7 reaches 1 and 3 (first copies), and 2 twice
    edges = [(0, 1), (1, 2), (2, 3), (0, 3)]
    dist = distances(4, edges, 0)
    assert dist == [0, 1, 2, 1]
    assert expected_duplicates(edges, dist, 7) == 2 + 1 + 1 + 1 - 3     # 0 sends 2, others 1
    assert expected_duplicates(edges, dist, 2) == 0      # 1 and 3 get it, send it no further


def check(result: dict) -> None:
    text = report(result)
    assert ok_result(result), text
    assert result["connections_closed"] == 0, text
    for r in result["reach"]:
        fewer = r["duplicates_expected"] - r["duplicates_dropped"]   # spent first copies
        assert 0 <= fewer <= r["expired"], text
    assert result["pongs"]["pongs_each_once"], text


def test_a_small_overlay_delivers_each_query_and_answer_exactly_once():
    check(run(6, 3, seed=2, reach=10, total=300, batch=50, samples=2))


@pytest.mark.slow
def test_twenty_routers_of_degree_four_over_a_long_run():
    result = run(20, 4, seed=1, reach=100, total=20_000, batch=100, samples=10)
    check(result)
    samples = result["long_run"]["samples"]
    # every fresh GUID is remembered (tables bounded at 200 000 per router, far above this)
    # and costs each router well under a kilobyte
    grown = samples[-1]["rss_mb_max"] - samples[0]["rss_mb_max"]
    assert grown < 20_000 * 1024 / 2**20, report(result)
