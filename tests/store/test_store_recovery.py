"""A store that could not be written for a while: writes come back by themselves.

SQLite: the database file and its WAL are made immutable (``chattr +i``) under a running
server. A connection opened meanwhile gets a read-only file descriptor and keeps it; kept
by the server, it would refuse every write ("attempt to write a readonly database")
until a restart. PostgreSQL: the server's role is made read-only
(``default_transaction_read_only``) and its connections are ended, so that it opens new
ones while writes are refused; those keep refusing writes after the role is writable
again. Either way: 401 while the store refuses writes, then, within seconds of it taking
them again, a move and a new session's write succeed, with no restart.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import make_url, text

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.errors import StorageError
from ajedrez.store.db import Database, Tx
from ajedrez.store.prepared import Prepared
from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.hardening import log_in
from tests.support.play import Match, challenge_and_accept
from tests.support.server import ServerProcess, start_server

RECOVERY_SECONDS = 5.0  # the most a write may take to succeed once the store takes writes
ATTEMPTS_WHILE_READ_ONLY = 3  # each may open a new connection, which must not be kept


def _users(db: Database, count: int) -> list[str]:
    accounts = Accounts(db)
    names = [unique_name("ro") for _ in range(count)]
    for name in names:
        accounts.add_user(name, PASSWORD, "")
    return names


def _writes_refused_then_recovered(
    srv: ServerProcess, names: list[str], read_only: Callable[[], AbstractContextManager[Any]]
) -> float:
    """Play a move, make the store refuse writes, check the 401s, let it take writes again;
    returns the seconds until a move and a new session's write were both accepted."""
    ana, bob, cid, dan = names
    w, b = log_in(srv.host, srv.port, ana, PASSWORD), log_in(srv.host, srv.port, bob, PASSWORD)
    match: Match = challenge_and_accept(ana, w, bob, b)
    match.play("e4")
    with read_only():
        for _ in range(ATTEMPTS_WHILE_READ_ONLY):
            refused = match.send("e5")
            assert refused.code == 401 and "database" in refused.text, refused
            with log_in(srv.host, srv.port, cid, PASSWORD) as c:
                refused = c.cmd(f"JUEG:{dan}")
                assert refused.code == 401, refused
    writable = time.monotonic()
    assert wait_for(lambda: match.send("e5").code == 208, RECOVERY_SECONDS), (
        "a move was still refused after the store took writes again:\n" + srv.log_text()[-3000:]
    )

    def new_session_writes() -> bool:
        with log_in(srv.host, srv.port, cid, PASSWORD) as c:
            return c.cmd(f"JUEG:{dan}").code == 200

    assert wait_for(new_session_writes, RECOVERY_SECONDS), srv.log_text()[-3000:]
    recovered = time.monotonic() - writable
    match.play("Nf3")
    for conn in (w, b):
        conn.close()
    assert srv.proc.poll() is None
    assert "Traceback" not in srv.log_text()
    return recovered


def test_writes_recover_once_the_store_takes_writes_again(own_db: tuple[str, Database]) -> None:
    url, db = own_db
    names = _users(db, 4)
    read_only = _sqlite_read_only if db.is_sqlite else _postgresql_read_only
    recovered = read_only(url, names)
    print(f"writes accepted again {recovered:.3f} s after the store took writes")


# -- SQLite: an immutable file ------------------------------------------------------------


def _chattr(flag: str, paths: list[Path]) -> None:
    done = subprocess.run(["chattr", flag, *map(str, paths)], capture_output=True, text=True)
    # No skip: CI runs as root on a file system with attributes, where this must work.
    assert done.returncode == 0, (
        f"chattr {flag} failed (this test needs root and a file system with the immutable "
        f"attribute, such as ext4): {done.stderr.strip()}"
    )


@contextlib.contextmanager
def _immutable(paths: list[Path]) -> Iterator[None]:
    _chattr("+i", paths)
    try:
        for path in paths:  # root too is refused: the attribute is really there
            with pytest.raises(PermissionError):
                path.open("ab").close()
        yield
    finally:
        _chattr("-i", paths)


def _sqlite_read_only(url: str, names: list[str]) -> float:
    database = make_url(url).database
    assert database
    path = Path(database)
    srv = start_server(url, "--sqlite-busy-timeout", "0.5")
    try:
        # Connected: the WAL exists, as it does under any running server.
        with log_in(srv.host, srv.port, names[0], PASSWORD) as c:
            assert c.cmd("SRNK").code == 205
        wal = path.with_name(path.name + "-wal")
        assert wal.exists()
        return _writes_refused_then_recovered(srv, names, lambda: _immutable([path, wal]))
    finally:
        srv.stop()


# -- PostgreSQL: a role made read-only ----------------------------------------------------


def _postgresql_read_only(url: str, names: list[str]) -> float:
    """The server logs in as a role of its own, so that making it read-only and ending its
    connections touches no other test on the shared database."""
    parsed = make_url(url)
    schema = parsed.query["options"].removeprefix("-csearch_path=")  # type: ignore[union-attr]
    role = f"ajedrez_ro_{uuid.uuid4().hex[:10]}"
    admin = psycopg.connect(
        host=parsed.host, port=parsed.port or 5432, user=parsed.username,
        dbname=parsed.database, autocommit=True,
    )  # fmt: skip

    def sql(statement: str) -> None:
        admin.execute(statement)  # type: ignore[arg-type]

    sql(f"CREATE ROLE {role} LOGIN")
    srv: ServerProcess | None = None
    try:
        sql(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        sql(f"GRANT ALL ON ALL TABLES IN SCHEMA {schema} TO {role}")
        sql(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA {schema} TO {role}")
        as_role = parsed.set(username=role).render_as_string(hide_password=False)
        srv = start_server(as_role)

        @contextlib.contextmanager
        def read_only() -> Iterator[None]:
            sql(f"ALTER ROLE {role} SET default_transaction_read_only = on")
            try:
                sql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    f"WHERE usename = '{role}'"
                )
                yield
            finally:
                sql(f"ALTER ROLE {role} RESET default_transaction_read_only")

        return _writes_refused_then_recovered(srv, names, read_only)
    finally:
        if srv is not None:
            srv.stop()
        sql(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'")
        sql(f"DROP OWNED BY {role}")
        sql(f"DROP ROLE {role}")
        admin.close()


# -- a connection that refuses a write in the middle of a batch ---------------------------

_TOUCH = Prepared(text("UPDATE users SET wins = wins WHERE name = :name"))


def _make_read_only(tx: Tx) -> None:
    """This connection alone refuses writes from now on, as one opened read-only would."""
    if tx.conn.dialect.name == "sqlite":
        tx.conn.exec_driver_sql("PRAGMA query_only = ON")
    else:
        tx.conn.exec_driver_sql("SET LOCAL transaction_read_only = on")


@pytest.mark.parametrize("through", ["sqlalchemy", "prepared"])
def test_a_connection_that_refuses_a_write_is_replaced(
    own_db: tuple[str, Database], through: str
) -> None:
    """A read-only refusal in the middle of a batch fails that write with a storage error
    (401), never anything else, and the next batch runs on a new connection."""
    _url, db = own_db
    (name,) = _users(db, 1)

    def touch(tx: Tx) -> int:
        return _TOUCH.run(tx.conn, name=name)

    def refused(tx: Tx) -> int:
        _make_read_only(tx)
        if through == "prepared":
            return touch(tx)
        return tx.conn.execute(
            text("UPDATE users SET wins = wins WHERE name = :name"), {"name": name}
        ).rowcount

    outcomes = db.write_jobs([touch, refused, touch])
    assert isinstance(outcomes[1], StorageError), outcomes
    if db.is_sqlite:
        # One transaction, gone with its connection: every write of the batch failed.
        assert all(isinstance(o, StorageError) for o in outcomes), outcomes
    else:
        # The batch ran again, each write alone: the others were stored.
        assert outcomes[0] == outcomes[2] == 1, outcomes
    for _ in range(3):  # the batches after it, each on a writable connection
        assert db.write_jobs([touch, touch]) == [1, 1]
    with db.write() as tx:
        assert touch(tx) == 1
