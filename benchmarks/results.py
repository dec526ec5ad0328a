"""Where the experiment scripts leave their tables and plots: docs/results/ of the repository,
which docs/benchmarks.md and docs/control.md show."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"


def result_path(name: str) -> Path:
    """The path of the result file ``name`` (``haboob_idle.md``), its directory made if need be."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS / name
