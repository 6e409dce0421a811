"""How the client words and lays out what it shows: times, tables, a game's state and
clock."""

from __future__ import annotations

import time

import chess

from ajedrez.client.cache import Cache, CachedGame
from ajedrez.client.chessboard import color_name, ending, how_it_ended
from ajedrez.client.clocks import ClockNow, Players, StoredClock, clock_cell
from ajedrez.client.sync import board_of
from ajedrez.domain.values import WHITE, WINNER_DRAW, WINNER_NONE, WINNER_WHITE, color_of_ply
from ajedrez.domain.views import GameStatus


def ago(then: int | None, now: float | None = None) -> str:
    if then is None:
        return "never"
    seconds = max(0, int((time.time() if now is None else now) - then))
    if seconds < 60:
        return "just now" if seconds < 5 else f"{seconds} s ago"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min ago"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h ago"
    return f"{hours // 24} days ago"


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(out)


def numbered(ply: int, san: str) -> str:
    """A move as a score sheet writes it: ``12. Nf3`` for white's, ``12... Nf6`` for black's."""
    dots = "." if color_of_ply(ply) == WHITE else "..."
    return f"{(ply + 1) // 2}{dots} {san}"


def whose_turn(g: CachedGame) -> str:
    """Who is to move in an active game, in words."""
    return "your turn" if g.status_record.turn == g.color else f"{g.opponent} to move"


def draw_offer(g: CachedGame) -> str | None:
    """The draw offer pending in an active game, in words; None when there is none."""
    offer = g.status_record.draw_offered_by
    if offer is None:
        return None
    return "you offered a draw" if offer == g.color else f"{g.opponent} offers a draw"


REMOVED_UNSYNCED = "removed from the server before its end was synced"
REMOVED_NOTE = "removed by the administrator (purged); kept in your local archive"


def game_state(g: CachedGame, board: chess.Board, reason: str | None = None) -> tuple[str, str]:
    """(whose turn, status) in words for the games list; ``reason``: the server's end
    reason, when known."""
    st = g.status_record
    if g.removed and st.active:
        return "-", REMOVED_UNSYNCED
    if not st.active:
        if g.ganador == WINNER_NONE:
            short = "no result"
        elif g.ganador == WINNER_DRAW:
            short = "drawn"
        elif (g.ganador == WINNER_WHITE) == (g.color == WHITE):
            short = "won"
        else:
            short = "lost"
        removed = " (removed from the server)" if g.removed else ""
        return "-", f"{short}: {how_it_ended(board, st, reason)}{removed}"
    turn = "you" if st.turn == g.color else g.opponent
    offer = draw_offer(g)
    return turn, "active" if offer is None else f"active, {offer}"


def status_line(cache: Cache, g: CachedGame, board: chess.Board) -> str:
    st = g.status_record
    parts = [f"{g.me} ({color_name(g.color)})", f"move {board.fullmove_number}"]
    if st.active:
        parts.append(whose_turn(g))
    moves = cache.moves(g.id)
    theirs = [m for m in moves if m.color != g.color]
    if not theirs:
        parts.append(f"{g.opponent} has not moved yet")
    else:
        last = theirs[-1]
        at = last.at if last.at is not None else (g.changed if last.ply == len(moves) else None)
        parts.append(f"{g.opponent} moved {ago(at)}" if at else f"{g.opponent} moved earlier")
    if not st.active:
        parts.append("finished: " + (ending(board, st, cache.end_reason(g.id)) or ""))
    if g.removed:
        parts.append(REMOVED_UNSYNCED if st.active else "removed from the server")
    return " | ".join(parts)


def finished_message(cache: Cache, st: GameStatus) -> str:
    board = board_of(cache, st.game)
    return f"{st.game} is over: {ending(board, st, cache.end_reason(st.game))}"


def players_of(g: CachedGame) -> Players:
    return Players(g.color, g.white, g.black)


def shown_clock(g: CachedGame, held: StoredClock | None, local_now_ms: int) -> ClockNow | None:
    """The game's clock at ``local_now_ms``, counted down from the last RELJ; None for a
    game without a clock, whose clock this machine has not fetched, or whose end it
    missed (purged first)."""
    if held is None or not held.has_clock or (g.removed and g.status_record.active):
        return None
    return held.at(local_now_ms)


def clock_column(g: CachedGame, held: StoredClock | None, local_now_ms: int) -> str:
    """The games list's CLOCK cell; empty for a game without a clock."""
    clock = shown_clock(g, held, local_now_ms)
    if clock is None:
        return ""
    return clock_cell(clock, players_of(g))
