"""A game as PGN text: the one writer of the server (PGNX, ``ajedrez-admin games export``)
and of the client (``ajedrez export``), so a game exported anywhere is the same text.

It takes plain values and does no IO (no SQL, no sockets, no clock), so the client can use
it without any server code. Dates are fechas (seconds since the epoch) written as the UTC
day; ``winner`` and ``status`` are the protocol's ganador and status codes
(``docs/protocol.md``).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import chess
import chess.pgn

from ajedrez.domain.timecontrol import TimeControl
from ajedrez.domain.values import END_ABORTED, END_STOPPED, END_TIMEOUT

EVENT = "Ajedrez correspondence game"
SITE = "Ajedrez ESPOL 2.0 server"
STATUS_FINISHED = 2
RESULTS = {1: "1-0", 2: "0-1", 3: "1/2-1/2"}  # by ganador
# The end reason of a game its loser lost by leaving the service (``games.forfeit_all``).
LEFT_SERVICE = "left the service"
# End reasons of clocks (``clocks.py``) and of guests' games when the server stopped
# (``guests.py``): their PGN Termination.
TERMINATIONS = {
    LEFT_SERVICE: "abandoned",
    END_TIMEOUT: "time forfeit",
    END_ABORTED: "unterminated",
    END_STOPPED: "unterminated",
}
UNKNOWN_DATE = "????.??.??"
# Tags that mark a guest of a seed protocol's listener (docs/dialects.md), white's, black's.
GUEST_TAGS = ("WhiteGuest", "BlackGuest")
_CLOCK = re.compile(r"\[%clk [^\]]*\]")
# PGNX sends the text in lines, and an unwrapped movetext of a long game would not fit in
# one reply; 80 columns is what the PGN standard recommends.
COLUMNS = 80


@dataclass(frozen=True)
class GameFacts:
    """What a PGN says beyond players, moves and result: the start and end days (as the
    fecha of their first second, UTC) and how the game ended."""

    started: int | None
    ended: int | None
    end_reason: str | None


def result_text(finished: bool, winner: int) -> str:
    """The PGN result of a game (``1-0``, ``0-1``, ``1/2-1/2``; ``*`` while it goes on),
    the one spelling wherever a result is written for a machine to read."""
    return RESULTS.get(winner, "*") if finished else "*"


def pgn_date(fecha: int | None) -> str:
    if fecha is None:
        return UNKNOWN_DATE
    return datetime.fromtimestamp(fecha, UTC).strftime("%Y.%m.%d")


def game_pgn(
    *,
    white: str,
    black: str,
    game_id: str,
    started: int | None,
    ended: int | None,
    status: int,
    winner: int,
    end_reason: str | None,
    moves: Iterable[chess.Move],
    control: TimeControl | None = None,
    clock_ms: list[int | None] | None = None,
    chat: Iterable[tuple[int, str]] = (),
    guests: tuple[bool, bool] = (False, False),
) -> str:
    """The PGN of a game from the initial position, ending with a newline.

    ``started`` is the game's start (unknown: ``????.??.??``), ``ended`` its end, None
    while it goes on; ``end_reason`` (``checkmate``, ``agreement``, ...) becomes the
    comment after the last move. ``control``: the game's time control (the
    ``TimeControl`` tag; None: no clock, no tag); ``clock_ms``: each move's remaining time
    for its mover, written as a ``[%clk]`` comment. ``chat``: (the ply it followed, text)
    of each chat message to add as a comment (PGNX:<partida>:1). ``guests``: whether
    white and black are guests (a ``WhiteGuest``/``BlackGuest`` tag; none for accounts).
    """
    game = chess.pgn.Game()
    game.headers["Event"] = EVENT
    game.headers["Site"] = SITE
    game.headers["Date"] = pgn_date(started)
    game.headers["Round"] = "-"
    game.headers["White"] = white
    game.headers["Black"] = black
    game.headers["Result"] = result_text(status == STATUS_FINISHED, winner)
    game.headers["GameId"] = game_id
    game.headers["Mode"] = "ICS"
    for tag, guest in zip(GUEST_TAGS, guests, strict=True):
        if guest:
            game.headers[tag] = "yes"
    if control is not None:  # a game without a clock exports as it always did
        game.headers["TimeControl"] = control.pgn_tag()
    if ended is not None:
        game.headers["EndDate"] = pgn_date(ended)
        game.headers["Termination"] = TERMINATIONS.get(end_reason or "", "normal")
    said: dict[int, list[str]] = {}
    for ply, text in chat:
        said.setdefault(ply, []).append(text.replace("}", ")"))  # "}" would end the comment
    # Messages can hold no line break, so each goes on a line of its own in the comment,
    # and an end reason after them on the last line, where read_facts finds it.
    node: chess.pgn.GameNode = game
    game.comment = "\n".join(said.get(0, []))
    for i, move in enumerate(moves):
        node = node.add_variation(move)
        if clock_ms is not None and i < len(clock_ms) and clock_ms[i] is not None:
            node.set_clock((clock_ms[i] or 0) // 1000)  # H:MM:SS, whole seconds left
        if i + 1 in said:
            node.comment = "\n".join([c for c in (node.comment, *said[i + 1]) if c])
    if end_reason:
        sep = "\n" if "\n" in node.comment or (node is game and said) else " "
        node.comment = f"{node.comment}{sep}{end_reason}".strip()
    return game.accept(chess.pgn.StringExporter(columns=COLUMNS)) + "\n"


def read_facts(text: str) -> GameFacts:
    """The facts of a PGN written by :func:`game_pgn` (a PGNX answer), so that writing the
    game again gives the same text."""
    game = chess.pgn.read_game(io.StringIO(text))
    if game is None:
        return GameFacts(None, None, None)
    # A game that ended before its first move carries the comment on the game itself.
    comment = _CLOCK.sub("", game.end().comment).strip()
    reason = comment.splitlines()[-1].strip() if comment else ""  # after any chat
    return GameFacts(
        _fecha_of(game.headers.get("Date")),
        _fecha_of(game.headers.get("EndDate")),
        reason or None,
    )


def _fecha_of(text: str | None) -> int | None:
    """The fecha of a PGN date's first second (UTC); None for an unknown or partial one."""
    try:
        day = datetime.strptime(text or "", "%Y.%m.%d").date()
    except ValueError:
        return None
    return int(datetime.combine(day, datetime.min.time(), UTC).timestamp())
