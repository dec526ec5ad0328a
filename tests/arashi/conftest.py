"""Fixtures of the Arashi tests."""

from __future__ import annotations

import pytest

from tests.helpers.arashi_env import new_store
from tests.helpers.postgres import BACKENDS, database_url


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path):
    """An empty, migrated store, once on each backend."""
    data = tmp_path / "data"
    s = new_store(data, database_url(request.param, data))
    yield s
    s.pool.close()
