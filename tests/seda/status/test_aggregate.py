"""Several workers' snapshots as one service: counts add up, the worst percentile wins."""

from __future__ import annotations

from seda.status.aggregate import merge, merge_graph


def test_workers_add_up():
    a = {"http": {"queue": 1, "threads": 1, "p90_ms": 2.0, "batch": 64, "manager": "loop",
                  "handler": {"responses": {"200": 5}}}}
    b = {"http": {"queue": 2, "threads": 1, "p90_ms": 9.0, "batch": 32, "manager": "loop",
                  "handler": {"responses": {"200": 1, "404": 1}}},
         "haboob.status.share": {"queue": 0}}
    assert merge([a, b]) == {
        "http": {"queue": 3, "threads": 2, "p90_ms": 9.0, "batch": 64, "manager": "loop",
                 "handler": {"responses": {"200": 6, "404": 1}}},
        "haboob.status.share": {"queue": 0}}
    assert merge_graph([[("a", "b", 1)], [["a", "b", 2], ["b", "a", 1]]]) == [
        ("a", "b", 3), ("b", "a", 1)]


def test_a_cluster_stage_is_the_same_stream_seen_by_every_worker():
    """Its queue and the stream's numbers are taken once; each worker's own counts add up."""
    def worker(redelivered):
        return {"deliver": {"queue": 7, "processed": 5, "manager": "cluster",
                            "cluster": {"stream": "seda:deliver", "backlog": 7, "pending": 2,
                                        "consumers": 2, "dead_letters": 1,
                                        "redelivered": redelivered}}}

    assert merge([worker(1), worker(2)]) == {
        "deliver": {"queue": 7, "processed": 10, "manager": "cluster",
                    "cluster": {"stream": "seda:deliver", "backlog": 7, "pending": 2,
                                "consumers": 2, "dead_letters": 1, "redelivered": 3}}}
