"""The audit of one game (domain/gamecheck.py) on hand-built games, good and bad."""

from __future__ import annotations

from dataclasses import replace

import chess

from ajedrez.domain import gamecheck as gc
from ajedrez.domain.fen import position_fen
from ajedrez.domain.gamecheck import GameFacts, MoveFacts, check_game
from ajedrez.domain.rules import PROMOTION_CODES

FOOLS_MATE = ["f2f3", "e7e5", "g2g4", "d8h4"]
# 1.e4 (irreversible) e5 (irreversible) 2.Nf3 Nc6: the base is ply 2.
OPENING = ["e2e4", "e7e5", "g1f3", "b8c6"]


def built(ucis: list[str], **row: object) -> tuple[GameFacts, list[MoveFacts]]:
    """A game as the server stores it after these moves, with ``row``'s columns changed."""
    board = chess.Board()
    moves, base_ply, base_fen = [], 0, None
    for ply, uci in enumerate(ucis, start=1):
        move = chess.Move.from_uci(uci)
        irreversible = board.is_irreversible(move)
        san = board.san_and_push(move)
        sq = f"{move.from_square:02d}{move.to_square:02d}"
        promo = PROMOTION_CODES.get(move.promotion, 0) if move.promotion else 0
        moves.append(MoveFacts(ply, uci[:4], sq, promo, san))
        if irreversible:
            base_ply, base_fen = ply, position_fen(board)
    outcome = board.outcome(claim_draw=False)
    winner = 0 if outcome is None else (3 if outcome.winner is None else 1 + (not outcome.winner))
    game = GameFacts(
        id=7,
        status=0 if outcome is None else 2,
        winner=winner,
        next_ply=len(ucis) + 1,
        fen=position_fen(board),
        base_ply=base_ply,
        base_fen=base_fen,
        end_reason=None if outcome is None else "checkmate",
    )
    return replace(game, **row), moves  # type: ignore[arg-type]


def kinds(game: GameFacts, moves: list[MoveFacts]) -> list[str]:
    return [p.kind for p in check_game(game, moves)]


def test_games_as_the_server_stores_them_pass() -> None:
    assert kinds(*built([])) == []
    assert kinds(*built(OPENING)) == []
    assert kinds(*built(FOOLS_MATE)) == []
    game, moves = built(OPENING, status=2, winner=1, end_reason="resign")
    assert kinds(game, moves) == []
    # The base at the start is always right (games stored before base_ply existed).
    assert kinds(*built(OPENING, base_ply=0, base_fen=None)) == []
    # A game aborted on time has no result.
    assert kinds(*built([], status=2, winner=0, end_reason="aborted")) == []


def test_a_promotion_replays() -> None:
    line = ["a2a4", "b7b5", "a4b5", "a7a6", "b5a6", "c8b7", "a6b7", "g8f6", "b7a8q"]
    assert kinds(*built(line)) == []


def test_a_missing_ply() -> None:
    game, moves = built(OPENING)
    del moves[1]
    problems = check_game(game, moves)
    assert [(p.kind, p.game_id, p.detail) for p in problems] == [(gc.PLIES, 7, "ply 2 missing")]


def test_next_ply_wrong() -> None:
    assert kinds(*built(OPENING, next_ply=4)) == [gc.NEXT_PLY]


def test_an_illegal_move_stops_the_replay() -> None:
    game, moves = built(OPENING)
    moves[2] = replace(moves[2], jugada="g1g3", posicion="0622", san="Ng3")
    problems = check_game(game, moves)
    assert [p.kind for p in problems] == [gc.ILLEGAL]
    assert "ply 3" in problems[0].detail


def test_a_malformed_move() -> None:
    game, moves = built(OPENING)
    moves[0] = replace(moves[0], jugada="zz99")
    assert kinds(game, moves) == [gc.ILLEGAL]
    game, moves = built(OPENING)
    moves[0] = replace(moves[0], posicion="1228")  # e2e4 is 1228: e2e3 is 1220
    moves[0] = replace(moves[0], jugada="e2e3")
    assert kinds(game, moves) == [gc.ILLEGAL]


def test_a_move_after_the_end() -> None:
    # Knights out and back four times: the start position a fifth time, a draw.
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"] * 4
    game, moves = built(shuffle)
    assert (game.status, game.winner) == (2, 3)
    assert kinds(game, moves) == []
    # A move after it is legal for python-chess, not for the server.
    moves.append(MoveFacts(17, "g1f3", "0621", 0, "Nf3"))
    problems = check_game(replace(game, next_ply=18), moves)
    assert [p.kind for p in problems] == [gc.ILLEGAL]
    assert "after the game was over" in problems[0].detail
    # After a mate, any move is illegal anyway.
    game, moves = built(FOOLS_MATE)
    moves.append(MoveFacts(5, "e1f2", "0413", 0, "Kf2"))
    assert kinds(replace(game, next_ply=6), moves) == [gc.ILLEGAL]


def test_a_wrong_san() -> None:
    game, moves = built(OPENING)
    moves[3] = replace(moves[3], san="Nc6+")
    assert kinds(game, moves) == [gc.SAN]


def test_a_stored_position_that_is_not_the_moves_result() -> None:
    assert kinds(*built(OPENING, fen=chess.STARTING_FEN)) == [gc.POSITION]


def test_a_wrong_base() -> None:
    assert kinds(*built(OPENING, base_ply=3)) == [gc.BASE]  # Nf3 is reversible
    assert kinds(*built(OPENING, base_ply=9)) == [gc.BASE]
    assert kinds(*built(OPENING, base_fen=chess.STARTING_FEN)) == [gc.BASE]
    assert kinds(*built(OPENING, base_ply=0)) == [gc.BASE]  # base_fen left set


def test_results() -> None:
    # Mate by black stored as a white win, or as still going on.
    assert kinds(*built(FOOLS_MATE, winner=1)) == [gc.RESULT]
    assert kinds(*built(FOOLS_MATE, status=0, winner=0)) == [gc.NOT_ENDED]
    assert kinds(*built(OPENING, winner=2)) == [gc.RESULT]  # active with a winner
    assert kinds(*built(OPENING, status=2, winner=0, end_reason="resign")) == [gc.RESULT]
    assert kinds(*built(OPENING, status=1)) == [gc.STATUS]
    assert kinds(*built(OPENING, status=2, winner=9)) == [gc.STATUS]


def test_stalemate_is_a_draw() -> None:
    # The shortest known stalemate (Sam Loyd, 10 moves).
    line = (
        "e2e3 a7a5 d1h5 a8a6 h5a5 h7h5 h2h4 a6h6 a5c7 f7f6 "
        "c7d7 e8f7 d7b7 d8d3 b7b8 d3h7 b8c8 f7g6 c8e6"
    )
    game, moves = built(line.split())
    assert (game.status, game.winner) == (2, 3)
    assert kinds(game, moves) == []
    assert kinds(replace(game, winner=1), moves) == [gc.RESULT]
    assert kinds(replace(game, status=0, winner=0), moves) == [gc.NOT_ENDED]
