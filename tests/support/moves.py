"""A move, a STAT and a SPAR through the store's queue (``store/moves.py``) for tests
that use the domain directly: each waits for the queued work (``eager.blocking``).

Each ``Games`` gets its own ``Moves`` (and so its own board cache), as each server
process has its own."""

from __future__ import annotations

from typing import Any

from ajedrez.domain.games import Games
from ajedrez.domain.reads import moves_of, status_of
from ajedrez.domain.views import GameStatus, MoveRecord
from ajedrez.store.db import Database
from ajedrez.store.eager import blocking
from ajedrez.store.moves import Moves

_MOVES: dict[int, tuple[Games, Moves]] = {}


def moves_for(games: Games) -> Moves:
    kept = _MOVES.get(id(games))
    if kept is None or kept[0] is not games:
        store = games.store
        assert isinstance(store, Database)
        kept = _MOVES[id(games)] = (games, Moves.of(store))
    return kept[1]


def play(games: Games, caller_id: int, game_id: int, move: MoveRecord) -> None:
    blocking(lambda: moves_for(games).play(caller_id, game_id, move))


def status(games: Games, caller_id: int, game_id: int) -> GameStatus:
    rows: list[Any] = blocking(lambda: moves_for(games).game_rows(game_id))
    return status_of(rows, caller_id, game_id)


def moves_after(games: Games, caller_id: int, game_id: int, after: int) -> list[MoveRecord]:
    rows: list[Any] = blocking(lambda: moves_for(games).move_rows(game_id, after))
    return moves_of(rows, caller_id, game_id, after)
