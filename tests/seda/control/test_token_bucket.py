"""The token bucket: a rate and a depth, read against the clock at each decision."""

from __future__ import annotations

from seda.control import TokenBucket

from tests.helpers.fakes import FakeClock


def test_token_bucket_rate_and_depth():
    clock = FakeClock()
    bucket = TokenBucket(rate=10, depth=2, clock=clock)
    assert [bucket.accept() for _ in range(3)] == [True, True, False]
    clock.now = 0.1                      # one token earned
    assert [bucket.accept(), bucket.accept()] == [True, False]
    clock.now = 10.0                     # never more than depth
    assert [bucket.accept() for _ in range(3)] == [True, True, False]
    bucket.set_rate(0)
    clock.now = 20.0
    assert not bucket.accept()
