"""What ``ajedrez-admin db check`` reads: every game with its moves, a batch of games at
a time (never every move at once), and the rows that name a game or a user that does
not exist. The judging of a game is the domain's (``domain/gamecheck.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from sqlalchemy import Column, Connection, Table, func, select

from ajedrez.domain.gamecheck import GameFacts, MoveFacts
from ajedrez.store.models import Base, Event, Game, Move, User

GAME_BATCH = 500  # games whose moves are read together


def count_games(conn: Connection) -> int:
    return int(conn.execute(select(func.count()).select_from(Game)).scalar_one())


def games_with_moves(conn: Connection) -> Iterator[tuple[GameFacts, list[MoveFacts]]]:
    """Every game, by id, with its moves in ply order."""
    after = 0
    while True:
        games = conn.execute(
            select(
                Game.id,
                Game.status,
                Game.winner,
                Game.next_ply,
                Game.fen,
                Game.base_ply,
                Game.base_fen,
                Game.end_reason,
            )
            .where(Game.id > after)
            .order_by(Game.id)
            .limit(GAME_BATCH)
        ).all()
        if not games:
            return
        first, last = games[0].id, games[-1].id
        moves: dict[int, list[MoveFacts]] = {}
        rows = conn.execute(
            select(Move.game_id, Move.ply, Move.jugada, Move.posicion, Move.promocion, Move.san)
            .where(Move.game_id.between(first, last))
            .order_by(Move.game_id, Move.ply)
        )
        for r in rows:
            moves.setdefault(r.game_id, []).append(
                MoveFacts(r.ply, r.jugada, r.posicion, r.promocion, r.san)
            )
        for g in games:
            yield GameFacts(*g), moves.get(g.id, [])
        after = last


@dataclass(frozen=True)
class Orphans:
    """Rows of ``table`` whose ``column`` names a missing ``parent`` row."""

    table: str
    column: str
    parent: str
    rows: int
    missing: list[int]  # the first few ids named that do not exist


def orphans(conn: Connection, examples: int = 5) -> list[Orphans]:
    """Every reference to a row that does not exist: each foreign key of the schema
    (what SQLite's ``foreign_key_check`` reports, on both stores), and the users an
    event names. An event's game may be gone: a purge keeps the events of the stream."""
    found = []
    for child, column, parent, parent_key in _references():
        missing_parent = (
            select(parent_key).where(parent_key == column).correlate(child).exists().__invert__()
        )
        where = (column.isnot(None), missing_parent)
        rows = int(conn.execute(select(func.count()).select_from(child).where(*where)).scalar_one())
        if rows:
            ids = conn.execute(
                select(column).where(*where).distinct().order_by(column).limit(examples)
            ).scalars()
            found.append(Orphans(child.name, column.name, parent.name, rows, list(ids)))
    return found


def _references() -> Iterator[tuple[Table, Column[int], Table, Column[int]]]:
    for table in Base.metadata.sorted_tables:
        for fk in sorted(table.foreign_keys, key=lambda fk: fk.parent.name):
            yield table, fk.parent, Base.metadata.tables[fk.column.table.name], fk.column
    events, users = (
        Base.metadata.tables[Event.__tablename__],
        Base.metadata.tables[User.__tablename__],
    )
    for name in ("user_a", "user_b", "actor_id"):
        yield events, events.c[name], users, users.c.id
