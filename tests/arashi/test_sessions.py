"""Sessions in the database: random keys, only their hashes stored, expiry, logout."""

from __future__ import annotations

import pytest

from arashi.sessions import Sessions

from tests.helpers.arashi_env import new_store
from tests.helpers.postgres import BACKENDS, database_url


@pytest.mark.parametrize("backend", BACKENDS)
def test_sessions_expire_and_end(tmp_path, backend):
    store = new_store(tmp_path, database_url(backend, tmp_path))
    try:
        user = store.add_user("alice", "pw")
        now = [1000.0]
        sessions = Sessions(store.pool, lifetime=100, clock=lambda: now[0])
        s = sessions.create(user)
        assert len(s.key) >= 43 and s.key != s.csrf                # 256 bits, url-safe
        with store.pool.transaction() as tx:                       # the key is not stored
            assert tx.execute("SELECT COUNT(*) FROM sessions WHERE key_hash = ?",
                              (s.key,)).fetchone()[0] == 0
        assert sessions.get(s.key).user == user
        assert s.csrf_ok(s.csrf) and not s.csrf_ok(None) and not s.csrf_ok(s.csrf + "x")
        now[0] = 1060                                              # used late: extended
        assert sessions.get(s.key).expires == 1160
        now[0] = 1161
        assert sessions.get(s.key) is None
        t = sessions.create(user)
        sessions.end(t.key)
        assert sessions.get(t.key) is None and sessions.get("") is None
        assert sessions.get("x" * 1000) is None
    finally:
        store.pool.close()
