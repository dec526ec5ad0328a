"""Queueing models of SEDA services (thesis chapter 4): M/M/m and load-dependent stages,
Jackson networks of them, a simulator for what the formulas cannot reach, and capacity planning
from the profiler's samples (``python -m seda.model plan``)."""

from .load_dependent import LoadDependent
from .mmm import MMm
from .network import JacksonNetwork
from .simulate import SimResult, StationStats, simulate

__all__ = ["JacksonNetwork", "LoadDependent", "MMm", "SimResult", "StationStats", "simulate"]
