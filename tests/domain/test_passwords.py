"""Passwords exist only as slow salted hashes, and old hashes are upgraded at login."""

from __future__ import annotations

from passlib.hash import argon2, pbkdf2_sha256
from sqlalchemy import select, update

from ajedrez.domain.passwords import hash_password, verify
from ajedrez.store.models import User
from tests.support.common import PASSWORD


def test_hash_is_argon2id_salted_and_verifies() -> None:
    first, second = hash_password("s3cret"), hash_password("s3cret")
    assert first.startswith("$argon2id$") and first != second
    assert "s3cret" not in first
    assert verify("s3cret", first) == (True, None)
    assert verify("wrong", first)[0] is False


def test_malformed_stored_hash_is_a_wrong_password_not_a_crash() -> None:
    assert verify("x", "not a hash") == (False, None)


def _stored_hash(db, name: str) -> str:
    with db.read() as conn:
        return conn.scalar(select(User.password_hash).where(User.name == name))


def test_login_upgrades_a_legacy_hash(server, db, new_user) -> None:
    name = new_user()
    with db.write() as tx:
        tx.conn.execute(
            update(User).where(User.name == name).values(password_hash=pbkdf2_sha256.hash(PASSWORD))
        )
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102
    upgraded = _stored_hash(db, name)
    assert upgraded.startswith("$argon2id$") and argon2.verify(PASSWORD, upgraded)


def test_login_upgrades_weaker_argon2_parameters(server, db, new_user) -> None:
    name = new_user()
    weak = argon2.using(type="ID", memory_cost=1024, time_cost=1).hash(PASSWORD)
    with db.write() as tx:
        tx.conn.execute(update(User).where(User.name == name).values(password_hash=weak))
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102
    upgraded = _stored_hash(db, name)
    assert upgraded != weak and "m=19456" in upgraded
