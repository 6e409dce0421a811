"""Databases as an earlier release left them: an empty database taken to a given migration,
filled with plain SQL that matches that migration's schema (what each migration in
migrations/versions adds), and the checks, through the domain and the store, that a
database built so lost nothing on its way to head.

The data is what a server of that release would have written: argon2 hashes, moves with
their SAN, FEN and base position worked out by python-chess as the server does, clocks,
events, observers, chat, seeks, a takeback request and the record of a 1995 import where
the revision has them.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import chess
import chess.pgn
from alembic import command
from sqlalchemy import Connection, inspect, text

from ajedrez.domain import events
from ajedrez.domain.accounts import Accounts
from ajedrez.domain.blocks import Blocks
from ajedrez.domain.errors import Failure
from ajedrez.domain.fen import position_fen
from ajedrez.domain.game_admin import GameAdmin
from ajedrez.domain.games import Games
from ajedrez.domain.live import existing_game
from ajedrez.domain.passwords import hash_password
from ajedrez.domain.rules import PROMOTION_CODES, replay
from ajedrez.domain.timecontrol import DAY_MS, HOUR_MS, TimeControl, control_name
from ajedrez.domain.tokens import Tokens, secret_hash
from ajedrez.domain.values import (
    REQ_NONE,
    STATUS_ACTIVE,
    STATUS_FINISHED,
    WINNER_BLACK,
    WINNER_NONE,
    WINNER_WHITE,
)
from ajedrez.domain.views import MoveRecord
from ajedrez.espol.stream import event_data as espol_data
from ajedrez.store import event_data, imported
from ajedrez.store.db import Database
from ajedrez.store.eager import blocking
from ajedrez.store.migrate import alembic_config, revisions
from ajedrez.store.moves import Moves
from tests.support.clock import START_MS, FakeClock
from tests.support.moves import moves_after
from tests.support.store import private_schema

REVISIONS = revisions()
HEAD = REVISIONS[-1]
# Fechas (seconds): the data was written in the days before the test's clock.
T0 = START_MS // 1000 - 10 * 86400
CORRESPONDENCE = TimeControl(3 * DAY_MS, DAY_MS)


def since(revision: str, first: str) -> bool:
    """Has the schema of ``revision`` what migration ``first`` added?"""
    return REVISIONS.index(revision) >= REVISIONS.index(first)


@contextmanager
def empty_database(tmp_path: Path) -> Iterator[tuple[str, Database]]:
    """(URL, Database) with no schema yet, on the store under test
    (``AJEDREZ_TEST_DATABASE_URL``: PostgreSQL in a schema of its own, else SQLite)."""
    url = os.environ.get("AJEDREZ_TEST_DATABASE_URL")
    drop: Callable[[], None] | None = None
    if url and not url.startswith("sqlite"):
        url, drop = private_schema(url)
    else:
        url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    database = Database(url)
    try:
        yield url, database
    finally:
        database.dispose()
        if drop is not None:
            drop()


def migrate_to(database: Database, revision: str) -> None:
    """Alembic's upgrade to ``revision`` exactly, as that release's server ran it."""
    cfg = alembic_config()
    with database.engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        conn.commit()


# -- what is built -------------------------------------------------------------------------


@dataclass
class GameSpec:
    key: str
    white: str
    black: str
    san: list[str]
    status: int = STATUS_ACTIVE
    winner: int = WINNER_NONE
    end_reason: str | None = None
    clocked: bool = False  # from 0005
    private: bool = False  # from 0006
    takeback: bool = False  # from 0007: the last mover asks to take it back
    game_id: int = 0
    moves: list[chess.Move] = field(default_factory=list)
    fen: str = ""


@dataclass
class Built:
    revision: str
    ids: dict[str, int] = field(default_factory=dict)
    passwords: dict[str, str] = field(default_factory=dict)  # active accounts
    closed: dict[str, str] = field(default_factory=dict)  # closed accounts
    subscriptions: dict[str, str] = field(default_factory=dict)
    challenges: list[tuple[str, str, TimeControl | None]] = field(default_factory=list)
    games: list[GameSpec] = field(default_factory=list)
    wins: dict[str, int] = field(default_factory=dict)
    events: int = 0
    said: list[tuple[str, dict[str, object]]] = field(default_factory=list)  # the events
    chat: list[str] = field(default_factory=list)
    audit: list[str] = field(default_factory=list)
    imported: list[tuple[str, str, str]] = field(default_factory=list)  # from 0009
    guests: list[str] = field(default_factory=list)  # from 0011
    blocks: list[tuple[str, str]] = field(default_factory=list)  # from 0013
    tokens: dict[str, str] = field(default_factory=dict)  # user -> secret, from 0015

    def game(self, key: str) -> GameSpec:
        return next(g for g in self.games if g.key == key)


@cache
def _hash(password: str) -> str:
    return hash_password(password)


USERS = [  # name, password, active, wins
    ("ana", "ana's long password", True, 2),
    ("bob", "contraseña de bob", True, 1),
    ("carla", "carla 1995 espol", True, 0),
    ("dmitri", "дмитрий пароль", True, 0),
    ("eva", "eva's password!", True, 0),
    # Created when names were unique only as typed: 0004 keeps the key for "ana".
    ("Ana", "another ana", True, 0),
    ("felix", "felix left", False, 0),
]

# A guest of a seed protocol's listener, from 0011; a closed account once taken back.
GUEST = "Zoe"
# Who blocks whom, from 0013.
BLOCKS = [("ana", "dmitri"), ("eva", "dmitri")]
# Logins that last, from 0015: the user and the secret (the row keeps its hash).
TOKENS = [("bob", "bob-laptop-secret-0123456789abcdefghijklmnopq")]

GAMES = [
    # Both sides castle short; White takes en passant.
    GameSpec(
        "castles",
        "ana",
        "bob",
        ["e4", "e6", "e5", "d5", "exd6", "Bxd6", "Nf3", "Nf6", "Bc4", "O-O", "O-O", "Nc6", "d4"],
    ),
    # Both sides castle long; the last mover asks for a takeback where the schema has them.
    GameSpec(
        "long",
        "bob",
        "carla",
        ["d4", "d5", "Nc3", "Nc6", "Bf4", "Bf5", "Qd2", "Qd7", "O-O-O", "O-O-O"],
        takeback=True,
    ),
    # Knights back and forth: the position after 1...e5 stands a third time.
    GameSpec(
        "repeats",
        "ana",
        "dmitri",
        ["e4", "e5", "Nf3", "Nc6", "Ng1", "Nb8", "Nf3", "Nc6", "Ng1", "Nb8"],
    ),
    GameSpec(
        "clocked", "carla", "dmitri", ["c4", "e5", "Nc3", "Nf6", "g3"], clocked=True, private=True
    ),
    # A pawn promotes to a queen; Black resigns.
    GameSpec(
        "promotes",
        "ana",
        "carla",
        ["e4", "d5", "exd5", "c6", "dxc6", "Qb6", "cxb7", "Nf6", "bxa8=Q"],
        status=STATUS_FINISHED,
        winner=WINNER_WHITE,
        end_reason="resignation",
    ),
    GameSpec(
        "mate",
        "eva",
        "bob",
        ["f3", "e5", "g4", "Qh4#"],
        status=STATUS_FINISHED,
        winner=WINNER_BLACK,
        end_reason="checkmate",
    ),
    # Promotion to a knight, with check; the game goes on.
    GameSpec(
        "underpromotes",
        "eva",
        "dmitri",
        ["h4", "g5", "hxg5", "h6", "gxh6", "Nf6", "h7", "Ng8", "hxg8=N"],
    ),
    # Ended when felix closed his account.
    GameSpec(
        "left",
        "felix",
        "ana",
        ["e4"],
        status=STATUS_FINISHED,
        winner=WINNER_BLACK,
        end_reason="left the service",
    ),
]


def build(database: Database, revision: str) -> Built:
    """Fill a database whose schema is at ``revision`` as that release would have."""
    built = Built(revision)
    with database.engine.begin() as conn:
        for name, password, active, wins in USERS:
            row: dict[str, Any] = {
                "name": name,
                "password_hash": _hash(password),
                "comment": f"{name.title()} (since 1995)",
                "active": active,
                "admitted_at": T0,
                "changed_at": T0 + 3600,
                "wins": wins,
            }
            if since(revision, "0004"):
                row["name_key"] = None if name == "Ana" else name.lower()
            if since(revision, "0005") and name == "bob":
                row |= {"leave_until_ms": None, "leave_left_ms": 20 * DAY_MS, "leave_year": 2026}
            built.ids[name] = _insert(conn, "users", row)
            built.wins[name] = wins
            if active:
                built.passwords[name] = password
            else:
                built.closed[name] = password
        if since(revision, "0011"):
            row = {
                "name": GUEST,
                "password_hash": "",
                "comment": "",
                "active": True,
                "admitted_at": T0,
                "changed_at": T0 + 3600,
                "wins": 0,
                "name_key": GUEST.lower(),
                "guest": True,
            }
            built.ids[GUEST] = _insert(conn, "users", row)
            built.wins[GUEST] = 0
            built.guests.append(GUEST)
        if since(revision, "0013"):
            for blocker, blocked in BLOCKS:
                row = {"blocker_id": built.ids[blocker], "blocked_id": built.ids[blocked]}
                _insert(conn, "blocks", row | {"created_at": T0 + 3600})
                built.blocks.append((blocker, blocked))
        if since(revision, "0015"):
            for name, secret in TOKENS:
                row = {
                    "user_id": built.ids[name],
                    "secret_hash": secret_hash(secret),
                    "label": f"{name}'s laptop",
                    "created_at": T0 + 3600,
                    "last_used_at": T0 + 7200,
                    # Good until long after the tests' clock: only a revocation ends it.
                    "expires_at": T0 + 100 * 365 * 86400,
                }
                _insert(conn, "tokens", row)
                built.tokens[name] = secret
        for name, password, address in (
            ("gonzalo", "gonzalo quiere jugar", "192.0.2.7"),
            ("helena", "helena's request", ""),
        ):
            row = {
                "name": name,
                "password_hash": _hash(password),
                "comment": "wants to play",
                "requested_at": T0 + 7200,
            }
            if since(revision, "0004"):
                row |= {"name_key": name, "requested_from": address}
            _insert(conn, "subscriptions", row)
            built.subscriptions[name] = password
        for spec in GAMES:
            game = dataclasses.replace(
                spec,
                moves=[],
                clocked=spec.clocked and since(revision, "0005"),
                private=spec.private and since(revision, "0006"),
                takeback=spec.takeback and since(revision, "0007"),
            )
            _insert_game(conn, built, revision, game)
            built.games.append(game)
        _insert_challenges(conn, built, revision)
        if since(revision, "0003"):
            _insert_removals_and_audit(conn, built)
        if since(revision, "0006"):
            _insert_live(conn, built, revision)
        if since(revision, "0009"):
            _insert_imported(conn, built)
    return built


def _insert(conn: Connection, table: str, row: dict[str, Any]) -> int:
    columns = ", ".join(row)
    values = ", ".join(f":{c}" for c in row)
    sql = f"INSERT INTO {table} ({columns}) VALUES ({values})"
    if "id" in row or table in ("moves", "observers", "takebacks", "imported_rows", "blocks"):
        conn.execute(text(sql), row)
        return 0
    return int(conn.execute(text(sql + " RETURNING id"), row).scalar_one())


def _insert_game(conn: Connection, built: Built, revision: str, game: GameSpec) -> None:
    white, black = built.ids[game.white], built.ids[game.black]
    board = chess.Board()
    base_ply, base_fen = 0, None
    move_rows = []
    for ply, san in enumerate(game.san, start=1):
        move = board.parse_san(san)
        irreversible = board.is_irreversible(move)
        san_text = board.san(move)
        board.push(move)
        game.moves.append(move)
        if irreversible:
            base_ply, base_fen = ply, position_fen(board)
        move_rows.append(
            {
                "ply": ply,
                "jugada": chess.square_name(move.from_square) + chess.square_name(move.to_square),
                "reverso": 0,
                "posicion": f"{move.from_square:02d}{move.to_square:02d}",
                "promocion": PROMOTION_CODES.get(move.promotion, 0) if move.promotion else 0,
                "san": san_text,
                "created_at": T0 + 86400 + ply * 600,
            }
        )
    game.fen = position_fen(board)
    changed = T0 + 86400 + len(game.san) * 600
    row: dict[str, Any] = {
        "white_id": white,
        "black_id": black,
        "user_lo": min(white, black),
        "user_hi": max(white, black),
        "status": game.status,
        "winner": game.winner,
        "req_white": REQ_NONE,
        "req_black": REQ_NONE,
        "next_ply": len(game.san) + 1,
        "fen": game.fen,
        "end_reason": game.end_reason,
        "created_at": T0 + 86400,
        "changed_at": changed,
        "finished_at": changed if game.status == STATUS_FINISHED else None,
    }
    if since(revision, "0002"):
        row |= {"base_ply": base_ply, "base_fen": base_fen}
    if since(revision, "0005") and game.clocked:
        control = CORRESPONDENCE
        banks = {chess.WHITE: control.initial_ms, chess.BLACK: control.initial_ms}
        for i, move_row in enumerate(move_rows):
            mover = chess.WHITE if i % 2 == 0 else chess.BLACK
            banks[mover] = control.bank_after(banks[mover], 5 * HOUR_MS)
            move_row["clock_ms"] = banks[mover]
        since_ms = START_MS - 2 * HOUR_MS
        row |= {
            "tc_initial_ms": control.initial_ms,
            "tc_increment_ms": control.increment_ms,
            "tc_cap_ms": control.cap_ms,
            "white_ms": banks[chess.WHITE],
            "black_ms": banks[chess.BLACK],
            "clock_since_ms": since_ms,
            "deadline_ms": since_ms + banks[board.turn],
        }
        if since(revision, "0008"):
            row["warn_at_ms"] = since_ms + banks[board.turn] - DAY_MS
    if since(revision, "0006"):
        row["private"] = game.private
    game.game_id = _insert(conn, "games", row)
    for move_row in move_rows:
        _insert(conn, "moves", {"game_id": game.game_id, **move_row})
    if game.takeback:
        last_mover = game.white if len(game.san) % 2 == 1 else game.black
        _insert(
            conn,
            "takebacks",
            {
                "game_id": game.game_id,
                "ply": len(game.san),
                "by_id": built.ids[last_mover],
                "asked_at": changed + 60,
            },
        )


def _insert_challenges(conn: Connection, built: Built, revision: str) -> None:
    wanted: list[tuple[str, str, TimeControl | None, bool]] = [
        ("eva", "ana", None, False),
        ("bob", "eva", None, False),
    ]
    if since(revision, "0005"):
        wanted.append(("carla", "eva", CORRESPONDENCE, False))
    if since(revision, "0006"):
        wanted.append(("dmitri", "bob", None, True))
    for challenger, challenged, control, private in wanted:
        a, b = built.ids[challenger], built.ids[challenged]
        row: dict[str, Any] = {
            "challenger_id": a,
            "challenged_id": b,
            "user_lo": min(a, b),
            "user_hi": max(a, b),
            "created_at": T0 + 5 * 86400,
        }
        if since(revision, "0005"):
            row |= {
                "tc_initial_ms": None if control is None else control.initial_ms,
                "tc_increment_ms": None if control is None else control.increment_ms,
                "tc_cap_ms": None,
            }
        if since(revision, "0006"):
            row["private"] = private
        _insert(conn, "game_requests", row)
        built.challenges.append((challenger, challenged, control))


def _insert_removals_and_audit(conn: Connection, built: Built) -> None:
    for user in ("ana", "bob"):
        _insert(
            conn,
            "removals",
            {
                "user_id": built.ids[user],
                "kind": "P",
                "subject": "P0000099",
                "removed_at": T0 + 4 * 86400,
            },
        )
    for action, target in (("users add", "ana"), ("games purge", "")):
        _insert(
            conn,
            "admin_audit",
            {"at": T0, "actor": "root", "action": action, "target": target, "detail": ""},
        )
        built.audit.append(action)


def _insert_live(conn: Connection, built: Built, revision: str) -> None:
    castles = built.game("castles")
    players = _Players(built.ids[castles.white], built.ids[castles.black])
    said = [
        events.challenge_made(
            START_MS - DAY_MS,
            (built.ids[a], a),
            (built.ids[b], b),
            control_name(control),
            False,
        )
        for a, b, control in built.challenges
    ]
    said.append(
        events.observer_joined(
            START_MS - HOUR_MS, players, castles.game_id, (built.ids["eva"], "eva")
        )
    )
    # The game's last move, as FIN_DE_TURNO told it.
    ply, last = len(castles.moves), castles.moves[-1]
    mover, turn = (castles.white, castles.black) if ply % 2 else (castles.black, castles.white)
    board = replay(None, castles.moves[:-1])
    said.append(
        events.move_played(
            START_MS - HOUR_MS + 1,
            players,
            castles.game_id,
            built.ids[mover],
            (ply, last.uci()[:4], 0, board.san(last)),
            turn,
            castles.fen,
        )
    )
    if since(revision, "0007"):
        said.append(
            events.chat_said(
                START_MS - HOUR_MS + 2,
                players,
                castles.game_id,
                (built.ids["ana"], "ana"),
                "¡suerte! 1:0, ¿o 0:1?",
                False,
            )
        )
    for number, event in enumerate(said, start=1):
        _insert(
            conn,
            "events",
            {
                "id": number,
                "at_ms": event.at_ms,
                "kind": event.kind,
                "game_id": event.game_id,
                "user_a": event.user_a,
                "user_b": event.user_b,
                "actor_id": event.actor_id,
                "observers": event.observers,
                # Until 0010, the fields as ESPOL's stream sends them.
                "data": (
                    event_data.encode(event.fields)
                    if since(revision, "0010")
                    else espol_data(event.kind, event.fields)
                ),
            },
        )
        built.said.append((event.kind, dict(event.fields)))
    conn.execute(text("UPDATE event_counter SET last = :n WHERE id = 1"), {"n": len(said)})
    built.events = len(said)
    _insert(
        conn,
        "observers",
        {"game_id": castles.game_id, "user_id": built.ids["eva"], "since_at": T0 + 9 * 86400},
    )
    if not since(revision, "0007"):
        return
    for user, channel, line in (
        ("ana", "J", "¡suerte!"),
        ("bob", "J", "igualmente"),
        ("eva", "O", "qué apertura"),
    ):
        _insert(
            conn,
            "chat_messages",
            {
                "game_id": castles.game_id,
                "user_id": built.ids[user],
                "channel": channel,
                "ply": 3,
                "at": T0 + 9 * 86400,
                "at_ms": (T0 + 9 * 86400) * 1000,
                "text": line,
            },
        )
        built.chat.append(line)
    _insert(
        conn,
        "seeks",
        {
            "user_id": built.ids["eva"],
            "control": control_name(CORRESPONDENCE),
            "tc_initial_ms": CORRESPONDENCE.initial_ms,
            "tc_increment_ms": CORRESPONDENCE.increment_ms,
            "tc_cap_ms": None,
            "private": False,
            "created_at": T0 + 9 * 86400,
        },
    )


# What an import of 1995 files recorded: ana and bob, the game purged since (0003's
# removals) and a challenge still open.
IMPORTED = [
    ("user", "ana", ""),
    ("user", "bob", ""),
    ("game", "P0000099", ""),
    ("challenge", "eva", "ana"),
]


def _insert_imported(conn: Connection, built: Built) -> None:
    for kind, subject, challenged in IMPORTED:
        _insert(
            conn,
            "imported_rows",
            {"kind": kind, "subject": subject, "challenged": challenged, "imported_at": T0},
        )
        built.imported.append((kind, subject, challenged))


@dataclass(frozen=True)
class _Players:
    white_id: int
    black_id: int


# -- what is checked ---------------------------------------------------------------------


def table_counts(database: Database) -> dict[str, int]:
    names = [n for n in inspect(database.engine).get_table_names() if n != "alembic_version"]
    with database.engine.connect() as conn:
        return {n: int(conn.scalar(text(f"SELECT count(*) FROM {n}")) or 0) for n in names}


def snapshot(database: Database) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table, sorted: two snapshots are equal when nothing changed."""
    names = [n for n in inspect(database.engine).get_table_names() if n != "alembic_version"]
    with database.engine.connect() as conn:
        return {
            n: sorted(
                (tuple(r) for r in conn.execute(text(f"SELECT * FROM {n}"))),
                key=repr,
            )
            for n in names
        }


def check(database: Database, built: Built, kept: str | None = None) -> None:
    """What ``build`` wrote is there and works at head: ``kept`` is the revision whose
    data survived (a forced downgrade drops the rest); by default all of it."""
    kept = kept or built.revision
    clock = FakeClock()
    accounts = Accounts(database, clock=clock)
    games = Games(database, clock=clock)
    moves = Moves.of(database, clock)
    ids = built.ids

    # Every account logs in with its password; the closed one does not.
    for name, password in built.passwords.items():
        assert accounts.login(name, password).id == ids[name], name
    for name, password in built.closed.items():
        try:
            accounts.login(name, password)
        except Failure:
            pass
        else:
            raise AssertionError(f"closed account {name} logged in")
    assert {u.name: u.wins for u in accounts.list_users()} == built.wins
    users = {u.name: u for u in accounts.list_users()}
    guests = [name for name in built.guests if since(kept, "0011")]
    assert sorted(n for n, u in users.items() if u.guest) == guests
    for name in built.guests:  # a guest never logs in; taken back, it is a closed account
        assert users[name].active == since(kept, "0011")
        try:
            accounts.login(name, "")
        except Failure:
            pass
        else:
            raise AssertionError(f"guest {name} logged in")

    # Subscription requests wait, and once approved their passwords log in.
    assert sorted(s.name for s in accounts.list_subscriptions()) == sorted(built.subscriptions)
    for name, password in built.subscriptions.items():
        accounts.approve(name)
        assert accounts.login(name, password).name == name

    # Every game: its listing, its moves (SPAR and PGN) replaying to the stored position,
    # from the start and from its base position.
    listed = {g.game_id: g for g in GameAdmin(games.store).list_all()}
    assert set(listed) == {g.game_id for g in built.games}
    for game in built.games:
        entry = listed[game.game_id]
        assert (entry.status, entry.winner, entry.plies) == (
            game.status,
            game.winner,
            len(game.moves),
        ), game.key
        assert entry.white == game.white and entry.black == game.black
        clocked = game.clocked and since(kept, "0005")
        assert (entry.deadline_ms is not None) == (clocked and game.status == STATUS_ACTIVE)
        _check_position(database, games, ids[game.white], game)
        pgn = chess.pgn.read_game(io.StringIO(games.pgn(game.game_id)))
        assert pgn is not None and list(pgn.mainline_moves()) == game.moves, game.key
        assert ("%clk" in str(pgn)) == clocked, game.key

    # Live data where the revision kept it.
    castles = built.game("castles")
    with database.engine.connect() as conn:
        counted = {
            t: int(conn.scalar(text(f"SELECT count(*) FROM {t}")) or 0)
            for t in ("events", "observers", "chat_messages", "seeks", "takebacks")
        }
    assert counted["events"] == (built.events if since(kept, "0006") else 0)
    if since(kept, "0006"):
        assert stored_events(database, built.events) == built.said
    assert counted["observers"] == (1 if since(kept, "0006") else 0)
    if since(kept, "0006"):
        assert games.live.observers(ids["eva"], castles.game_id) == ["eva"]
    said = [line.text for line in games.live.chat_log(castles.game_id)]
    assert said == (built.chat if since(kept, "0007") else [])
    assert counted["seeks"] == (1 if since(kept, "0007") else 0)
    assert audit_actions(database) == (built.audit if since(kept, "0003") else [])
    if since(kept, "0003"):
        assert games.removals_since(ids["ana"], 0)[1] == [("P", "P0000099")]
    assert imported_keys(database) == (built.imported if since(kept, "0009") else [])
    blocks = Blocks(database, clock)
    for blocker, blocked in built.blocks:
        assert blocks.blocked(ids[blocker]) == ([blocked] if since(kept, "0013") else [])
    tokens = Tokens(database, clock)
    for name, secret in built.tokens.items():
        if since(kept, "0015"):
            assert tokens.log_in(name, secret).id == ids[name]
        else:
            try:
                tokens.log_in(name, secret)
            except Failure:
                pass
            else:
                raise AssertionError(f"{name}'s token outlived the downgrade")

    # A pending takeback is answered; then every active game goes on with a legal move,
    # and the repeated position can be claimed as a draw.
    long = built.game("long")
    if long.takeback and since(kept, "0007"):
        games.answer_takeback(ids[long.white], long.game_id, True, long.black)
        long.moves.pop()
        _check_position(database, games, ids[long.white], long)
    repeats = built.game("repeats")
    games.claim_draw(ids[repeats.white], repeats.game_id, repeats.black)
    ended = next(g for g in GameAdmin(games.store).list_all() if g.game_id == repeats.game_id)
    assert (ended.status, ended.end_reason) == (STATUS_FINISHED, "threefold repetition")
    for game in built.games:
        if game.status != STATUS_ACTIVE or game is repeats:
            continue
        board = replay(None, game.moves)
        move = sorted(board.legal_moves, key=lambda m: m.uci())[0]
        mover = game.white if board.turn == chess.WHITE else game.black
        record = MoveRecord(
            len(game.moves) + 1,
            chess.square_name(move.from_square) + chess.square_name(move.to_square),
            0,
            f"{move.from_square:02d}{move.to_square:02d}",
            PROMOTION_CODES.get(move.promotion, 0) if move.promotion else 0,
        )
        _play(moves, ids[mover], game.game_id, record)
        game.moves.append(move)
        _check_position(database, games, ids[game.white], game)
    with database.engine.connect() as conn:
        numbered = list(conn.scalars(text("SELECT id FROM events ORDER BY id")))
    # New events are numbered on from the old ones.
    assert numbered == list(range(1, len(numbered) + 1))
    assert len(numbered) > counted["events"]

    # Open challenges can be accepted, with the control they were made with.
    old_ids = max(g.game_id for g in built.games)
    for challenger, challenged, control in built.challenges:
        if control is not None and not since(kept, "0005"):
            control = None
        expected = None if control is None else control_name(control)
        game_id = games.accept(ids[challenged], "B", challenger, expected)
        assert game_id > old_ids
        first = MoveRecord(1, "e2e4", 0, "1228", 0)
        _play(moves, ids[challenged], game_id, first)


def _play(moves: Moves, caller_id: int, game_id: int, record: MoveRecord) -> None:
    assert blocking(lambda: moves.play(caller_id, game_id, record)) is None


def imported_keys(database: Database) -> list[tuple[str, str, str]]:
    """What ``imported_rows`` records, in the order of ``IMPORTED``."""
    if not inspect(database.engine).has_table("imported_rows"):
        return []
    with database.reading() as tx:
        found = set(imported.recorded(tx, "user", ["ana", "bob"]))
        keys = [("user", s, c) for s, c in sorted(found)]
        keys += [("game", s, c) for s, c in imported.recorded(tx, "game", ["P0000099"])]
        keys += [("challenge", s, c) for s, c in imported.recorded(tx, "challenge", ["eva"])]
    return keys


def stored_events(database: Database, through: int) -> list[tuple[str, dict[str, object]]]:
    """(kind, fields) of the events up to id ``through``, each stored as JSON (0010)."""
    with database.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT kind, data FROM events WHERE id <= :n ORDER BY id"), {"n": through}
        ).all()
    found = []
    for row in rows:
        fields = json.loads(row.data)
        assert row.data == event_data.encode(fields), row.data  # compact, as the store writes
        found.append((row.kind, fields))
    return found


def audit_actions(database: Database) -> list[str]:
    if not inspect(database.engine).has_table("admin_audit"):
        return []
    with database.engine.connect() as conn:
        return list(conn.scalars(text("SELECT action FROM admin_audit ORDER BY id")))


def _check_position(database: Database, games: Games, caller_id: int, game: GameSpec) -> None:
    records = moves_after(games, caller_id, game.game_id, 0)
    board = chess.Board()
    for record in records:
        board.push(
            chess.Move(
                chess.parse_square(record.jugada[:2]),
                chess.parse_square(record.jugada[2:4]),
                {2: chess.KNIGHT, 3: chess.BISHOP, 4: chess.ROOK, 5: chess.QUEEN}.get(
                    record.promocion
                ),
            )
        )
    assert board.move_stack == game.moves, game.key
    with database.reading() as tx:
        row = existing_game(tx, game.game_id)
        since_base = tx.moves(game.game_id, after=row.base_ply)
    assert row.fen == position_fen(board), game.key
    assert position_fen(replay(row.base_fen, since_base)) == row.fen, game.key
    assert row.next_ply == len(game.moves) + 1
