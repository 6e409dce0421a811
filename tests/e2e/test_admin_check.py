"""ajedrez-admin db check on the store under test: a sound database passes; a database
damaged on purpose with SQL has each kind of problem found, counted and shown with the
game it is in; exit status 0, 1, or 3 when the database cannot be read."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import chess
import pytest
from alembic import command
from sqlalchemy import bindparam, insert, text

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.fen import position_fen
from ajedrez.domain.rules import PROMOTION_CODES
from ajedrez.store.db import Database
from ajedrez.store.migrate import alembic_config, upgrade
from ajedrez.store.models import Event, Game, Move
from tests.support.admin import Result, assert_error, assert_ok, in_process, on_terminal
from tests.support.common import PASSWORD, unique_name
from tests.support.databases import fresh_database, on_postgres
from tests.support.hardening import sqlite_path

FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]
OPENING = ["e2e4", "e7e5", "g1f3", "b8c6"]


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with fresh_database(tmp_path, "checked") as u:
        yield u


@pytest.fixture
def db(url: str) -> Iterator[Database]:
    database = Database(url)
    upgrade(database)
    yield database
    database.dispose()


@pytest.fixture
def check(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[[], Result]:
    cli = in_process(url, monkeypatch, capsys)
    return lambda: cli("db", "check")


def users(db: Database, n: int) -> list[int]:
    accounts = Accounts(db)
    names = [unique_name("ck") for _ in range(n)]
    for name in names:
        accounts.add_user(name, PASSWORD)
    with db.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT id FROM users WHERE name IN :n ORDER BY id").bindparams(
                bindparam("n", expanding=True)
            ),
            {"n": names},
        )
        return [r[0] for r in rows]


def add_game(db: Database, white: int, black: int, ucis: list[str]) -> int:
    """A game stored as the server stores it after these moves (ended by the rules if
    they end it)."""
    board = chess.Board()
    moves, base_ply, base_fen = [], 0, None
    now = int(time.time())
    for ply, uci in enumerate(ucis, start=1):
        move = chess.Move.from_uci(uci)
        irreversible = board.is_irreversible(move)
        san = board.san_and_push(move)
        moves.append(
            {
                "ply": ply,
                "jugada": uci[:4],
                "reverso": 0,
                "posicion": f"{move.from_square:02d}{move.to_square:02d}",
                "promocion": PROMOTION_CODES.get(move.promotion, 0) if move.promotion else 0,
                "san": san,
                "created_at": now,
            }
        )
        if irreversible:
            base_ply, base_fen = ply, position_fen(board)
    outcome = board.outcome(claim_draw=False)
    with db.engine.begin() as conn:
        game_id = conn.execute(
            insert(Game)
            .values(
                white_id=white,
                black_id=black,
                user_lo=min(white, black),
                user_hi=max(white, black),
                status=0 if outcome is None else 2,
                winner=0
                if outcome is None
                else (3 if outcome.winner is None else 2 - outcome.winner),
                next_ply=len(ucis) + 1,
                fen=position_fen(board),
                base_ply=base_ply,
                base_fen=base_fen,
                end_reason=None if outcome is None else "checkmate",
                created_at=now,
                changed_at=now,
                finished_at=None if outcome is None else now,
            )
            .returning(Game.id)
        ).scalar_one()
        if moves:
            conn.execute(insert(Move), [m | {"game_id": game_id} for m in moves])
    return int(game_id)


def sql(db: Database, statement: str, **params: object) -> None:
    with db.engine.begin() as conn:
        conn.execute(text(statement), params)


def pid(game_id: int) -> str:
    return f"P{game_id:07d}"


def problems(r: Result) -> dict[str, int]:
    """The summary's ``problem: KIND: N`` lines."""
    found = {}
    for line in r.out.splitlines():
        if line.startswith("problem: "):
            kind, _, n = line.removeprefix("problem: ").rpartition(": ")
            found[kind] = int(n)
    return found


def test_a_sound_database_passes(db: Database, check: Callable[[], Result]) -> None:
    a, b, c, d = users(db, 4)
    add_game(db, a, b, OPENING)
    add_game(db, c, d, FOOLS_MATE)
    add_game(db, a, c, [])
    r = check()
    assert_ok(r)
    lines = r.out.splitlines()
    assert lines[0].startswith("integrity: ok")
    assert lines[1].startswith("schema: ") and "the newest" in lines[1]
    assert lines[2] == "games: 3 replayed (8 moves)"
    assert lines[-1] == "ok"


def test_each_kind_of_damage_is_found(db: Database, check: Callable[[], Result]) -> None:
    ids = users(db, 16)
    pairs = [(ids[i], ids[i + 1]) for i in range(0, 16, 2)]
    games = [
        add_game(db, w, b, FOOLS_MATE if i in (5, 6) else OPENING) for i, (w, b) in enumerate(pairs)
    ]
    sound = add_game(db, ids[0], ids[3], OPENING)
    fen, illegal, gap, next_ply, base, result, not_ended, winner_active = games
    sql(db, "UPDATE games SET fen = :f WHERE id = :g", f=chess.STARTING_FEN, g=fen)
    sql(
        db,
        "UPDATE moves SET jugada = 'g1g3', posicion = '0622' WHERE game_id = :g AND ply = 3",
        g=illegal,
    )
    sql(db, "DELETE FROM moves WHERE game_id = :g AND ply = 2", g=gap)
    sql(db, "UPDATE games SET next_ply = 9 WHERE id = :g", g=next_ply)
    sql(db, "UPDATE games SET base_ply = 3 WHERE id = :g", g=base)
    sql(db, "UPDATE games SET winner = 1 WHERE id = :g", g=result)  # black mated white
    sql(db, "UPDATE games SET status = 0, winner = 0 WHERE id = :g", g=not_ended)
    sql(db, "UPDATE games SET winner = 2 WHERE id = :g", g=winner_active)
    r = check()
    assert_error(r, 1, "8 problems")
    assert problems(r) == {
        "stored position (fen) not the moves' result": 1,
        "illegal or malformed move": 1,
        "plies not numbered 1..n": 1,
        "next_ply not after the last move": 1,
        "base position (base_ply, base_fen) wrong": 1,
        "result disagrees with the position": 2,
        "active game whose position ends it": 1,
    }
    for game_id in games:
        assert f"  {pid(game_id)}: " in r.out, (game_id, r.out)
    assert pid(sound) not in r.out
    assert r.out.splitlines()[-1] == "8 problems"


def test_rows_naming_missing_games_and_users(db: Database, check: Callable[[], Result]) -> None:
    a, b = users(db, 2)
    game = add_game(db, a, b, OPENING)
    missing_game, missing_user = 990001, 990002
    now = int(time.time())
    without_foreign_keys(
        db,
        [
            (
                "INSERT INTO moves (game_id, ply, jugada, reverso, posicion, promocion, san, "
                "created_at) VALUES (:g, 1, 'e2e4', 0, '1228', 0, 'e4', :t)",
                {"g": missing_game, "t": now},
            ),
            (
                "INSERT INTO observers (game_id, user_id, since_at) VALUES (:g, :u, :t)",
                {"g": game, "u": missing_user, "t": now},
            ),
        ],
    )
    with db.engine.begin() as conn:
        conn.execute(
            insert(Event).values(
                id=990003,
                at_ms=now * 1000,
                kind="x",
                game_id=missing_game,
                user_a=missing_user,
                user_b=None,
                actor_id=None,
                observers=False,
                data="",
            )
        )
    r = check()
    assert_error(r, 1, "3 problems")
    assert problems(r) == {"rows naming a missing game or user": 3}
    assert f"1 row(s) of moves with a game_id not in games: {missing_game}" in r.out
    assert f"1 row(s) of observers with a user_id not in users: {missing_user}" in r.out
    assert f"1 row(s) of events with a user_a not in users: {missing_user}" in r.out
    assert "references: broken" in r.out


def without_foreign_keys(db: Database, statements: list[tuple[str, dict[str, object]]]) -> None:
    """Rows the database's foreign keys would refuse, as a tool that skips them writes."""
    path = sqlite_path(str(db.url.render_as_string(hide_password=False)))
    if path is not None:
        con = sqlite3.connect(path)  # foreign keys are off unless a connection asks
        try:
            for statement, params in statements:
                con.execute(statement, params)
            con.commit()
        finally:
            con.close()
        return
    with db.engine.begin() as conn:
        conn.execute(text("SET LOCAL session_replication_role = replica"))
        for statement, params in statements:
            conn.execute(text(statement), params)


def test_a_schema_behind_is_found(url: str, check: Callable[[], Result]) -> None:
    db = Database(url)
    try:
        cfg = alembic_config()
        with db.engine.connect() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0007")
            conn.commit()
    finally:
        db.dispose()
    r = check()
    assert_error(r, 1, "1 problem")
    assert "problem: schema: 1" in r.out
    assert "db upgrade" in r.out


def test_damaged_pages_are_found_on_sqlite(db: Database, check: Callable[[], Result]) -> None:
    """SQLite's integrity_check: pages no table or index uses. (PostgreSQL has no such
    check here: the line says ok, see docs/operations.md.)"""
    a, b = users(db, 2)
    for _ in range(3):
        add_game(db, a, b, FOOLS_MATE)
    path = sqlite_path(db.url.render_as_string(hide_password=False))
    if path is None:
        assert check().out.startswith("integrity: ok")
        return
    db.dispose()
    # An index forgotten by the schema: its pages stay, used by nothing.
    con = sqlite3.connect(path)
    con.execute("PRAGMA writable_schema = ON")
    con.execute("DELETE FROM sqlite_schema WHERE name = 'ix_games_white_changed'")
    con.commit()
    con.close()
    r = check()
    assert r.status == 1, r
    assert "integrity: damaged" in r.out
    assert "problem: integrity: " in r.out


def test_an_unreadable_database_is_status_3(tmp_path: Path, run_on: Callable[..., Result]) -> None:
    if on_postgres():
        from tests.support.databases import fresh_database as fresh

        with fresh(tmp_path, "gone") as gone:
            pass  # dropped: the URL names a database that no longer exists
        r = run_on(gone, "db", "check")
    else:
        file = tmp_path / "garbage.sqlite3"
        file.write_bytes(b"not a database at all " * 200)
        r = run_on(f"sqlite:///{file}", "db", "check")
    assert_error(r, 3)


@pytest.fixture
def run_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Result]:
    cli = in_process("sqlite:///unused", monkeypatch, capsys)
    return lambda u, *args: cli(*args, url=u)


def test_progress_on_a_terminal(db: Database, url: str) -> None:
    a, b, c = users(db, 3)
    add_game(db, a, b, OPENING)
    add_game(db, a, c, FOOLS_MATE)
    status, shown = on_terminal(url, "db", "check")
    assert status == 0, shown
    assert "2 of 2 games checked" in shown, shown
    assert shown.rstrip("\n").endswith("ok"), shown
