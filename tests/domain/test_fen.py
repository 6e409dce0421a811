"""``domain/fen.py`` against python-chess's own ``Board.fen()``: the stored FEN must be
the very same text, or a kept board would never match its game row again."""

from __future__ import annotations

import random

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ajedrez.domain.fen import board_fen, position_fen


def _random_game(rng: random.Random, plies: int) -> list[chess.Board]:
    board, seen = chess.Board(), []
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        board.push(rng.choice(moves))
        seen.append(board.copy(stack=False))
    return seen


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), plies=st.integers(1, 250))
def test_every_position_of_a_random_game(seed: int, plies: int) -> None:
    for board in _random_game(random.Random(seed), plies):
        assert position_fen(board) == board.fen()


@pytest.mark.parametrize(
    "fen",
    [
        chess.STARTING_FEN,
        "8/8/8/8/8/8/8/8 w - - 0 1",  # an empty board: every rank one run of 8
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",  # e3 capturable by none
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # a legal e.p.
        "4k3/8/8/2b5/3pP3/8/8/3K4 b - e3 0 1",  # e.p. pinned? no: legal, kept
        "8/8/8/8/k2pP2Q/8/8/3K4 b - e3 0 1",  # e.p. would expose the king: not shown
        "r3k2r/8/8/8/8/8/8/R3K2R w Kq - 12 40",  # some rights gone
        "r3k2r/8/8/8/8/8/8/R3K2R b - - 99 120",  # none left, large clocks
        "1r2k1r1/8/8/8/8/8/8/1R2K1R1 w - - 0 1",
        "4k3/P7/8/8/8/8/7p/4K3 w - - 0 60",
        "kqrbnpKQ/RBNP4/8/8/8/8/8/8 w - - 0 1",  # every symbol
    ],
)
def test_special_positions(fen: str) -> None:
    board = chess.Board(fen)
    assert board_fen(board) == board.board_fen()
    assert position_fen(board) == board.fen()
