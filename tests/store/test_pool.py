"""Dead pooled connections: discarded after the one request they fail, and (PostgreSQL)
replaced before use when they have been idle, as across a database restart."""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam, event, select, text

from ajedrez.domain.errors import StorageError
from ajedrez.store import postgres as postgres_module
from ajedrez.store.db import Database
from ajedrez.store.models import User
from ajedrez.store.postgres import _ping_if_idle
from ajedrez.store.prepared import Prepared

_COUNT = Prepared(select(User.id).where(User.id > bindparam("after")).limit(1))


@pytest.fixture
def own_db(database_url: str, db: Database):  # type: ignore[no-untyped-def]
    """A Database of its own, with a pool of one, so the test knows which connection
    (``db``: the suite's, which has brought the schema up to date)."""
    db = Database(database_url, pool_size=1)
    yield db
    db.dispose()


def _backend_pid(conn) -> int:  # type: ignore[no-untyped-def]
    return conn.connection.dbapi_connection.info.backend_pid  # type: ignore[no-any-return]


def _terminate(pid: int, killer: Database) -> None:
    with killer.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as k:
        k.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})


def test_a_connection_that_dies_in_use_fails_its_request_and_is_discarded(own_db, db):
    with pytest.raises(StorageError), own_db.read_each() as conn:
        if own_db.is_sqlite:
            conn.connection.dbapi_connection.close()  # type: ignore[union-attr]
        else:
            _terminate(_backend_pid(conn), db)
        _COUNT.all(conn, after=0)
    with own_db.read_each() as conn:  # a new connection, not the dead one again
        _COUNT.all(conn, after=0)


def test_only_an_idle_dead_connection_is_pinged_and_replaced(own_db, db, monkeypatch):
    # A SQLite connection is a file handle that nothing outside can end: no ping there.
    assert event.contains(own_db.engine, "checkout", _ping_if_idle) == (not own_db.is_sqlite)
    if own_db.is_sqlite:
        return
    for recently_used in (True, False):
        with own_db.read_each() as conn:
            pid = _backend_pid(conn)
        _terminate(pid, db)  # while it waits in the pool, as in a database restart
        monkeypatch.setattr(
            postgres_module, "PING_IF_IDLE_SECONDS", 3600.0 if recently_used else 0.0
        )
        if recently_used:  # not pinged: the request finds it dead, fails, discards it
            with pytest.raises(StorageError), own_db.read_each() as conn:
                _COUNT.all(conn, after=0)
        else:  # pinged at checkout, found dead, replaced before use
            with own_db.read_each() as conn:
                assert _backend_pid(conn) != pid
                _COUNT.all(conn, after=0)
