"""The one step every ending of a game takes: the game finished with its result (the
winner credited) and its end announced to its players and observers. An ending on time
is the same step, with the running side's bank spent (``StoreTx.finish_timed_out``, many
games at once for the scheduler's pass).
"""

from __future__ import annotations

from typing import Any

from ajedrez.domain import clocks, events
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.ports import StoreTx
from ajedrez.domain.values import game_name


def finish(
    tx: StoreTx, game_id: int, row: Any, winner: int, reason: str, now: int, **values: object
) -> None:
    """End the game (``row``: its players) with ``winner`` for ``reason``; ``values``: other
    columns the ending sets (a resignation's request)."""
    tx.finish_game(game_id, row, winner, reason, **values)
    tx.emit(events.game_ended(now, row, game_id, winner, reason))


def finish_on_time(tx: StoreTx, games: list[tuple[int, Any]], now: int) -> list[tuple[int, str]]:
    """End each of these games (id, row: its running clock is out) on time; (game, end
    reason) of each."""
    endings = [(gid, row, *clocks.timeout_result(row, row.fen)) for gid, row in games]
    tx.finish_timed_out(endings)
    for game_id, row, winner, reason in endings:
        tx.emit(events.game_ended(now, row, game_id, winner, reason))
    return [(game_id, reason) for game_id, _row, _winner, reason in endings]


def timed_out(tx: StoreTx, game_id: int, row: Any, now: int, color: str) -> Failure:
    """A request of the player of ``color`` found the game's clock out: the game ends on
    time, in this transaction, and this is the request's refusal."""
    [(_gid, reason)] = finish_on_time(tx, [(game_id, row)], now)
    whose = "your" if clocks.waiting_color(row) == color else "your opponent's"
    return Failure(
        Refusal.GAME_OVER, f"{whose} time ran out: {game_name(game_id)} is finished ({reason})"
    )
