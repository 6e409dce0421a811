"""What is wrong with a move given as two squares (``domain/move_faults.py``), each fault
from a position that shows it, and the legal targets of a piece."""

from __future__ import annotations

import chess
import pytest

from ajedrez.domain.move_faults import Fault, fault_of, move_of, targets

START = chess.STARTING_FEN


def sq(name: str) -> tuple[int, int]:
    square = chess.parse_square(name)
    return chess.square_file(square), chess.square_rank(square)


def after(*sans: str) -> str:
    board = chess.Board()
    for san in sans:
        board.push_san(san)
    return board.fen()


@pytest.mark.parametrize(
    ("fen", "color", "origin", "target", "fault"),
    [
        (START, "B", (4, 1), (4, 8), Fault.OFF_BOARD),
        (START, "B", (9, 1), (4, 3), Fault.OFF_BOARD),
        (START, "N", sq("e7"), sq("e5"), Fault.NOT_YOUR_TURN),
        (START, "B", sq("e4"), sq("e5"), Fault.EMPTY),
        (START, "B", sq("e7"), sq("e5"), Fault.NOT_YOURS),
        (START, "B", sq("a1"), sq("a2"), Fault.OWN_TARGET),
        (START, "B", sq("g1"), sq("g3"), Fault.NOT_THAT_PIECE),
        (START, "B", sq("e2"), sq("e5"), Fault.NOT_THAT_PIECE),
        (START, "B", sq("e2"), sq("d3"), Fault.NOT_THAT_PIECE),  # a pawn takes nothing
        (START, "B", sq("e2"), sq("e2"), Fault.NOT_THAT_PIECE),
        (START, "B", sq("a1"), sq("a3"), Fault.BLOCKED),
        (START, "B", sq("c1"), sq("e3"), Fault.BLOCKED),
        (after("e4", "e5"), "B", sq("e4"), sq("e5"), Fault.BLOCKED),  # a pawn cannot take ahead
        (after("e3", "e5", "Ke2", "Bc5"), "B", sq("e2"), sq("f3"), None),
        (after("f3", "e5", "Kf2", "Qh4+"), "B", sq("a2"), sq("a3"), Fault.ILLEGAL),  # in check
        (after("e4", "e5", "Nf3", "Nc6", "Bc4", "Bc5"), "B", sq("e1"), sq("g1"), None),
        (after("Nf3", "e5", "e3", "Bc5"), "B", sq("e1"), sq("g1"), Fault.BLOCKED),
        (START, "B", sq("e2"), sq("e4"), None),
        (START, "B", sq("g1"), sq("f3"), None),
    ],
)
def test_each_fault(
    fen: str, color: str, origin: tuple[int, int], target: tuple[int, int], fault: Fault | None
) -> None:
    assert fault_of(fen, color, origin, target) == fault


def test_castling_the_rules_forbid_is_illegal() -> None:
    # The king and rook stand as at the start, the squares between are empty, but the
    # king has moved and come back: no castling right left.
    fen = after("e4", "e5", "Nf3", "Nc6", "Bc4", "Bc5", "Ke2", "Ke7", "Ke1", "Ke8")
    assert fault_of(fen, "B", sq("e1"), sq("g1")) is Fault.ILLEGAL


def test_en_passant_and_promotion_to_a_queen() -> None:
    fen = after("e4", "a6", "e5", "d5")
    assert fault_of(fen, "B", sq("e5"), sq("d6")) is None
    promoting = "8/P6k/8/8/8/8/8/K7 w - - 0 40"
    assert fault_of(promoting, "B", sq("a7"), sq("a8")) is None
    assert move_of(promoting, sq("a7"), sq("a8")).uci() == "a7a8q"


def test_targets() -> None:
    assert targets(START, sq("e2")) == [sq("e3"), sq("e4")]
    assert targets(START, sq("b1")) == [sq("a3"), sq("c3")]
    assert targets(START, sq("e7")) == []  # not the side to move's
    assert targets(START, sq("e4")) == []
