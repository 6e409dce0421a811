"""What is wrong with a move given as two squares, worked out from the position: off the
board, not the mover's turn, an empty square, the opponent's piece, the mover's own piece
on the target, a move that piece never makes, a path blocked, or a move the rules forbid
(it leaves the king in check, castles out of or through check). A front end that names
these faults (the binary protocol of seed 004) maps each to its own code.

Squares are (file, rank), each 0-7: file 0 is a, rank 0 is white's first rank.
"""

from __future__ import annotations

from enum import Enum

import chess

from ajedrez.domain.values import WHITE


class Fault(Enum):
    OFF_BOARD = "off_board"
    NOT_YOUR_TURN = "not_your_turn"
    EMPTY = "empty"  # no piece on the from-square
    NOT_YOURS = "not_yours"  # the opponent's piece
    OWN_TARGET = "own_target"  # the mover's own piece on the to-square
    NOT_THAT_PIECE = "not_that_piece"  # no move of that piece goes there
    BLOCKED = "blocked"  # a piece stands between
    ILLEGAL = "illegal"  # the rules forbid it: the king in check, castling refused


def on_board(file: int, rank: int) -> bool:
    return 0 <= file < 8 and 0 <= rank < 8


def move_of(fen: str, origin: tuple[int, int], target: tuple[int, int]) -> chess.Move:
    """The move between the squares (on the board); a pawn reaching the last rank
    becomes a queen, as two squares cannot name another piece."""
    board = chess.Board(fen)
    start, end = chess.square(*origin), chess.square(*target)
    piece = board.piece_at(start)
    last_rank = chess.square_rank(end) in (0, 7)
    promotion = chess.QUEEN if piece and piece.piece_type == chess.PAWN and last_rank else None
    return chess.Move(start, end, promotion)


def fault_of(
    fen: str, color: str, origin: tuple[int, int], target: tuple[int, int]
) -> Fault | None:
    """Why the player of ``color`` may not move from ``origin`` to ``target`` in
    ``fen``; None when the move is legal. The first fault in :class:`Fault`'s order."""
    if not on_board(*origin) or not on_board(*target):
        return Fault.OFF_BOARD
    board = chess.Board(fen)
    mine = color == WHITE
    if board.turn != mine:
        return Fault.NOT_YOUR_TURN
    start, end = chess.square(*origin), chess.square(*target)
    piece = board.piece_at(start)
    if piece is None:
        return Fault.EMPTY
    if piece.color != mine:
        return Fault.NOT_YOURS
    if start == end:
        return Fault.NOT_THAT_PIECE
    taken = board.piece_at(end)
    if taken is not None and taken.color == mine:
        return Fault.OWN_TARGET
    fault = _shape(board, piece, start, end)
    if fault is not None:
        return fault
    return None if move_of(fen, origin, target) in board.legal_moves else Fault.ILLEGAL


def _shape(board: chess.Board, piece: chess.Piece, start: int, end: int) -> Fault | None:
    """NOT_THAT_PIECE when no move of the piece joins the squares on an empty board (a
    pawn's by where it stands and what the target holds), BLOCKED when a piece stands
    between."""
    files = chess.square_file(end) - chess.square_file(start)
    ranks = chess.square_rank(end) - chess.square_rank(start)
    kind = piece.piece_type
    if kind == chess.PAWN:
        return _pawn(board, piece.color, start, end, files, ranks)
    if kind == chess.KNIGHT:
        return None if {abs(files), abs(ranks)} == {1, 2} else Fault.NOT_THAT_PIECE
    if kind == chess.KING:
        castling = ranks == 0 and abs(files) == 2 and start in (chess.E1, chess.E8)
        if max(abs(files), abs(ranks)) != 1 and not castling:
            return Fault.NOT_THAT_PIECE
    diagonal = abs(files) == abs(ranks)
    straight = files == 0 or ranks == 0
    if kind == chess.BISHOP and not diagonal:
        return Fault.NOT_THAT_PIECE
    if kind == chess.ROOK and not straight:
        return Fault.NOT_THAT_PIECE
    if kind == chess.QUEEN and not (diagonal or straight):
        return Fault.NOT_THAT_PIECE
    return Fault.BLOCKED if chess.between(start, end) & board.occupied else None


def _pawn(
    board: chess.Board, color: bool, start: int, end: int, files: int, ranks: int
) -> Fault | None:
    ahead = 1 if color == chess.WHITE else -1
    home = 1 if color == chess.WHITE else 6
    if files == 0 and ranks == ahead:
        return Fault.BLOCKED if board.piece_at(end) else None
    if files == 0 and ranks == 2 * ahead and chess.square_rank(start) == home:
        path = chess.between(start, end) | chess.BB_SQUARES[end]
        return Fault.BLOCKED if path & board.occupied else None
    if abs(files) == 1 and ranks == ahead:
        takes = board.piece_at(end) is not None or end == board.ep_square
        return None if takes else Fault.NOT_THAT_PIECE
    return Fault.NOT_THAT_PIECE


def targets(fen: str, square: tuple[int, int]) -> list[tuple[int, int]]:
    """The squares the piece on ``square`` may legally move to, a1..h8 (none when it is
    not the side to move's)."""
    board = chess.Board(fen)
    start = chess.square(*square)
    ends = sorted({m.to_square for m in board.legal_moves if m.from_square == start})
    return [(chess.square_file(s), chess.square_rank(s)) for s in ends]
