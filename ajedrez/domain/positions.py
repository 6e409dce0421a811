"""A position as the seed protocols show it, from its FEN: whose turn, how it stands
(check, mate, a draw the rules end the game with), a move read from the text a player
typed (coordinates or SAN), and the position after a game's moves."""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum

import chess

from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.fen import position_fen
from ajedrez.domain.rules import PROMOTION_CODES, as_move, move_from_uci, square_code
from ajedrez.domain.text import shown
from ajedrez.domain.values import BLACK, WHITE
from ajedrez.domain.views import MoveFields, MoveRecord

START_FEN = chess.STARTING_FEN  # every game starts from it
_COORDINATES = re.compile(r"[a-h][1-8][a-h][1-8][qrbnQRBN]?")
_CASTLING = re.compile(r"([O0]-[O0](-[O0])?)[+]?")


class Standing(Enum):
    """How a position stands for the side to move."""

    PLAYING = "playing"
    CHECK = "check"
    CHECKMATE = "checkmate"
    DRAWN = "drawn"  # stalemate, insufficient material, the seventy-five-move rule


def turn(fen: str) -> str:
    """The colour to move (``WHITE`` or ``BLACK``)."""
    return BLACK if fen.split(" ")[1:2] == ["b"] else WHITE


def standing(fen: str) -> Standing:
    board = chess.Board(fen)
    if board.is_checkmate():
        return Standing.CHECKMATE
    if board.is_stalemate() or board.is_insufficient_material() or board.is_seventyfive_moves():
        return Standing.DRAWN
    return Standing.CHECK if board.is_check() else Standing.PLAYING


def move_syntax(text: str) -> bool:
    """Is ``text`` written as a move, coordinates or SAN, whatever the position?"""
    return bool(
        _COORDINATES.fullmatch(text) or _CASTLING.fullmatch(text) or chess.SAN_REGEX.match(text)
    )


def read_move(fen: str, ply: int, text: str) -> MoveRecord:
    """The move ``text`` in the position ``fen``, as the game's ply ``ply``: coordinates
    (``e2e4``, ``e7e8q``; a promotion without its piece is to a queen) or SAN (``Nf3``,
    ``exd8=Q``, ``O-O``). Only its syntax is checked here, and that SAN names a legal
    move: the service checks the move. INVALID when it is neither."""
    board = chess.Board(fen)
    if _COORDINATES.fullmatch(text):
        uci = text.lower()
        move = chess.Move.from_uci(uci[:4])
        piece = board.piece_at(move.from_square)
        last_rank = chess.square_rank(move.to_square) in (0, 7)
        if len(uci) == 4 and piece is not None and piece.piece_type == chess.PAWN and last_rank:
            uci += "q"
        return move_from_uci(ply, uci)
    try:
        move = board.parse_san(text.replace("0-0-0", "O-O-O").replace("0-0", "O-O"))
    except ValueError:
        raise Failure(
            Refusal.INVALID, f"invalid move '{shown(text)}': e2e4, e7e8q, Nf3 or O-O"
        ) from None
    squares = square_code(move.from_square) + square_code(move.to_square)
    promotion = PROMOTION_CODES[move.promotion] if move.promotion else 0
    uci = chess.square_name(move.from_square) + chess.square_name(move.to_square)
    return MoveRecord(ply, uci, 0, squares, promotion)


def position_after(moves: Iterable[MoveFields]) -> str:
    """The FEN after ``moves`` from the start, as the server stores it."""
    board = chess.Board()
    for move in moves:
        board.push(as_move(move.jugada, move.promocion))
    return position_fen(board)
