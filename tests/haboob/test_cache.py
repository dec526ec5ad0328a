"""The page cache: byte budget and the three replacement policies."""

from __future__ import annotations

import pytest

from haboob.cache import PageCache


def fill(cache, *items):
    for key, size in items:
        assert cache.put(key, f"value of {key}", size)


def test_lru_evicts_the_least_recently_used():
    cache = PageCache(budget=30, policy="lru")
    fill(cache, ("a", 10), ("b", 10), ("c", 10))
    cache.get("a")
    fill(cache, ("d", 10))
    assert set(cache.entries) == {"a", "c", "d"} and cache.evictions == 1


def test_lfu_evicts_the_least_frequently_used():
    cache = PageCache(budget=30, policy="lfu")
    fill(cache, ("a", 10), ("b", 10), ("c", 10))
    for _ in range(3):
        cache.get("a")
    cache.get("b")
    fill(cache, ("d", 10))
    assert "c" not in cache and {"a", "b", "d"} <= set(cache.entries)
    fill(cache, ("e", 10))                  # d (1 use, newest) goes before b (2 uses)
    assert "d" not in cache and "b" in cache


def test_greedy_dual_size_prefers_to_keep_small_files():
    cache = PageCache(budget=1000, policy="gds", max_entry=1000)
    fill(cache, ("small", 10), ("big", 900), ("tiny", 5))
    fill(cache, ("another", 90))            # the big one goes, though it is not the oldest
    assert "big" not in cache and {"small", "tiny", "another"} <= set(cache.entries)


def test_greedy_dual_size_ages_out_what_is_no_longer_used():
    cache = PageCache(budget=30, policy="gds")
    fill(cache, ("old", 10))
    for i in range(20):                     # a stream of equally sized, used-once files
        fill(cache, (f"new{i}", 10))
    assert "old" not in cache


def test_greedy_dual_size_ages_the_others_only_by_evicting():
    cache = PageCache(budget=40, policy="gds")
    fill(cache, ("a", 10), ("c", 5), ("d", 20))   # H = L + 1/size: a 0.1, c 0.2, d 0.05
    cache.remove("d")                       # changed on disk: no eviction, L stays 0
    fill(cache, ("e", 20))                  # so e ranks 0.05, as if d had never been cached
    fill(cache, ("f", 10))                  # over budget: the lowest, e, goes (not a, at 0.1)
    assert "e" not in cache and {"a", "c", "f"} <= set(cache.entries)
    assert cache.policy.inflation == pytest.approx(0.05)   # raised by that eviction alone


def test_budget_entry_limit_and_accounting():
    cache = PageCache(budget=100, policy="lru", max_entry=50)
    assert not cache.put("huge", "x", 51)
    fill(cache, ("a", 50), ("b", 50))
    assert cache.used == 100
    fill(cache, ("a", 20))                  # replacing an entry frees its old size
    assert cache.used == 70 and cache.get("a") == "value of a"
    assert cache.get("missing") is None and (cache.hits, cache.misses) == (1, 1)
    cache.remove("a")
    assert cache.used == 50 and len(cache) == 1


def test_unknown_policy():
    with pytest.raises(ValueError, match="lru, lfu, gds"):
        PageCache(policy="fifo")


def test_removals_are_told_and_credits_count_as_hits():
    gone = []
    cache = PageCache(budget=20, policy="lfu", on_remove=gone.append)
    fill(cache, ("a", 10), ("b", 10))
    cache.credit("a", 5)                    # served elsewhere five times: a is the frequent one
    cache.credit("missing", 3)              # nothing to credit
    fill(cache, ("c", 10))
    assert gone == ["b"] and cache.hits == 5
    fill(cache, ("a", 10))                  # replaced: its old value leaves too
    assert gone == ["b", "a"]


@pytest.mark.parametrize("policy", ["lru", "lfu", "gds"])
def test_an_entry_served_from_a_copy_gets_a_second_chance(policy):
    """What is used only through a copy elsewhere (``served``) looks unused to the policy: asked
    before it goes, the cache credits it and evicts the next choice instead."""
    copies = {"a": 0, "b": 0, "c": 0}

    def served(key):
        hits, copies[key] = copies[key], 0
        return hits

    gone = []
    cache = PageCache(budget=20, policy=policy, on_remove=gone.append, served=served)
    fill(cache, ("a", 10), ("b", 10))
    copies["a"] = 3                         # a served three times, never through get()
    fill(cache, ("c", 10))
    assert gone == ["b"] and "a" in cache and cache.hits == 3
    fill(cache, ("d", 10))                  # nothing served since: the policy alone decides
    assert len(gone) == 2 and cache.used <= 20
