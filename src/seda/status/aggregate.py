"""The whole server from its workers' snapshots: counts add up, a percentile or a batch size is
the worst worker's, a window the longest; the stage graph's edges add up."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

LARGEST = frozenset({"p90_ms", "batch", "window_s"})
# What every worker of a cluster stage sees alike (the stream's state, not its own share):
# the stage's ``queue`` and these of its ``cluster`` numbers are taken once, not added up.
CLUSTER_WIDE = frozenset({"queue", "backlog", "pending", "oldest_ms", "dead_letters",
                          "consumers"})


def merge(values: list[Any], key: str | None = None, largest: frozenset[str] = LARGEST) -> Any:
    """Several workers' values of one thing (a number, or a dict of them, nested) as one.
    Anything that is not a number (a stage's ``manager``) is the first worker's."""
    first = values[0]
    if isinstance(first, dict):
        dicts = [v for v in values if isinstance(v, dict)]
        keys = dict.fromkeys(k for d in dicts for k in d)
        inner = LARGEST | CLUSTER_WIDE if "cluster" in keys or key == "cluster" else LARGEST
        return {k: merge([d[k] for d in dicts if k in d], k, inner) for k in keys}
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return first
    return max(values) if key in largest else sum(values)


def merge_graph(graphs: Iterable[Iterable[tuple[str, str, int]]]) -> list[tuple[str, str, int]]:
    """Stage graphs as ``(source, target, events)``, each edge's events summed."""
    total: dict[tuple[str, str], int] = {}
    for graph in graphs:
        for src, dst, count in graph:
            total[src, dst] = total.get((src, dst), 0) + count
    return [(src, dst, count) for (src, dst), count in sorted(total.items())]
