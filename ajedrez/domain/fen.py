"""The FEN stored after every move, computed faster than python-chess's ``Board.fen()``.

``Board.fen()`` asks the board for each of its 64 squares one call at a time; it was
the dearest single step of a move's check (about a quarter of it). Here each piece kind's
bitboard is walked instead, and the cheap common cases (no castling right, no en-passant
square) skip python-chess's general code. The text is exactly ``Board.fen()``'s, which
``tests/test_fen.py`` checks on random games and on every special case of the format.
"""

from __future__ import annotations

import chess

_PIECES = tuple(
    (color, piece_type, chess.Piece(piece_type, color).symbol())
    for color in chess.COLORS
    for piece_type in chess.PIECE_TYPES
)
_EMPTY_RUNS = tuple(("1" * n, str(n)) for n in range(8, 1, -1))


def board_fen(board: chess.BaseBoard) -> str:
    """The piece placement field, as ``board.board_fen()``."""
    squares = ["1"] * 64
    for color, piece_type, symbol in _PIECES:
        mask = board.pieces_mask(piece_type, color)
        while mask:
            lowest = mask & -mask
            squares[lowest.bit_length() - 1] = symbol
            mask ^= lowest
    text = "/".join(["".join(squares[rank : rank + 8]) for rank in range(56, -1, -8)])
    for run, count in _EMPTY_RUNS:  # longest first: each run of empty squares is one digit
        text = text.replace(run, count)
    return text


def position_fen(board: chess.Board) -> str:
    """``board.fen()``: placement, turn, castling, en passant (only when a legal capture
    exists, python-chess's default), half-move clock, move number."""
    ep = board.ep_square if board.ep_square is not None and board.has_legal_en_passant() else None
    return " ".join(
        (
            board_fen(board),
            "w" if board.turn == chess.WHITE else "b",
            board.castling_xfen() if board.castling_rights else "-",
            chess.SQUARE_NAMES[ep] if ep is not None else "-",
            str(board.halfmove_clock),
            str(board.fullmove_number),
        )
    )
