"""A token bucket: admit ``rate`` events per second on average, bursts of up to ``depth``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class TokenBucket:
    """Admission predicate. Tokens are earned continuously but never beyond ``depth``, so each
    decision reads the clock (refilling only when the bucket looks empty would over-admit up
    to a whole bucket). Threads may race on the count; the error is a token, never a runaway."""

    def __init__(self, rate: float, depth: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if rate < 0 or depth < 1:
            raise ValueError(f"a token bucket needs rate >= 0 and depth >= 1, got {rate}, {depth}")
        self.rate, self.depth, self.clock = rate, depth, clock
        self.tokens = depth
        self.last = clock()

    def accept(self, ev: Any = None) -> bool:
        now = self.clock()
        tokens = min(self.depth, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if tokens >= 1:
            self.tokens = tokens - 1
            return True
        self.tokens = tokens
        return False

    def set_rate(self, rate: float, depth: float | None = None) -> None:
        """Change the rate from now on (tokens earned so far at the old rate are kept)."""
        now = self.clock()
        self.tokens = min(self.depth, self.tokens + (now - self.last) * self.rate)
        self.last = now
        self.rate = rate
        if depth is not None:
            self.depth = max(1.0, depth)
            self.tokens = min(self.tokens, self.depth)

    def state(self) -> dict[str, Any]:
        return {"rate": self.rate, "depth": self.depth}
