"""Passwords as slow salted hashes (scrypt, from the standard library): a stolen database costs
an attacker real work per guess, and two users with the same password get different hashes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import os

# scrypt's cost: 16 MiB of memory and some tens of milliseconds per hash (RFC 7914's
# interactive-login figures). Stored with each hash, so they can be raised later.
N, R, P = 2**14, 8, 1
SALT_BYTES = 16
KEY_BYTES = 32
SCHEME = "scrypt"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _derive(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p,
                          maxmem=256 * n * r + 2**20, dklen=KEY_BYTES)


def hash_password(password: str) -> str:
    """``scrypt$N$R$P$SALT$KEY``: everything ``verify_password`` needs, in one string."""
    salt = os.urandom(SALT_BYTES)
    key = _derive(password, salt, N, R, P)
    return f"{SCHEME}${N}${R}${P}${_b64(salt)}${_b64(key)}"


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` is the one ``stored`` was made from; compared in constant time.
    A malformed ``stored`` value verifies nothing."""
    try:
        scheme, n, r, p, salt, key = stored.split("$")
        if scheme != SCHEME:
            return False
        expected = base64.b64decode(key, validate=True)
        got = _derive(password, base64.b64decode(salt, validate=True), int(n), int(r), int(p))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, expected)
