"""Fixtures of the session tier: a fresh SQLite store per test module, migrated to head,
and sessions driven in process (``tests/support/session.py``): no socket, no subprocess,
no sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from tests.support.clock import FakeClock
from tests.support.common import PASSWORD, unique_name
from tests.support.session import Client, frame, make_session


@pytest.fixture(scope="module")
def session_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path_factory.mktemp('session') / 'store.sqlite3'}")
    upgrade(database)
    yield database
    database.dispose()


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """The event loop the sessions of a test run their lines on."""
    ev = asyncio.new_event_loop()
    yield ev
    ev.close()


@pytest.fixture
def clock() -> FakeClock:
    """The time of a test's clocked sessions (``make_session(..., clock=clock)``): it
    starts at ``START_MS`` and moves only when the test moves it."""
    return FakeClock()


@pytest.fixture
def user(session_db: Database) -> Callable[..., str]:
    """Create an active account through the service (as ``new_user`` does); its name."""
    accounts = Accounts(session_db)

    def make(prefix: str = "u", password: str = PASSWORD) -> str:
        name = unique_name(prefix)
        accounts.add_user(name, password, "")
        return name

    return make


@pytest.fixture
def connect(session_db: Database, loop: asyncio.AbstractEventLoop) -> Callable[[], Client]:
    """A new session, not logged in."""
    return lambda: Client(make_session(session_db), loop)


@pytest.fixture
def login(connect: Callable[[], Client]) -> Callable[..., Client]:
    """A new session logged in as ``name``."""

    def do_login(name: str, password: str = PASSWORD) -> Client:
        c = connect()
        assert c.raw(f"USER:{name}") == frame(101, name)
        assert c.raw(f"PASS:{password}") == frame(102, name)
        return c

    return do_login


@dataclass
class Game:
    """An active game just created: ``w`` plays white, ``b`` black."""

    pid: str
    white: str
    black: str
    w: Client
    b: Client


@pytest.fixture
def game(user: Callable[..., str], login: Callable[..., Client]) -> Game:
    """Two users logged in; black challenges, white accepts playing white (ACEP:B)."""
    white, black = user("w"), user("b")
    w, b = login(white), login(black)
    assert b.raw(f"JUEG:{white}") == frame(200)
    accepted = w.cmd(f"ACEP:B:{black}")
    assert accepted.code == 202
    return Game(accepted.text, white, black, w, b)
