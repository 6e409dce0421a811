"""Fixtures: a real database and a real server process, spoken to over TCP.

``AJEDREZ_TEST_DATABASE_URL`` selects the database (PostgreSQL in CI); without it each
test run uses a fresh SQLite file. On PostgreSQL each run works in a schema of its own,
dropped at the end. When the variable is set and the database cannot be
reached, the run fails: it never silently falls back or skips.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from tests.support.common import PASSWORD, unique_name
from tests.support.espol import Conn
from tests.support.server import ServerProcess, make_tls_certificate, start_server
from tests.support.store import private_database, private_schema


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = os.environ.get("AJEDREZ_TEST_DATABASE_URL")
    if url and not url.startswith("sqlite"):
        scoped, drop = private_schema(url)
        yield scoped
        drop()
    elif url:
        yield url
    else:
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'ajedrez-test.sqlite3'}"


@pytest.fixture(scope="session")
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    upgrade(database)
    yield database
    database.dispose()


@pytest.fixture
def own_db(tmp_path: Path) -> Iterator[tuple[str, Database]]:
    """A database of this test's own on the store under test, for what would disturb the
    shared one (a purge removes every finished game): (URL, Database at head)."""
    yield from private_database(tmp_path / "own.sqlite3")


@pytest.fixture(scope="session")
def accounts(db: Database) -> Accounts:
    return Accounts(db)


@pytest.fixture(scope="session")
def games(db: Database) -> Games:
    return Games(db)


@pytest.fixture(scope="session")
def server(database_url: str, db: Database) -> Iterator[ServerProcess]:
    srv = start_server(database_url)
    yield srv
    srv.stop()


@pytest.fixture
def new_user(accounts: Accounts) -> Callable[..., str]:
    """Create an active account directly through the service; returns its name."""

    def make(prefix: str = "u", password: str = PASSWORD, comment: str = "") -> str:
        name = unique_name(prefix)
        accounts.add_user(name, password, comment)
        return name

    return make


@pytest.fixture
def login(server: ServerProcess) -> Iterator[Callable[..., Conn]]:
    """Open a connection and log in; every connection is closed after the test."""
    opened: list[Conn] = []

    def do_login(name: str, password: str = PASSWORD) -> Conn:
        conn = server.connect()
        opened.append(conn)
        r = conn.cmd(f"USER:{name}")
        assert r.code == 101, r
        r = conn.cmd(f"PASS:{password}")
        assert r.kind == "S", r
        return conn

    yield do_login
    for conn in opened:
        conn.close()


@pytest.fixture(scope="session")
def tls_certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key."""
    return make_tls_certificate(tmp_path_factory.mktemp("tls"))
