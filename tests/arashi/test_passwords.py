"""Passwords: salted scrypt, verified in constant time, malformed hashes verify nothing."""

from arashi.passwords import hash_password, verify_password


def test_a_password_verifies_against_its_hash_only():
    stored = hash_password("correct horse")
    assert stored.startswith("scrypt$16384$8$1$")
    assert verify_password("correct horse", stored)
    assert not verify_password("correct horsE", stored)
    assert not verify_password("", stored)


def test_the_same_password_hashes_differently_each_time():
    assert hash_password("pw") != hash_password("pw")


def test_malformed_hashes_verify_nothing():
    for bad in ("", "plain", "md5$1$2$3$4$5", "scrypt$x$8$1$AA==$AA==", "scrypt$16$8$1$!!$AA=="):
        assert not verify_password("pw", bad)
