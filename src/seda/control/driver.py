"""What every controller builds on: the base class (declared by the core, which ticks
controllers on its control thread) and taking the samples stage threads leave for them."""

from __future__ import annotations

from collections import deque
from typing import TypeVar

from .._abc import Controller

_T = TypeVar("_T")


def take_all(samples: deque[_T]) -> list[_T]:
    """Everything gathered so far, leaving the deque empty. Stage threads append while the
    control thread takes: popping what was counted loses nothing, where list() + clear() could."""
    return [samples.popleft() for _ in range(len(samples))]


__all__ = ["Controller", "take_all"]
