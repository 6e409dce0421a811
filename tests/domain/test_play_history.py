"""The game service against python-chess with the full move stack, in process.

The service checks a move on the stored position and replays only the plies since the
game's base position (its last irreversible move). These games are random but biased
towards knight and king moves, so repetitions, lost castling rights and long quiet
stretches are common; after every move the stored state must be what a full replay says.
"""

from __future__ import annotations

import random

import chess
import pytest
from sqlalchemy import text

from ajedrez.domain.games import Games
from ajedrez.domain.rules import PROMOTION_CODES
from ajedrez.domain.views import MoveRecord
from tests.support.moves import play
from tests.support.play import user_id

STATUS_ACTIVE, STATUS_FINISHED = 0, 2


def _record(ply: int, move: chess.Move) -> MoveRecord:
    return MoveRecord(
        ply,
        chess.Move(move.from_square, move.to_square).uci(),
        0,
        f"{move.from_square:02d}{move.to_square:02d}",
        PROMOTION_CODES.get(move.promotion, 0) if move.promotion else 0,
    )


def _pick(board: chess.Board, rng: random.Random) -> chess.Move:
    moves = list(board.legal_moves)
    shuffling = [
        m for m in moves if board.piece_type_at(m.from_square) in (chess.KNIGHT, chess.KING)
    ]
    if shuffling and rng.random() < 0.85:
        # Undo the mover's previous move when possible: that is what repeats positions.
        if len(board.move_stack) >= 2:
            back = board.move_stack[-2]
            undo = chess.Move(back.to_square, back.from_square)
            if undo in shuffling and rng.random() < 0.7:
                return undo
        return rng.choice(shuffling)
    return rng.choice(moves)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("services", ["one", "per player", "random"])
def test_stored_state_matches_a_full_replay(seed, services, games, db, new_user):
    """``services``: which service instance checks each move. Each keeps the boards of
    the moves it checked (``_Boards``), as each server process does: with two, a board
    kept by one is stale by the time it checks the game's next move, as with two
    ``--workers`` whose players are one in each."""
    rng = random.Random(seed)
    white, black = new_user("hw"), new_user("hb")
    ids = {chess.WHITE: user_id(db, white), chess.BLACK: user_id(db, black)}
    games.challenge(ids[chess.WHITE], black)
    game_id = games.accept(ids[chess.BLACK], "N", white)
    other = Games(db)
    board = chess.Board()
    while True:
        move = _pick(board, rng)
        if services == "one":
            service = games
        elif services == "per player":
            service = games if board.turn == chess.WHITE else other
        else:
            service = rng.choice((games, other))
        record = _record(len(board.move_stack) + 1, move)
        play(service, ids[board.turn], game_id, record)
        board.push(move)
        with db.engine.connect() as c:
            row = c.execute(
                text("SELECT status, fen, base_ply, base_fen, next_ply FROM games WHERE id = :g"),
                {"g": game_id},
            ).one()
        assert row.fen == board.fen()
        assert row.next_ply == len(board.move_stack) + 1
        base = chess.Board(row.base_fen or chess.STARTING_FEN)
        for played in board.move_stack[row.base_ply :]:
            base.push(played)
        assert base.fen() == board.fen()
        # Nothing after the base may be irreversible (else the base is stale).
        replay = chess.Board()
        for ply, played in enumerate(board.move_stack, start=1):
            if ply > row.base_ply + 1:
                assert not replay.is_irreversible(played), (ply, row.base_ply)
            replay.push(played)
        outcome = board.outcome(claim_draw=False)
        assert row.status == (STATUS_ACTIVE if outcome is None else STATUS_FINISHED), (
            len(board.move_stack),
            outcome,
        )
        if outcome is not None or len(board.move_stack) >= 300:
            break
