"""Fixtures of the cluster queue's tests: the session's Redis, emptied for each test."""

from __future__ import annotations

import pytest

from tests.helpers import redis_server


@pytest.fixture
def redis_url() -> str:
    return redis_server.server().url


@pytest.fixture
def client(redis_url):
    import redis as redis_client
    with redis_client.Redis.from_url(redis_url) as c:
        yield c
