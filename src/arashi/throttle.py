"""Failed logins slowed down, per account and per client address: after ``free`` failures in
a row, each further attempt on that key must wait ``base * 2**(n - free)`` seconds (at most
``ceiling``) after the last failure; an attempt too early is refused at once, without checking
the password, so guessing costs time while no server thread sleeps. A success clears both
keys. Kept in memory, bounded: the oldest keys go first."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable


class LoginThrottle:
    def __init__(self, free_per_account: int = 3, free_per_address: int = 10,
                 base: float = 1.0, ceiling: float = 300.0, keep: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.free = {"account": free_per_account, "address": free_per_address}
        self.base, self.ceiling, self.keep, self.clock = base, ceiling, keep, clock
        self._failures: OrderedDict[tuple[str, str], tuple[int, float]] = OrderedDict()
        self._lock = threading.Lock()

    def _keys(self, account: str, address: str) -> tuple[tuple[str, str], tuple[str, str]]:
        return ("account", account.lower()), ("address", address)

    def wait(self, account: str, address: str) -> float:
        """Seconds before an attempt for ``account`` from ``address`` is allowed (0: now)."""
        now, longest = self.clock(), 0.0
        with self._lock:
            for key in self._keys(account, address):
                n, last = self._failures.get(key, (0, 0.0))
                over = n - self.free[key[0]]
                if over >= 0:       # (2**over itself would overflow a float past 1023)
                    delay = min(self.ceiling, self.base * 2.0 ** min(over, 64))
                    longest = max(longest, last + delay - now)
        return max(0.0, longest)

    def failed(self, account: str, address: str) -> None:
        now = self.clock()
        with self._lock:
            for key in self._keys(account, address):
                n, _ = self._failures.pop(key, (0, 0.0))
                self._failures[key] = (n + 1, now)
            while len(self._failures) > self.keep:
                self._failures.popitem(last=False)

    def succeeded(self, account: str, address: str) -> None:
        with self._lock:
            for key in self._keys(account, address):
                self._failures.pop(key, None)
