"""A 1995 game as this server stores it: its moves replayed with python-chess from the
standard start, and its state decided from est_partida and the position reached. No IO.

What the old server recorded is kept, with these exceptions, each noted for the report,
so that every game imported is one this server could have written (``db check`` finds
nothing to say about it, ``domain/gamecheck.py``):

- Moves are imported up to the first one that does not replay (illegal, ``posicion`` or
  ``promocion`` not agreeing with ``jugada``, a malformed or out-of-order line), or up to
  the position where the game ended by the rules (checkmate, stalemate, insufficient
  material, fivefold repetition, the seventy-five-move rule): this server stores no move
  it would have refused. The game keeps its status; an active one goes on from the last
  move kept.
- The old server never detected mate. An active game whose position is over by the rules
  is finished on import with the rules' result; an active game with a resignation
  (solicitud 3) or an accepted draw offer (1 and 2, or 1 and 1) recorded in it is
  finished as that says. Either way its winner is credited a win, as a game ending on
  this server is; the wins recorded in usuarios are kept as they are.
- A finished game whose position is over by the rules has the rules' result, whatever
  was recorded (the game ended there; the wins in usuarios are kept as they are). Any
  other finished game keeps its recorded result; one with none (ganador 0) takes it from
  its request fields (a resignation, an accepted draw), else it is imported as aborted,
  without a result, as a game ended on time before its first move is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import chess

from ajedrez.domain import rules
from ajedrez.domain.errors import Failure
from ajedrez.domain.export import result_text
from ajedrez.domain.fen import position_fen
from ajedrez.domain.values import (
    END_ABORTED,
    REQ_ACCEPT,
    REQ_NONE,
    REQ_OFFER,
    REQ_RESIGN,
    STATUS_ACTIVE,
    STATUS_FINISHED,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_NONE,
    WINNER_WHITE,
)
from ajedrez.domain.values import game_name as format_partida
from ajedrez.domain.views import NotatedMove

from .espol_files import OldGame, PenFile, Problem

# The end reason of a finished game whose way of ending the old files do not tell.
RECORDED = "as recorded in ESPOL 1995"
RESIGNATION = "resignation"
AGREEMENT = "agreement"


@dataclass(frozen=True)
class PlannedGame:
    """A game as it is to be stored (``store.imported.GameValues``), and what differs from
    the old files: ``stop``, the first move not replayed (None: all were), ``dropped``,
    how many lines of the moves file were not imported; ``replay_note``, ``end_note``
    (the game ended on import) and ``notes`` (anything else) say so for the report."""

    game_id: int
    line: int  # est_partida's
    white: str
    black: str
    created_at: int
    status: int
    winner: int
    req_white: int
    req_black: int
    fen: str
    base_ply: int
    base_fen: str | None
    end_reason: str | None
    finished_at: int | None
    moves: tuple[NotatedMove, ...]
    ended_on_import: bool
    stop: Problem | None
    dropped: int
    replay_note: str | None
    end_note: str | None
    notes: tuple[str, ...]

    @property
    def pid(self) -> str:
        return format_partida(self.game_id)

    @property
    def all_notes(self) -> list[str]:
        return [n for n in (self.replay_note, self.end_note, *self.notes) if n]

    @property
    def credit(self) -> bool:
        """Is the winner credited a win on import? Only for a game that ended on import."""
        return self.ended_on_import and self.winner in (WINNER_WHITE, WINNER_BLACK)


@dataclass(frozen=True)
class _Replay:
    board: chess.Board
    moves: tuple[NotatedMove, ...]
    base_ply: int
    base_fen: str | None
    stop: Problem | None
    dropped: int


def replay(pen: PenFile, file: str) -> _Replay:
    """The moves that replay from the standard start, up to the first that does not, or
    to the end of the game by the rules."""
    board = chess.Board()
    kept: list[NotatedMove] = []
    base_ply, base_fen = 0, None
    stop, dropped = pen.stop, pen.unread
    for i, m in enumerate(pen.moves):
        ending = _ended(board)
        if ending is None:
            try:
                legal = rules.check_move(board, m.jugada, m.posicion, m.promocion)
            except Failure as f:
                ending = board.outcome(claim_draw=False)  # mated or stalemated: no move is legal
                if ending is None:
                    stop = Problem(file, m.line, f"ply {m.ply}: {f.reason}")
                    dropped = len(pen.moves) - i + pen.unread
                    break
        if ending is not None:
            name = rules.ending_name(ending.termination)
            stop = Problem(file, m.line, f"the game was over at ply {m.ply - 1} ({name})")
            dropped = len(pen.moves) - i + pen.unread
            break
        if board.is_irreversible(legal):
            base_ply = m.ply
        san = board.san_and_push(legal)
        kept.append(NotatedMove(m.ply, m.jugada, m.reverso, m.posicion, m.promocion, san))
    if base_ply:
        # The position after the last irreversible move, once (a FEN at each such move
        # cost a quarter of the replay).
        base = board.copy()
        for _ in range(len(kept) - base_ply):
            base.pop()
        base_fen = position_fen(base)
    return _Replay(board, tuple(kept), base_ply, base_fen, stop, dropped)


def _ended(board: chess.Board) -> chess.Outcome | None:
    """The ending of a position that still has legal moves (insufficient material, the
    seventy-five-move rule, fivefold repetition), by the cheap tests first: a full
    ``outcome()`` at every ply would cost more than the rest of the replay. Mate and
    stalemate show as a move that is not legal."""
    if (
        board.is_insufficient_material()
        or board.halfmove_clock >= 150
        or (board.halfmove_clock >= rules.FIVEFOLD_MIN_PLIES and board.is_fivefold_repetition())
    ):
        return board.outcome(claim_draw=False)
    return None


def plan_game(game: OldGame, pen: PenFile, file: str) -> PlannedGame:
    """The game of an est_partida line and its moves file (``file`` names it in notes)."""
    r = replay(pen, file)
    replay_note = None
    if r.stop is not None:
        total = len(r.moves) + r.dropped
        replay_note = f"does not replay: {r.stop}; {len(r.moves)} of {total} moves imported"
    notes: list[str] = []
    outcome = r.board.outcome(claim_draw=False)
    if game.status == STATUS_ACTIVE:
        status, winner, reason, reqs, end_note = _active(game, outcome, notes)
    else:
        status, winner, reason, reqs, end_note = _finished(game, outcome, notes)
    return PlannedGame(
        game_id=game.game_id,
        line=game.line,
        white=game.white,
        black=game.black,
        created_at=game.fecha,
        status=status,
        winner=winner,
        req_white=reqs[0],
        req_black=reqs[1],
        fen=position_fen(r.board),
        base_ply=r.base_ply,
        base_fen=r.base_fen,
        end_reason=reason,
        finished_at=None if status == STATUS_ACTIVE else game.fecha,
        moves=r.moves,
        ended_on_import=end_note is not None,
        stop=r.stop,
        dropped=r.dropped,
        replay_note=replay_note,
        end_note=end_note,
        notes=tuple(notes),
    )


# (status, winner, end reason, (req_white, req_black), why it ended on import or None)
_State = tuple[int, int, str | None, tuple[int, int], str | None]


def _active(game: OldGame, outcome: chess.Outcome | None, notes: list[str]) -> _State:
    """An active game: finished on import if its position, a resignation or an agreed
    draw says it is over; else active with its pending draw offer."""
    if game.winner != WINNER_NONE:
        notes.append(f"ganador {game.winner} in an active game: ignored")
    reqs = (game.req_white, game.req_black)
    if outcome is not None:
        winner = rules.winner_code(outcome.winner)
        name = rules.ending_name(outcome.termination)
        end = f"active, but {name}: finished on import, {_result(winner)}"
        return STATUS_FINISHED, winner, name, reqs, end
    if REQ_RESIGN in reqs:
        if reqs == (REQ_RESIGN, REQ_RESIGN):
            end = "active, but both players resigned: finished on import as aborted"
            return STATUS_FINISHED, WINNER_NONE, END_ABORTED, reqs, end
        winner = WINNER_BLACK if game.req_white == REQ_RESIGN else WINNER_WHITE
        who = "white" if winner == WINNER_BLACK else "black"
        end = f"active, but {who} resigned: finished on import, {_result(winner)}"
        return STATUS_FINISHED, winner, RESIGNATION, reqs, end
    if all(q in (REQ_OFFER, REQ_ACCEPT) for q in reqs):
        end = f"active, but a draw was agreed: finished on import, {_result(WINNER_DRAW)}"
        return STATUS_FINISHED, WINNER_DRAW, AGREEMENT, reqs, end
    if REQ_ACCEPT in reqs:
        notes.append("a draw accepted that nobody offered: ignored")
        reqs = (
            REQ_NONE if reqs[0] == REQ_ACCEPT else reqs[0],
            REQ_NONE if reqs[1] == REQ_ACCEPT else reqs[1],
        )
    return STATUS_ACTIVE, WINNER_NONE, None, reqs, None


def _finished(game: OldGame, outcome: chess.Outcome | None, notes: list[str]) -> _State:
    """A finished game: the result its position decides if it is over by the rules, else
    the one recorded; with none recorded (ganador 0), the one its request fields give,
    else none (aborted)."""
    reqs = (game.req_white, game.req_black)
    recorded = _result(game.winner) if game.winner != WINNER_NONE else "none (ganador 0)"
    if outcome is not None:
        winner = rules.winner_code(outcome.winner)
        name = rules.ending_name(outcome.termination)
        if winner != game.winner:
            notes.append(
                f"recorded result {recorded}, but the position is {name}: imported as "
                f"{_result(winner)}"
            )
        return STATUS_FINISHED, winner, name, reqs, None
    winner = game.winner
    if winner == WINNER_NONE:
        winner = _derived(reqs)
        if winner == WINNER_NONE:
            notes.append("finished without a result (ganador 0): imported as aborted")
            return STATUS_FINISHED, WINNER_NONE, END_ABORTED, reqs, None
        notes.append(f"finished with ganador 0: {_result(winner)} from the request fields")
    resigned = (reqs[0] == REQ_RESIGN and winner == WINNER_BLACK) or (
        reqs[1] == REQ_RESIGN and winner == WINNER_WHITE
    )
    if resigned:
        reason = RESIGNATION
    elif winner == WINNER_DRAW and REQ_ACCEPT in reqs:
        reason = AGREEMENT
    else:
        reason = RECORDED
    return STATUS_FINISHED, winner, reason, reqs, None


def _derived(reqs: Sequence[int]) -> int:
    if reqs[0] == REQ_RESIGN and reqs[1] != REQ_RESIGN:
        return WINNER_BLACK
    if reqs[1] == REQ_RESIGN and reqs[0] != REQ_RESIGN:
        return WINNER_WHITE
    if REQ_ACCEPT in reqs:
        return WINNER_DRAW
    return WINNER_NONE


def _result(winner: int) -> str:
    text = result_text(True, winner)
    return "no result" if text == "*" else text
