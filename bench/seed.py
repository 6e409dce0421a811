"""Seed benchmark accounts straight into the database.

``Accounts.add_user`` hashes each password with argon2 (~40 ms), far too slow for
thousands of users, so the accounts are inserted with SQLAlchemy Core, all sharing one
precomputed hash. The schema must exist already (the server creates it when it starts).
"""

from __future__ import annotations

import time

from sqlalchemy import MetaData, Table, create_engine, insert

from ajedrez.domain.passwords import hash_password

PASSWORD = "bench-password"


def user_names(prefix: str, count: int) -> list[str]:
    """``count`` distinct names of at most 32 characters (the protocol's limit)."""
    names = [f"{prefix}{i:05d}" for i in range(count)]
    if any(len(n) > 32 for n in names):
        raise ValueError(f"prefix {prefix!r} makes names longer than 32 characters")
    return names


def seed_users(database_url: str, names: list[str], password: str = PASSWORD) -> float:
    """Insert active accounts ``names`` with ``password``; returns the seconds it took."""
    start = time.perf_counter()
    password_hash = hash_password(password)
    now = int(time.time())
    rows = [
        {
            "name": name,
            "name_key": name.lower(),
            "password_hash": password_hash,
            "comment": "",
            "active": True,
            "admitted_at": now,
            "changed_at": now,
            "wins": 0,
        }
        for name in names
    ]
    engine = create_engine(database_url)
    try:
        with engine.begin() as conn:
            # The schema the server made, which may be an older build's (--server-source):
            # the columns it has, not those of this checkout's models.
            table = Table("users", MetaData(), autoload_with=conn)
            cols = set(table.c.keys())
            rows = [{k: v for k, v in r.items() if k in cols} for r in rows]
            conn.execute(insert(table), rows)
    finally:
        engine.dispose()
    return time.perf_counter() - start
