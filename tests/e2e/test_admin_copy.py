"""``ajedrez-admin db copy TARGET``: a database moved to another, on either store, with
nothing lost and game numbers going on after the source's (docs/operations.md, "Moving
to PostgreSQL"). The source is the store under test; on PostgreSQL runs the copy goes
both ways between PostgreSQL and SQLite, on SQLite runs into another SQLite file."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chess
import pytest
from sqlalchemy import select

from ajedrez.admin import store_copy
from ajedrez.domain.accounts import Accounts
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from ajedrez.store.models import AdminAudit, Base, ImportedRow
from tests.support.admin import Result, in_process
from tests.support.common import PASSWORD, unique_name
from tests.support.espol import Conn
from tests.support.espol_data import SAMPLE
from tests.support.play import challenge_and_accept, finish_by_resignation
from tests.support.server import ServerProcess, start_server
from tests.support.store import private_schema

PG = os.environ.get("AJEDREZ_TEST_DATABASE_URL", "")
ON_POSTGRES = bool(PG) and not PG.startswith("sqlite")


def _sqlite(tmp_path: Path, name: str) -> Iterator[str]:
    yield f"sqlite:///{tmp_path / name}"


def _postgres() -> Iterator[str]:
    url, drop = private_schema(PG)
    yield url
    drop()


def _targets() -> list[str]:
    return ["sqlite", "postgresql"] if ON_POSTGRES else ["sqlite"]


@pytest.fixture(params=_targets())
def target_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield from _sqlite(tmp_path, "target.sqlite3")
    else:
        yield from _postgres()


@pytest.fixture(params=["store"] + (["sqlite"] if ON_POSTGRES else []))
def source(
    request: pytest.FixtureRequest, own_db: tuple[str, Database], tmp_path: Path
) -> Iterator[tuple[str, Database]]:
    """The store under test's database, and on PostgreSQL runs also a SQLite one (so
    the copy is tried from SQLite into PostgreSQL too)."""
    if request.param == "store":
        yield own_db
        return
    url = f"sqlite:///{tmp_path / 'source.sqlite3'}"
    db = Database(url, create=True)
    upgrade(db)
    yield url, db
    db.dispose()


@pytest.fixture
def cli(
    source: tuple[str, Database],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., Result]:
    return in_process(source[0], monkeypatch, capsys)


def login(srv: ServerProcess, name: str, opened: list[Conn]) -> Conn:
    conn = srv.connect()
    opened.append(conn)
    assert conn.cmd(f"USER:{name}").code == 101
    r = conn.cmd(f"PASS:{PASSWORD}")
    assert r.kind == "S", r
    return conn


def rows(db: Database) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, in primary-key order."""
    out = {}
    with db.engine.connect() as c:
        for table in Base.metadata.sorted_tables:
            order = list(table.primary_key.columns)
            out[table.name] = [
                dict(r) for r in c.execute(select(table).order_by(*order)).mappings()
            ]
    return out


def test_a_copy_holds_every_row_and_the_service_goes_on_there(
    source: tuple[str, Database], target_url: str, cli: Callable[..., Result]
) -> None:
    url, db = source
    accounts = Accounts(db)
    names = [unique_name("c") for _ in range(4)]
    for name in names:
        accounts.add_user(name, PASSWORD, "née à Guayaquil")
    opened: list[Conn] = []
    srv = start_server(url)
    try:
        a, b, c, d = (login(srv, n, opened) for n in names)
        kept = challenge_and_accept(names[0], a, names[1], b)
        kept.play("e4", "c5", "Nf3")
        assert c.cmd(f"OBSV:{kept.pid}").kind == "S"
        newest = challenge_and_accept(names[2], c, names[3], d)
        assert d.cmd(f"JUEG:{names[0]}").code == 200  # a pending challenge
        newest.play("d4")
        finish_by_resignation(newest, chess.WHITE)
    finally:
        for conn in opened:
            conn.close()
        srv.stop()
    # The newest game is purged: its number must still never be given again.
    assert cli("games", "purge", "--yes").status == 0
    # 1995 data imported: the record of what the import wrote goes with it.
    assert cli("import", "espol", str(SAMPLE)).status == 0
    before = rows(db)
    assert before[ImportedRow.__tablename__]

    r = cli("db", "copy", target_url)
    assert r.status == 0, r.err
    assert "copied" in r.out and "moves" in r.out

    target = Database(target_url)
    try:
        after = rows(target)
        audit = after.pop(AdminAudit.__tablename__)
        assert after == {k: v for k, v in before.items() if k != AdminAudit.__tablename__}
        assert audit[: len(before[AdminAudit.__tablename__])] == before[AdminAudit.__tablename__]
        assert audit[-1]["action"] == "db copy"
    finally:
        target.dispose()

    srv = start_server(target_url)
    opened = []
    try:
        a, b, c, d = (login(srv, n, opened) for n in names)
        assert b.cmd(f"STAT:{kept.pid}").kind == "S"
        kept.w, kept.b = a, b
        kept.play("d6")  # the game goes on where it was
        r = a.cmd(f"ACEP:N:{names[3]}")
        assert r.code == 202, r
        assert int(r.text[1:]) > newest.game_id  # after the purged game's number
    finally:
        for conn in opened:
            conn.close()
        srv.stop()


def test_a_copy_refuses_a_database_that_is_not_empty(
    source: tuple[str, Database], target_url: str, cli: Callable[..., Result]
) -> None:
    target = Database(target_url, create=True)
    try:
        upgrade(target)
        Accounts(target).add_user(unique_name("t"), PASSWORD, "")
    finally:
        target.dispose()
    r = cli("db", "copy", target_url)
    assert r.status == 1
    assert "is not empty (users have rows)" in r.err


def test_a_copy_onto_itself_is_refused(
    source: tuple[str, Database], cli: Callable[..., Result]
) -> None:
    r = cli("db", "copy", source[0])
    assert r.status == 2
    assert "TARGET is this database" in r.err


def test_a_copy_shows_its_progress_on_standard_error(
    source: tuple[str, Database],
    target_url: str,
    cli: Callable[..., Result],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A table being copied shows how far it got on stderr, every PROGRESS_EVERY seconds:
    here after every chunk, and chunks of two rows, so that no table need take seconds."""
    _url, db = source
    accounts = Accounts(db)
    for _ in range(5):
        accounts.add_user(unique_name("p"), PASSWORD, "")
    monkeypatch.setattr(store_copy, "PROGRESS_EVERY", 0.0)
    monkeypatch.setattr(store_copy, "CHUNK", 2)
    r = cli("db", "copy", target_url)
    assert r.status == 0, r.err
    users = [line for line in r.err.splitlines() if line.startswith("  users: ")]
    assert users == ["  users: 2 of 5 rows", "  users: 4 of 5 rows", "  users: 5 of 5 rows"]
    assert not [line for line in r.out.splitlines() if " of " in line], r.out  # the report alone
