"""Benchmark scripts and the load generator; a package so `python -m benchmarks.loadgen` works."""
