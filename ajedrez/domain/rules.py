"""The rules of a game, through python-chess: a move checked against a game's row and
what it changes, endings, and the board kept between a game's moves. No SQL and no I/O:
the store hands in the row and, when a repetition must be counted, the moves since the
base position (``StoredSince``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import chess

from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.fen import position_fen
from ajedrez.domain.text import shown
from ajedrez.domain.values import (
    STATUS_ACTIVE,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_WHITE,
    color_of_ply,
    game_name,
)
from ajedrez.domain.views import MoveRecord

PROMOTION_CODES = {chess.KNIGHT: 2, chess.BISHOP: 3, chess.ROOK: 4, chess.QUEEN: 5}
PROMOTION_PIECES = {code: piece for piece, code in PROMOTION_CODES.items()}
AUTOMATIC_ENDINGS = {
    chess.Termination.CHECKMATE: "checkmate",
    chess.Termination.STALEMATE: "stalemate",
    chess.Termination.INSUFFICIENT_MATERIAL: "insufficient material",
    chess.Termination.SEVENTYFIVE_MOVES: "seventy-five-move rule",
    chess.Termination.FIVEFOLD_REPETITION: "fivefold repetition",
}
# A position seen five times needs at least four reversible plies between sightings.
FIVEFOLD_MIN_PLIES = 16
# Games whose last board a process keeps (_Boards): a few kB each, more than the games
# in play at once at 1,000 players.
BOARD_CACHE_GAMES = 1024


class Players(Protocol):
    """The players of a game, by user id, and whether it is private."""

    @property
    def white_id(self) -> int: ...
    @property
    def black_id(self) -> int: ...
    @property
    def private(self) -> bool: ...


class GameRow(Players, Protocol):
    """What a move's check reads of a game: the columns of its row."""

    @property
    def status(self) -> int: ...
    @property
    def req_white(self) -> int: ...
    @property
    def req_black(self) -> int: ...
    @property
    def next_ply(self) -> int: ...
    @property
    def fen(self) -> str: ...
    @property
    def base_ply(self) -> int: ...
    @property
    def base_fen(self) -> str | None: ...
    @property
    def end_reason(self) -> str | None: ...


# The game's stored moves since its base position, for a repetition count.
StoredSince = Callable[[], list[chess.Move]]


def ending_name(reason: str | chess.Termination) -> str:
    """The end reason as stored and shown (STAT's text, PGN, the admin's listing)."""
    if isinstance(reason, chess.Termination):
        return AUTOMATIC_ENDINGS.get(reason) or reason.name.lower().replace("_", " ")
    return reason


def square_code(square: chess.Square) -> str:
    """python-chess numbers squares a1=0 ... h8=63, exactly as ``posicion`` does."""
    return f"{square:02d}"


def no_game(game_id: int) -> Failure:
    return Failure(Refusal.NO_SUCH_GAME, f"no game {game_name(game_id)}")


def stranger(row: Players, game_id: int, reason: str) -> Failure:
    """The refusal of a game to someone who neither plays in nor observes it: for a
    private game, the very refusal of a game that does not exist, so that a stranger
    cannot tell one from the other; for a public one, NOT_A_PLAYER with ``reason``."""
    if row.private:
        return no_game(game_id)
    return Failure(Refusal.NOT_A_PLAYER, reason)


def plays(row: Players, caller_id: int) -> bool:
    return caller_id in (row.white_id, row.black_id)


def color_of(row: Players, caller_id: int, game_id: int) -> str:
    if row.white_id == caller_id:
        return "B"
    if row.black_id == caller_id:
        return "N"
    raise stranger(row, game_id, f"you do not play in {game_name(game_id)}")


def require_active(row: GameRow, game_id: int) -> None:
    if row.status != STATUS_ACTIVE:
        raise Failure(Refusal.GAME_OVER, f"{game_name(game_id)} is finished ({row.end_reason})")


def req_field(color: str) -> str:
    return "req_white" if color == "B" else "req_black"


def offer_field(color: str) -> str:
    """The games column holding the next ply when ``color`` last offered a draw."""
    return "white_offer_ply" if color == "B" else "black_offer_ply"


class OfferRow(Protocol):
    @property
    def next_ply(self) -> int: ...
    @property
    def white_offer_ply(self) -> int | None: ...
    @property
    def black_offer_ply(self) -> int | None: ...


def may_offer_draw(row: OfferRow, color: str) -> bool:
    """One draw offer per move of its maker's: ``color`` has played a ply since its last
    offer (or never offered)."""
    offered_at = row.white_offer_ply if color == "B" else row.black_offer_ply
    if offered_at is None:
        return True
    own_ply = offered_at if color_of_ply(offered_at) == color else offered_at + 1
    return row.next_ply > own_ply


def winner_code(winner: chess.Color | None) -> int:
    if winner is None:
        return WINNER_DRAW
    return WINNER_WHITE if winner == chess.WHITE else WINNER_BLACK


class Boards:
    """The board after the last move checked in each recently played game, by game id.

    The next move of that game starts from it instead of parsing the stored FEN, the
    dearest step of a move's check (~40% of it), and its stack already holds the plies
    since the base position. A board is used only when its FEN is the game row's FEN,
    and its stack only once the database's moves since the base position match it; a
    move checked but then not stored leaves a board whose FEN no row will have. Per
    process: with ``--workers`` a game's moves may be checked in two processes, each of
    which then misses half the time.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._boards: dict[int, tuple[str, chess.Board]] = {}
        self._lock = threading.Lock()

    def take(self, game_id: int, fen: str) -> chess.Board | None:
        """The board kept for this game, if it shows the position ``fen``; it is no
        longer kept (the caller changes it)."""
        with self._lock:
            kept = self._boards.pop(game_id, None)
        return kept[1] if kept is not None and kept[0] == fen else None

    def keep(self, game_id: int, fen: str, board: chess.Board) -> None:
        with self._lock:
            if len(self._boards) >= self._size:
                del self._boards[next(iter(self._boards))]  # the least recently kept
            self._boards[game_id] = (fen, board)


@dataclass(frozen=True)
class Plan:
    """A move checked against a game row, with everything its write needs."""

    state: tuple[object, ...]  # the row it was computed from (see row_state)
    san: str
    fen: str
    base_ply: int
    base_fen: str | None
    outcome: chess.Outcome | None


def row_state(row: GameRow) -> tuple[object, ...]:
    """Everything of a game row that a move's check and effects depend on; the moves
    since ``base_ply`` are fixed by it too, as moves are only ever appended."""
    return (
        row.white_id,
        row.black_id,
        row.status,
        row.req_white,
        row.req_black,
        row.next_ply,
        row.fen,
        row.base_ply,
        row.base_fen,
    )


def maybe_resend(row: GameRow, caller_id: int, game_id: int, move: MoveRecord) -> bool:
    """Is ``move`` possibly the caller's last move again (it is then not refused)?"""
    color = color_of(row, caller_id, game_id)
    return move.ply >= 1 and move.ply == row.next_ply - 1 and color_of_ply(move.ply) == color


def current_plan(
    row: GameRow,
    caller_id: int,
    game_id: int,
    move: MoveRecord,
    plan: Plan | None,
    boards: Boards,
    stored_since: StoredSince,
) -> Plan:
    """``plan`` if it was computed from this very row (a check on a snapshot that still
    holds), else the move checked again against ``row``."""
    if plan is not None and plan.state == row_state(row):
        return plan
    return plan_move(row, caller_id, game_id, move, boards, stored_since)


def plan_move(
    row: GameRow,
    caller_id: int,
    game_id: int,
    move: MoveRecord,
    boards: Boards,
    stored_since: StoredSince,
) -> Plan:
    """Refuse the move (Failure) or return its effects on the game ``row`` describes."""
    color = color_of(row, caller_id, game_id)
    require_active(row, game_id)
    if color_of_ply(row.next_ply) != color:
        raise Failure(Refusal.NOT_YOUR_TURN, f"it is your opponent's turn in {game_name(game_id)}")
    if move.ply != row.next_ply:
        raise Failure(
            Refusal.WRONG_PLY,
            f"#jugada {move.ply} is not the next ply of {game_name(game_id)}: "
            f"expected {row.next_ply}",
        )
    # The stored position settles legality without replaying the game.
    board = boards.take(game_id, row.fen)
    if board is None:
        board = chess.Board(row.fen)
    legal = check_move(board, move.jugada, move.posicion, move.promocion)
    irreversible = board.is_irreversible(legal)
    san = board.san_and_push(legal)  # san() would push and pop the move first
    if irreversible:
        board.clear_stack()  # the new base position: no earlier one can occur again
    fen = position_fen(board)
    if board.halfmove_clock >= FIVEFOLD_MIN_PLIES:
        # Only now can the position have occurred five times: python-chess needs the
        # plies since the last irreversible move to count, and no more. A board kept
        # from the last move has them on its stack already, but the database decides.
        stored = stored_since()
        if board.move_stack[:-1] != stored:
            board = replay(row.base_fen, stored)
            board.push(legal)
    boards.keep(game_id, fen, board)
    return Plan(
        row_state(row),
        san,
        fen,
        move.ply if irreversible else row.base_ply,
        fen if irreversible else row.base_fen,
        board.outcome(claim_draw=False),
    )


def move_from_uci(ply: int, uci: str) -> MoveRecord:
    """A move given in UCI (``e2e4``, ``e7e8q``) as the record every move is played as:
    its squares' codes and promotion piece filled in, reverso 0."""
    try:
        move = chess.Move.from_uci(uci)
    except ValueError:
        move = chess.Move.null()
    if not move or (move.promotion is not None and move.promotion not in PROMOTION_CODES):
        raise Failure(
            Refusal.INVALID,
            f"invalid move '{shown(uci)}': from-square, to-square and a promotion piece "
            "if any, lowercase, like e2e4 or e7e8q",
        )
    squares = square_code(move.from_square) + square_code(move.to_square)
    promotion = 0 if move.promotion is None else PROMOTION_CODES[move.promotion]
    return MoveRecord(ply, uci[:4], 0, squares, promotion)


def replay(base_fen: str | None, moves: list[chess.Move]) -> chess.Board:
    board = chess.Board(base_fen or chess.STARTING_FEN)
    for move in moves:
        board.push(move)
    return board


def as_move(jugada: str, promocion: int) -> chess.Move:
    base = chess.Move.from_uci(jugada)
    return chess.Move(base.from_square, base.to_square, PROMOTION_PIECES.get(promocion))


def check_move(board: chess.Board, jugada: str, posicion: str, promocion: int) -> chess.Move:
    base = chess.Move.from_uci(jugada)
    expected = square_code(base.from_square) + square_code(base.to_square)
    if posicion != expected:
        raise Failure(
            Refusal.MOVE_MISMATCH,
            f"posicion {posicion} does not match {jugada}: expected {expected}",
        )
    piece = board.piece_at(base.from_square)
    name = chess.square_name(base.from_square)
    if piece is None or piece.color != board.turn:
        raise Failure(Refusal.ILLEGAL_MOVE, f"illegal move {jugada}: no piece of yours on {name}")
    promotes = piece.piece_type == chess.PAWN and chess.square_rank(base.to_square) in (0, 7)
    if promotes and promocion == 0:
        raise Failure(
            Refusal.MOVE_MISMATCH,
            f"{jugada} takes a pawn to the last rank: promocion must be 2, 3, 4 or 5",
        )
    if not promotes and promocion != 0:
        raise Failure(
            Refusal.MOVE_MISMATCH,
            f"{jugada} promotes no pawn: promocion must be 0, got {promocion}",
        )
    move = as_move(jugada, promocion)
    if board.is_castling(move) and abs(base.to_square - base.from_square) != 2:
        # python-chess also reads "king takes own rook" (e1h1) as castling, its Chess960
        # spelling; the protocol's castling is the king's own move (e1g1), as SPAR returns.
        king_to = "g" if base.to_square > base.from_square else "c"
        raise Failure(
            Refusal.ILLEGAL_MOVE,
            f"illegal move {jugada}: castling is written as the king's move, "
            f"{jugada[:2]}{king_to}{jugada[1]}",
        )
    if not board.is_legal(move):
        if board.is_pseudo_legal(move):
            why = "it would leave your king in check"
        elif board.is_castling(move) or (
            piece.piece_type == chess.KING and abs(base.to_square - base.from_square) == 2
        ):
            why = "castling is not allowed now"
        else:
            why = f"the {chess.piece_name(piece.piece_type)} on {name} cannot move there"
        raise Failure(Refusal.ILLEGAL_MOVE, f"illegal move {jugada}: {why}")
    return move
