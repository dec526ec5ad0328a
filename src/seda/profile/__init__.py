"""The profiler: stage-graph rendering, the periodic sampler and its plots (thesis 5.3.5)."""
