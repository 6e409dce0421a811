"""A login over TCP upgrades a stored password hash that is weaker than today's: a legacy
PBKDF2 hash, or argon2 with weaker parameters. The hashing itself is in
tests/domain/test_passwords.py.
"""

from __future__ import annotations

from passlib.hash import argon2, pbkdf2_sha256
from sqlalchemy import select, update

from ajedrez.store.models import User
from tests.support.common import PASSWORD


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
