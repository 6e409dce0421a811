"""What a player or an observer reads of a game (its status, its moves), built from the
rows the store's queue read for it: the reads every front end answers after a move.
"""

from __future__ import annotations

from typing import Protocol

from ajedrez.domain import rules
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.ports import GameRecord
from ajedrez.domain.values import BLACK, OBSERVER, WHITE, game_name
from ajedrez.domain.views import GameStatus, MoveFields, MoveRecord


def status_of(
    rows: list[GameRecord], caller_id: int, game_id: int, observer: bool = False
) -> GameStatus:
    """The game's status for a player of it, or an ``observer`` (the store said so)."""
    if not rows:
        raise rules.no_game(game_id)
    row = rows[0]
    color = OBSERVER if observer else rules.color_of(row, caller_id, game_id)
    asker = getattr(row, "takeback_by", None)
    takeback = None if asker is None else WHITE if asker == row.white_id else BLACK
    return GameStatus(
        game_name(game_id),
        row.white,
        row.black,
        row.changed_at,
        row.status,
        row.winner,
        row.req_white,
        row.req_black,
        color,
        row.next_ply,
        takeback,
    )


def moves_of(
    rows: list[MoveRow], caller_id: int, game_id: int, after: int, observer: bool = False
) -> list[MoveRecord]:
    """The moves after ``after``, for a player of the game or an ``observer``: rows as
    ``Moves.move_rows`` reads them."""
    if not rows:
        raise rules.no_game(game_id)
    if not observer:
        rules.color_of(rows[0], caller_id, game_id)
    if rows[0].ply is None:  # the game is there, but no move after ``after``
        raise Failure(Refusal.NO_MORE_MOVES, f"no moves after ply {after} in {game_name(game_id)}")
    return [MoveRecord(r.ply, r.jugada, r.reverso, r.posicion, r.promocion) for r in rows]


class MoveRow(rules.Players, MoveFields, Protocol):
    """One row of SPAR's read: the game's players, and a move (all None: no move)."""
