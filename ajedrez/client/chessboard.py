"""Chess on the client side: reading a move typed by a person, drawing the board, the move
list of the seed's figure 5.17, and telling how a game ended. Uses python-chess."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import chess

from ajedrez.client.clocks import CLOCK_REASONS
from ajedrez.domain.export import result_text
from ajedrez.domain.values import (
    BLACK,
    END_ABORTED,
    REQ_ACCEPT,
    REQ_RESIGN,
    WHITE,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_WHITE,
)
from ajedrez.domain.views import GameStatus

_UCI = re.compile(r"([a-h][1-8])-?([a-h][1-8])(?:=?([nbrqNBRQ]))?")
_PROMO_CODE = {chess.KNIGHT: 2, chess.BISHOP: 3, chess.ROOK: 4, chess.QUEEN: 5}
EMPTY = "·"


def color_name(color: str) -> str:
    return "white" if color == WHITE else "black"


class MoveInputError(ValueError):
    """A move typed by the user that cannot be played; the message says why."""


@dataclass(frozen=True)
class Jgda:
    """The fields of a JGDA for one move."""

    ply: int
    jugada: str
    posicion: str
    promocion: int
    san: str
    move: chess.Move


def board_from(jugadas: Iterable[tuple[str, int]]) -> chess.Board:
    """Replay coordinate moves (``jugada``, ``promocion``) from the initial position."""
    board = chess.Board()
    for jugada, promocion in jugadas:
        board.push(to_move(jugada, promocion))
    return board


def to_move(jugada: str, promocion: int) -> chess.Move:
    base = chess.Move.from_uci(jugada[:4])
    promotion = promocion if promocion in _PROMO_CODE.values() else None
    return chess.Move(base.from_square, base.to_square, promotion)


def posicion(move: chess.Move) -> str:
    """python-chess squares are numbered a1=0 ... h8=63, exactly like ``posicion``."""
    return f"{move.from_square:02d}{move.to_square:02d}"


def promocion(move: chess.Move) -> int:
    return _PROMO_CODE.get(move.promotion, 0) if move.promotion else 0


def jgda_for(board: chess.Board, move: chess.Move) -> Jgda:
    return Jgda(
        ply=board.ply() + 1,
        jugada=chess.square_name(move.from_square) + chess.square_name(move.to_square),
        posicion=posicion(move),
        promocion=promocion(move),
        san=board.san(move),
        move=move,
    )


def parse_move(board: chess.Board, text: str) -> chess.Move:
    """A move in SAN (``Nf3``, ``exd8=Q``, ``O-O``) or coordinates (``e2e4``, ``e7e8q``).

    Raises :class:`MoveInputError` with a reason when the move is not legal here.
    """
    raw = text.strip()
    if not raw:
        raise MoveInputError("no move given")
    mover = color_name(WHITE if board.turn == chess.WHITE else BLACK)
    m = _UCI.fullmatch(raw)
    if m:
        return _coordinate_move(board, raw, m, mover)
    try:
        return board.parse_san(raw.replace("0-0-0", "O-O-O").replace("0-0", "O-O"))
    except chess.AmbiguousMoveError:
        options = sorted(board.san(mv) for mv in board.legal_moves if _same_target(board, mv, raw))
        hint = f": could be {' or '.join(options)}" if options else ""
        raise MoveInputError(f"{raw} is ambiguous{hint}") from None
    except chess.IllegalMoveError:
        raise MoveInputError(f"{raw} is illegal: {_san_reason(board, raw, mover)}") from None
    except chess.InvalidMoveError:
        raise MoveInputError(
            f"{raw!r} is not a move: use SAN (Nf3, exd8=Q, O-O) or coordinates (e2e4, e7e8q)"
        ) from None


def _coordinate_move(board: chess.Board, raw: str, m: re.Match[str], mover: str) -> chess.Move:
    src, dst, promo = m.group(1), m.group(2), m.group(3)
    from_sq, to_sq = chess.parse_square(src), chess.parse_square(dst)
    piece = board.piece_at(from_sq)
    if piece is None or piece.color != board.turn:
        raise MoveInputError(f"{raw}: there is no {mover} piece on {src}")
    last_rank = chess.square_rank(to_sq) in (0, 7)
    promotion = chess.Piece.from_symbol(promo.lower()).piece_type if promo else None
    if piece.piece_type == chess.PAWN and last_rank and promotion is None:
        raise MoveInputError(
            f"{raw} takes a pawn to the last rank: say which piece, e.g. {src}{dst}q "
            f"(q queen, r rook, b bishop, n knight) or in SAN ...={'Q'}"
        )
    if promotion is not None and not (piece.piece_type == chess.PAWN and last_rank):
        raise MoveInputError(f"{raw}: only a pawn reaching the last rank can promote")
    move = chess.Move(from_sq, to_sq, promotion)
    if board.is_legal(move):
        return move
    if board.is_pseudo_legal(move):
        why = "it would leave your king in check"
    elif piece.piece_type == chess.KING and abs(to_sq - from_sq) == 2:
        why = "castling is not allowed now"
    else:
        why = f"the {chess.piece_name(piece.piece_type)} on {src} cannot move to {dst}"
    raise MoveInputError(f"{raw} is illegal: {why}")


def _same_target(board: chess.Board, move: chess.Move, raw: str) -> bool:
    """Whether ``move`` is one the ambiguous SAN ``raw`` could mean."""
    m = _SAN.fullmatch(raw)
    if not m:
        return False
    piece = chess.Piece.from_symbol(m.group(1)).piece_type if m.group(1) else chess.PAWN
    return (
        chess.square_name(move.to_square) == m.group(4)
        and board.piece_type_at(move.from_square) == piece
    )


_SAN = re.compile(r"([NBRQK])?([a-h])?([1-8])?x?([a-h][1-8])(?:=?([NBRQnbrq]))?[+#!?]*")


def _san_reason(board: chess.Board, raw: str, mover: str) -> str:
    """Why a well-formed SAN move is not legal here, in words."""
    text = raw.replace("0", "O")
    if text.rstrip("+#!?") in ("O-O", "O-O-O"):
        side = "short" if text.rstrip("+#!?") == "O-O" else "long"
        if board.is_check():
            return f"{side} castling is not allowed now: your king is in check"
        rights = (
            board.has_kingside_castling_rights(board.turn)
            if side == "short"
            else (board.has_queenside_castling_rights(board.turn))
        )
        if not rights:
            return f"{side} castling is not allowed: the king or that rook has moved"
        return f"{side} castling is not allowed now: the way is blocked or attacked"
    m = _SAN.fullmatch(raw)
    if not m:
        return f"no {mover} move matches it"
    piece = chess.Piece.from_symbol(m.group(1)).piece_type if m.group(1) else chess.PAWN
    target = chess.parse_square(m.group(4))
    name = chess.piece_name(piece)
    if piece == chess.PAWN and chess.square_rank(target) in (0, 7) and not m.group(5):
        return f"a pawn reaching the last rank must promote: {raw}=Q (or =R, =B, =N)"
    file_, rank = m.group(2), m.group(3)
    candidates = [
        mv
        for mv in board.pseudo_legal_moves
        if mv.to_square == target
        and board.piece_type_at(mv.from_square) == piece
        and (file_ is None or chess.square_name(mv.from_square)[0] == file_)
        and (rank is None or chess.square_name(mv.from_square)[1] == rank)
    ]
    if candidates:
        return f"it would leave your king in check{' (it is in check)' if board.is_check() else ''}"
    if file_ or rank:
        where = (
            f"{file_}{rank}" if file_ and rank else f"the {file_}-file" if file_ else f"rank {rank}"
        )
        return f"no {mover} {name} on {where} can move to {m.group(4)}"
    return f"no {mover} {name} can move to {m.group(4)}"


# -- game state in words ---------------------------------------------------------------


def how_it_ended(board: chess.Board, st: GameStatus, reason: str | None = None) -> str:
    """The reason a finished game ended: ``checkmate``, ``agreed``, ``stalemate``, ...

    STAT does not carry it; the final position and the solicitud fields tell it, except
    for an end on time (``timeout``, ``aborted``), which only the server's ``reason``
    (RELJ) tells.
    """
    if reason in CLOCK_REASONS:
        return reason
    if st.ganador in (WINNER_WHITE, WINNER_BLACK):
        loser = BLACK if st.ganador == WINNER_WHITE else WHITE
        if board.is_checkmate():
            return "checkmate"
        if st.solicitud(loser) == REQ_RESIGN:
            return f"{st.white if loser == WHITE else st.black} resigned or left the service"
        return "forfeit"
    if st.ganador == WINNER_DRAW:
        if REQ_ACCEPT in (st.solicitud_blancas, st.solicitud_negras):
            return "agreed"
        if board.is_stalemate():
            return "stalemate"
        if board.is_insufficient_material():
            return "insufficient material"
        if board.is_fivefold_repetition():
            return "fivefold repetition"
        if board.is_seventyfive_moves():
            return "seventy-five-move rule"
        if board.is_repetition(3):
            return "threefold repetition, claimed"
        if board.halfmove_clock >= 100:
            return "fifty-move rule, claimed"
        return "claimed"
    return "finished"


def ending(board: chess.Board, st: GameStatus, reason: str | None = None) -> str | None:
    """How a finished game ended, in words (``ana (white) won: checkmate``, ``draw
    (agreed)``, ``aborted (no result)``); None while it goes on. ``reason``: the server's
    end reason, when known."""
    if st.active:
        return None
    how = how_it_ended(board, st, reason)
    if how == END_ABORTED:
        return "aborted (no first move in time; no result)"
    if st.ganador in (WINNER_WHITE, WINNER_BLACK):
        winner = WHITE if st.ganador == WINNER_WHITE else BLACK
        return f"{st.white if winner == WHITE else st.black} ({color_name(winner)}) won: {how}"
    if st.ganador == WINNER_DRAW:
        return f"draw ({how})"
    return "finished"


def result_tag(status_finished: bool, ganador: int) -> str:
    return result_text(status_finished, ganador)


# -- drawing ---------------------------------------------------------------------------


def render_board(
    board: chess.Board,
    *,
    bottom: str = WHITE,
    coordinates: bool = True,
    last_move: chess.Move | None = None,
) -> str:
    """The board in Unicode, ``bottom``'s side nearest the reader.

    Each square is three characters wide; the squares of ``last_move`` are drawn in
    brackets (``[♞]``, ``[·]``).
    """
    files = list(range(8)) if bottom == WHITE else list(range(7, -1, -1))
    ranks = list(range(7, -1, -1)) if bottom == WHITE else list(range(8))
    marked = {last_move.from_square, last_move.to_square} if last_move else set()
    lines = []
    header = "   " + "".join(f" {chess.FILE_NAMES[f]} " for f in files)
    if coordinates:
        lines.append(header)
    for r in ranks:
        cells = []
        for f in files:
            sq = chess.square(f, r)
            piece = board.piece_at(sq)
            glyph = piece.unicode_symbol() if piece else EMPTY
            cells.append(f"[{glyph}]" if sq in marked else f" {glyph} ")
        row = "".join(cells)
        lines.append(f" {r + 1} {row} {r + 1}" if coordinates else row)
    if coordinates:
        lines.append(header)
    return "\n".join(line.rstrip() for line in lines)


def move_table(moves: Sequence[tuple[str, str]]) -> str:
    """The move list of the seed's figure 5.17: ``Movida | Blanca | Negra``.

    ``moves`` are (coordinate move, SAN) pairs in ply order; each cell shows both.
    """
    width = 14
    lines = [
        f"{'Movida':>6} | {'Blanca':<{width}} | Negra",
        f"{'-' * 7}+{'-' * (width + 2)}+{'-' * 14}",
    ]
    for i in range(0, len(moves), 2):
        white = _cell(moves[i])
        black = _cell(moves[i + 1]) if i + 1 < len(moves) else ""
        lines.append(f"{i // 2 + 1:>6} | {white:<{width}} | {black}".rstrip())
    return "\n".join(lines)


def _cell(move: tuple[str, str]) -> str:
    jugada, san = move
    return f"{jugada:<6} {san}"


# how_it_ended's words -> the server's end reason (the comment its PGN ends with).
_SERVER_REASONS = {
    "checkmate": "checkmate",
    "stalemate": "stalemate",
    "insufficient material": "insufficient material",
    "fivefold repetition": "fivefold repetition",
    "seventy-five-move rule": "seventy-five-move rule",
    "agreed": "agreement",
    "threefold repetition, claimed": "threefold repetition",
    "fifty-move rule, claimed": "fifty moves",
}


def end_reason_guess(board: chess.Board, st: GameStatus, reason: str | None = None) -> str | None:
    """The server's end reason for a game whose server PGN this machine never saw: the
    one RELJ gave (``reason``) if any, else as the final position and solicitudes tell
    it. A resignation and leaving the service look alike (solicitud 3): the first, far
    more common, is assumed."""
    if st.active:
        return None
    if reason:
        return reason
    how = how_it_ended(board, st)
    if how.endswith("resigned or left the service"):
        return "resignation"
    return _SERVER_REASONS.get(how)
