"""The audit of one stored game (``ajedrez-admin db check``): its moves replay by the
rules from the standard start to its stored position, and its row agrees with that
position. No SQL and no I/O: the store hands in the game's row and its moves.

What holds for every game the server wrote:

- its plies are 1, 2, ... n and ``next_ply`` is n + 1;
- each move is legal where it was played, its ``posicion`` and ``promocion`` agree with
  its ``jugada`` (as the server checks them, ``rules.check_move``), and its ``san`` is
  python-chess's;
- ``fen`` is the position after the last move;
- ``base_ply`` is 0 with no ``base_fen``, or the ply of an irreversible move with
  ``base_fen`` the position after it (repetitions are counted from there);
- an active game has no result and its position does not end the game (mate,
  stalemate, insufficient material, the 75-move rule, fivefold repetition: the move
  that reached it ended the game);
- a finished game whose position ends the game has the result that position decides;
  any other finished game has a result (white, black or a draw), except one aborted on
  time, which has none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import chess

from ajedrez.domain import rules
from ajedrez.domain.errors import Failure
from ajedrez.domain.fen import position_fen
from ajedrez.domain.values import (
    END_ABORTED,
    STATUS_ACTIVE,
    STATUS_FINISHED,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_NONE,
    WINNER_WHITE,
)

# The kinds of problem, as the summary names them.
PLIES = "plies not numbered 1..n"
NEXT_PLY = "next_ply not after the last move"
ILLEGAL = "illegal or malformed move"
SAN = "move notation (san) wrong"
POSITION = "stored position (fen) not the moves' result"
BASE = "base position (base_ply, base_fen) wrong"
RESULT = "result disagrees with the position"
NOT_ENDED = "active game whose position ends it"
STATUS = "status or result out of range"

_Report = Callable[[str, str], None]  # problem(kind, detail)


@dataclass(frozen=True)
class GameFacts:
    """The columns of a game row the audit reads."""

    id: int
    status: int
    winner: int
    next_ply: int
    fen: str
    base_ply: int
    base_fen: str | None
    end_reason: str | None


@dataclass(frozen=True)
class MoveFacts:
    """The columns of a move row the audit reads."""

    ply: int
    jugada: str
    posicion: str
    promocion: int
    san: str


@dataclass(frozen=True)
class Problem:
    kind: str
    game_id: int
    detail: str


def check_game(game: GameFacts, moves: Sequence[MoveFacts]) -> list[Problem]:
    """Every problem of ``game`` whose moves, in ply order, are ``moves``."""
    found: list[Problem] = []

    def problem(kind: str, detail: str) -> None:
        found.append(Problem(kind, game.id, detail))

    plies = [m.ply for m in moves]
    if plies != list(range(1, len(moves) + 1)):
        first = next(i + 1 for i, p in enumerate(plies) if p != i + 1)
        problem(PLIES, f"ply {first} missing")
        return found  # nothing after the gap can be replayed
    if game.next_ply != len(moves) + 1:
        problem(NEXT_PLY, f"next_ply {game.next_ply} after {len(moves)} moves")
    board = chess.Board()
    last_irreversible = 0
    base_fen_seen: str | None = None
    for m in moves:
        try:
            move = rules.check_move(board, m.jugada, m.posicion, m.promocion)
        except Failure as f:
            problem(ILLEGAL, f"ply {m.ply}: {f.reason}")
            return found
        except ValueError:
            problem(ILLEGAL, f"ply {m.ply}: '{m.jugada}' is not a move")
            return found
        if _over_with_moves_left(board):
            problem(ILLEGAL, f"ply {m.ply}: played after the game was over")
            return found
        irreversible = board.is_irreversible(move)
        san = board.san_and_push(move)
        if san != m.san:
            problem(SAN, f"ply {m.ply}: stored '{m.san}', the move is {san}")
        if irreversible:
            last_irreversible = m.ply
        if m.ply == game.base_ply:
            base_fen_seen = position_fen(board)
    fen = position_fen(board)
    if game.fen != fen:
        problem(POSITION, f"stored '{game.fen}', the moves lead to '{fen}'")
    _check_base(game, moves, last_irreversible, base_fen_seen, problem)
    _check_result(game, board, problem)
    return found


def _check_base(
    game: GameFacts,
    moves: Sequence[MoveFacts],
    last_irreversible: int,
    base_fen_seen: str | None,
    problem: _Report,
) -> None:
    if game.base_ply == 0:
        if game.base_fen is not None:
            problem(BASE, "base_fen set with base_ply 0")
        return
    if not 0 < game.base_ply <= len(moves):
        problem(BASE, f"base_ply {game.base_ply} outside the game's {len(moves)} plies")
    elif game.base_ply > last_irreversible:
        # A base after the last irreversible move would hide repetitions from the rules.
        problem(BASE, f"base_ply {game.base_ply} is after the last irreversible move")
    elif game.base_fen != base_fen_seen:
        problem(BASE, f"base_fen is not the position after ply {game.base_ply}")


def _check_result(game: GameFacts, board: chess.Board, problem: _Report) -> None:
    if game.status not in (STATUS_ACTIVE, STATUS_FINISHED) or game.winner not in (
        WINNER_NONE,
        WINNER_WHITE,
        WINNER_BLACK,
        WINNER_DRAW,
    ):
        problem(STATUS, f"status {game.status}, winner {game.winner}")
        return
    outcome = board.outcome(claim_draw=False)
    if game.status == STATUS_ACTIVE:
        if outcome is not None:
            name = rules.ending_name(outcome.termination)
            problem(NOT_ENDED, f"{name} on the board, yet the game is active")
        elif game.winner != WINNER_NONE:
            problem(RESULT, f"active, yet winner {game.winner}")
        return
    if outcome is not None:
        expected = rules.winner_code(outcome.winner)
        if game.winner != expected:
            name = rules.ending_name(outcome.termination)
            problem(RESULT, f"{name} on the board means winner {expected}, stored {game.winner}")
    elif game.winner == WINNER_NONE and game.end_reason != END_ABORTED:
        problem(RESULT, f"finished ({game.end_reason or 'no reason'}) without a result")


def _over_with_moves_left(board: chess.Board) -> bool:
    """Has the game ended in a position that still has legal moves? (After mate or
    stalemate every move is illegal anyway.) The cheap tests first: a full ``outcome()``
    at every ply would cost more than the rest of the replay."""
    return (
        board.is_insufficient_material()
        or board.halfmove_clock >= 150
        or (board.halfmove_clock >= rules.FIVEFOLD_MIN_PLIES and board.is_fivefold_repetition())
    )
