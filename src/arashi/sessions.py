"""Web sessions, kept in the database: a session is a random key of 256 bits (``secrets``)
that the browser holds in a cookie; the database holds only its SHA-256, so a copy of the
database gives no one a way in. Each session has its own CSRF token, which every
state-changing form carries, and an expiry: a session unused past it is gone."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from .db import Pool

KEY_BYTES = 32                 # 256 bits of key, 256 of CSRF token
LIFETIME = 8 * 3600.0          # seconds a session lives after its last use


@dataclass(frozen=True)
class Session:
    key: str                   # the cookie's value (only ever in the cookie and here)
    user: int
    csrf: str
    expires: float

    def csrf_ok(self, token: str | None) -> bool:
        """Is ``token`` this session's CSRF token (compared in constant time)?"""
        return token is not None and hmac.compare_digest(token.encode(), self.csrf.encode())


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("ascii", "replace")).hexdigest()


class Sessions:
    """Create, look up and end sessions. ``clock`` is seconds since the epoch (tests move it)."""

    def __init__(self, pool: Pool, lifetime: float = LIFETIME,
                 clock: Callable[[], float] = time.time) -> None:
        self.pool, self.lifetime, self.clock = pool, lifetime, clock

    def create(self, user: int) -> Session:
        """A new session for ``user`` (a fresh key every login: nothing fixed beforehand
        carries over). Expired sessions are cleared on the way."""
        key, csrf = secrets.token_urlsafe(KEY_BYTES), secrets.token_urlsafe(KEY_BYTES)
        now = self.clock()
        with self.pool.transaction(write=True) as tx:
            tx.execute("DELETE FROM sessions WHERE expires <= ?", (now,))
            tx.execute("INSERT INTO sessions (key_hash, user_id, csrf, created, expires)"
                       " VALUES (?, ?, ?, ?, ?)", (_hash(key), user, csrf, now,
                                                   now + self.lifetime))
        return Session(key, user, csrf, now + self.lifetime)

    def get(self, key: str | None) -> Session | None:
        """The live session with cookie value ``key``, or None (none, expired, or malformed).
        A session used in the second half of its life is extended."""
        if not key or len(key) > 200:
            return None
        now = self.clock()
        with self.pool.transaction() as tx:
            row = tx.execute("SELECT user_id, csrf, expires FROM sessions WHERE key_hash = ?",
                             (_hash(key),)).fetchone()
        if row is None:
            return None
        user, csrf, expires = int(row[0]), row[1], float(row[2])
        if expires <= now:
            self.end(key)
            return None
        if expires - now < self.lifetime / 2:
            expires = now + self.lifetime
            with self.pool.transaction(write=True) as tx:
                tx.execute("UPDATE sessions SET expires = ? WHERE key_hash = ?",
                           (expires, _hash(key)))
        return Session(key, user, csrf, expires)

    def end(self, key: str) -> None:
        """Log out: the session is gone from the database."""
        with self.pool.transaction(write=True) as tx:
            tx.execute("DELETE FROM sessions WHERE key_hash = ?", (_hash(key),))
