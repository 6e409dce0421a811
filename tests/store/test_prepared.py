"""Prepared statements (store/prepared.py) on the suite's database: the rows, the row
counts and the errors they give must be those of ``Connection.execute``."""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam, insert, select, text, update

from ajedrez.domain.errors import StorageError
from ajedrez.store.db import Conflict
from ajedrez.store.models import User
from ajedrez.store.prepared import Prepared
from tests.support.common import unique_name

_INSERT = Prepared(
    insert(User).values(
        name=bindparam("p_name"),
        name_key=bindparam("p_key"),
        password_hash="x",
        comment="",
        active=True,
        admitted_at=bindparam("p_at"),
        changed_at=bindparam("p_at"),
        wins=0,
    )
)
_BY_NAME = Prepared(select(User.id, User.name, User.wins).where(User.name == bindparam("name")))
_WINS = Prepared(
    update(User).where(User.name.like(bindparam("prefix"))).values(wins=bindparam("w"))
)


def test_rows_rowcounts_and_a_conflict(db):
    prefix = unique_name("pp")
    with db.write() as tx:
        for i in range(3):
            assert (
                _INSERT.run(tx.conn, p_name=f"{prefix}{i}", p_key=f"{prefix}{i}", p_at=tx.stamp)
                == 1
            )
    with db.read() as conn:
        row = _BY_NAME.first(conn, name=f"{prefix}1")
        assert (row.name, row.wins) == (f"{prefix}1", 0)
        assert _BY_NAME.first(conn, name=f"{prefix}9") is None
        assert [r.name for r in _BY_NAME.all(conn, name=f"{prefix}2")] == [f"{prefix}2"]
    with db.write() as tx:
        assert _WINS.run(tx.conn, prefix=f"{prefix}%", w=7) == 3
    with pytest.raises(Conflict), db.write() as tx:
        _INSERT.run(tx.conn, p_name=f"{prefix}0", p_key=f"{prefix}0", p_at=tx.stamp)  # unique
    with db.read() as conn:
        expected = conn.execute(
            select(User.name, User.wins).where(User.name.like(f"{prefix}%")).order_by(User.name)
        ).all()
    assert [tuple(r) for r in expected] == [(f"{prefix}{i}", 7) for i in range(3)]


def test_a_broken_statement_fails_as_with_execute(db):
    """SQLite calls an unknown column an OperationalError (StorageError here), PostgreSQL
    a ProgrammingError (a bug: 500): the same as ``Connection.execute`` gives."""
    sql = "SELECT no_such_column FROM users"
    with pytest.raises(Exception) as by_execute, db.read() as conn:
        conn.execute(text(sql))
    with pytest.raises(Exception) as by_prepared, db.read() as conn:
        Prepared(text(sql)).all(conn)
    assert type(by_prepared.value) is type(by_execute.value)
    assert isinstance(by_prepared.value, StorageError) == db.is_sqlite
    with db.read() as conn:  # the pool's connections are still good
        assert conn.execute(text("SELECT 1")).scalar_one() == 1
