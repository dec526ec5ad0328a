"""The profiler: stage-graph rendering, the periodic sampler and its plots (thesis 5.3.5)."""

from .graph import to_dot

__all__ = ["to_dot"]
