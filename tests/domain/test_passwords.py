"""Passwords exist only as slow salted hashes (their upgrade at login is in
tests/e2e/test_password_upgrade.py)."""

from __future__ import annotations

from ajedrez.domain.passwords import hash_password, verify


def test_hash_is_argon2id_salted_and_verifies() -> None:
    first, second = hash_password("s3cret"), hash_password("s3cret")
    assert first.startswith("$argon2id$") and first != second
    assert "s3cret" not in first
    assert verify("s3cret", first) == (True, None)
    assert verify("wrong", first)[0] is False


def test_malformed_stored_hash_is_a_wrong_password_not_a_crash() -> None:
    assert verify("x", "not a hash") == (False, None)
