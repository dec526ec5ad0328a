"""Failed logins slowed per account and per address, doubling, cleared by a success."""

from __future__ import annotations

from arashi.throttle import LoginThrottle


def test_failures_past_the_free_ones_wait_longer_and_longer():
    now = [0.0]
    t = LoginThrottle(free_per_account=2, free_per_address=3, base=1, ceiling=8,
                      clock=lambda: now[0])
    for _ in range(2):
        assert t.wait("Alice", "10.0.0.1") == 0
        t.failed("Alice", "10.0.0.1")
    assert t.wait("alice", "10.0.0.2") == 1            # the account, from anywhere
    t.failed("alice", "10.0.0.2")
    assert t.wait("alice", "10.0.0.3") == 2
    for _ in range(5):
        t.failed("alice", "10.0.0.3")
    assert t.wait("alice", "10.0.0.4") == 8            # the ceiling
    now[0] = 8
    assert t.wait("alice", "10.0.0.4") == 0
    t.succeeded("alice", "10.0.0.4")
    assert t.wait("alice", "10.0.0.9") == 0


def test_an_address_trying_many_accounts_is_slowed():
    t = LoginThrottle(free_per_account=100, free_per_address=3, clock=lambda: 0.0)
    for name in ("a", "b", "c"):
        t.failed(name, "10.0.0.1")
    assert t.wait("d", "10.0.0.1") == 1 and t.wait("d", "10.0.0.2") == 0


def test_memory_is_bounded():
    t = LoginThrottle(keep=10, clock=lambda: 0.0)
    for i in range(100):
        t.failed(f"u{i}", "10.0.0.1")
    assert len(t._failures) <= 10


def test_a_long_siege_stays_at_the_ceiling():
    """Failures keep counting past the ceiling (concurrent attempts all pass ``wait`` before
    any fails); the delay must stay at the ceiling, not overflow a float and fail every login
    of that account from then on."""
    t = LoginThrottle(clock=lambda: 0.0)
    for _ in range(1100):
        t.failed("alice", "10.0.0.1")
    assert t.wait("alice", "10.0.0.2") == 300.0
