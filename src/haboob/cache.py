"""The page cache's memory: entries under a byte budget, with a selectable replacement policy
(the strategies of the JAWS paper): LRU, LFU, or GreedyDual-Size, which favours small files."""

from __future__ import annotations

import heapq
import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class _Lru:
    def __init__(self) -> None:
        self.order: OrderedDict[Any, None] = OrderedDict()

    def add(self, key: Any, size: int) -> None:
        self.order[key] = None

    def hit(self, key: Any, count: int = 1) -> None:
        self.order.move_to_end(key)

    def remove(self, key: Any) -> None:
        self.order.pop(key, None)

    def victim(self) -> Any:
        return next(iter(self.order))

    def evict(self) -> Any:
        return self.order.popitem(last=False)[0]


class _Ranked:
    """Evict the lowest rank; a heap with lazy deletion (stale entries are skipped)."""

    def __init__(self) -> None:
        self.heap: list = []
        self.rank: dict[Any, tuple] = {}
        self.seq = itertools.count()         # ties go to the least recently touched

    def _push(self, key: Any, rank: float) -> None:
        entry = (rank, next(self.seq), key)
        self.rank[key] = entry
        heapq.heappush(self.heap, entry)
        if len(self.heap) > 4 * len(self.rank) + 64:     # too many stale entries: rebuild
            self.heap = list(self.rank.values())
            heapq.heapify(self.heap)

    def remove(self, key: Any) -> None:
        self.rank.pop(key, None)

    def lowest(self) -> tuple:
        """The entry of the lowest rank, (rank, seq, key)."""
        while True:
            entry = self.heap[0]
            if self.rank.get(entry[2]) is entry:
                return entry
            heapq.heappop(self.heap)

    def victim(self) -> Any:
        return self.lowest()[2]

    def evict(self) -> Any:
        key = self.lowest()[2]
        self.remove(key)
        return key


class _Lfu(_Ranked):
    def __init__(self) -> None:
        super().__init__()
        self.hits: dict[Any, int] = {}

    def add(self, key: Any, size: int) -> None:
        self.hits[key] = 1
        self._push(key, 1)

    def hit(self, key: Any, count: int = 1) -> None:
        self.hits[key] += count
        self._push(key, self.hits[key])

    def remove(self, key: Any) -> None:
        super().remove(key)
        self.hits.pop(key, None)


class _GreedyDualSize(_Ranked):
    """H(p) = L + 1/size(p) on insertion and on every hit; evict the smallest H and raise L to
    it (Cao and Irani, 1997), so large files go first and old ones age out. Only an eviction
    raises L: a file removed because it changed or went away says nothing about the others."""

    def __init__(self) -> None:
        super().__init__()
        self.inflation = 0.0
        self.sizes: dict[Any, int] = {}

    def add(self, key: Any, size: int) -> None:
        self.sizes[key] = max(1, size)
        self._push(key, self.inflation + 1.0 / self.sizes[key])

    def hit(self, key: Any, count: int = 1) -> None:
        self._push(key, self.inflation + 1.0 / self.sizes[key])

    def remove(self, key: Any) -> None:
        super().remove(key)
        self.sizes.pop(key, None)

    def evict(self) -> Any:
        self.inflation = self.lowest()[0]
        return super().evict()


POLICIES = {"lru": _Lru, "lfu": _Lfu, "gds": _GreedyDualSize}


class PageCache:
    """Values with sizes, at most ``budget`` bytes in all; entries larger than ``max_entry`` are
    not cached. ``on_remove(key)`` is told of every entry that leaves (evicted or replaced).
    ``served(key)`` says how often an entry was used without a ``get`` since it was last asked
    (a copy answered elsewhere): the policy's choice of an entry to evict is asked first, and
    one used meanwhile is credited and kept (a second chance, as CLOCK gives), so that what is
    only ever served from a copy is not taken for unused. Not thread-safe: the page cache
    stage owns it."""

    def __init__(self, budget: int = 200 * 2**20, policy: str = "lru",
                 max_entry: int = 2**20, on_remove: Callable[[Any], None] | None = None,
                 served: Callable[[Any], int] | None = None) -> None:
        if policy not in POLICIES:
            raise ValueError(f"cache policy is one of {', '.join(POLICIES)}, not {policy!r}")
        self.budget, self.max_entry = budget, max_entry
        self.on_remove, self.served = on_remove, served
        self.policy = POLICIES[policy]()
        self.entries: dict[Any, tuple[Any, int]] = {}
        self.used = 0
        self.hits = self.misses = self.evictions = 0

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, key: Any) -> bool:
        return key in self.entries

    def get(self, key: Any) -> Any:
        entry = self.entries.get(key)
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        self.policy.hit(key)
        return entry[0]

    def credit(self, key: Any, hits: int) -> None:
        """Count ``hits`` served for ``key`` without a ``get`` (answered from a copy elsewhere)."""
        if hits and key in self.entries:
            self.hits += hits
            self.policy.hit(key, hits)

    def put(self, key: Any, value: Any, size: int) -> bool:
        """Cache ``value``; False if it is too large to keep. Evicts until it fits."""
        if size > self.max_entry or size > self.budget:
            return False
        self.remove(key)
        while self.used + size > self.budget:
            if self.served is not None:
                # (served() counts from its last answer: a victim kept once has nothing new
                # to say when asked again, so this ends)
                victim = self.policy.victim()
                hits = self.served(victim)
                if hits:
                    self.credit(victim, hits)
                    continue
            self._forget(self.policy.evict())
            self.evictions += 1
        self.entries[key] = (value, size)
        self.used += size
        self.policy.add(key, size)
        return True

    def remove(self, key: Any) -> None:
        if key in self.entries:
            self.policy.remove(key)
            self._forget(key)

    def _forget(self, key: Any) -> None:
        """The entry has left the policy (removed or evicted): drop it and say so."""
        self.used -= self.entries.pop(key)[1]
        if self.on_remove is not None:
            self.on_remove(key)
