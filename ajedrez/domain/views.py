"""What a player or observer sees of games and clocks: the values the service's reads
return, free of any wire format (a front end encodes them: ESPOL in ``espol/records.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ajedrez.domain.values import (
    BLACK,
    REQ_OFFER,
    STATUS_ACTIVE,
    WHITE,
    color_of_ply,
    other_color,
)

NO_CLOCK_RUNS = "-"  # ClockStatus.waiting when no clock runs


@dataclass(frozen=True)
class GameSummary:
    """One of a player's games, in a list of them (ESPOL: a PPEN record).
    ``opponent_color`` is the colour the *opponent* plays."""

    game: str
    opponent: str
    opponent_color: str
    status: int

    @property
    def my_color(self) -> str:
        return other_color(self.opponent_color)

    @property
    def active(self) -> bool:
        return self.status == STATUS_ACTIVE


@dataclass(frozen=True)
class GameStatus:
    """A game's status as the caller sees it (ESPOL: the STAT record). ``fecha`` is the
    game's last change (seconds), ``color`` the caller's (``OBSERVER`` for an observer)."""

    game: str
    white: str
    black: str
    fecha: int
    status: int
    ganador: int
    solicitud_blancas: int
    solicitud_negras: int
    color: str
    next_ply: int
    # The colour asking a takeback now (None: nobody), where the reader asked for it.
    takeback: str | None = None

    @property
    def active(self) -> bool:
        return self.status == STATUS_ACTIVE

    @property
    def me(self) -> str:
        return self.white if self.color == WHITE else self.black

    @property
    def opponent(self) -> str:
        return self.black if self.color == WHITE else self.white

    @property
    def turn(self) -> str:
        """The colour to play the next ply."""
        return color_of_ply(self.next_ply)

    @property
    def my_turn(self) -> bool:
        return self.active and self.turn == self.color

    def solicitud(self, color: str) -> int:
        return self.solicitud_blancas if color == WHITE else self.solicitud_negras

    @property
    def draw_offered_by(self) -> str | None:
        """The colour with a pending draw offer in an active game, if any."""
        if not self.active:
            return None
        for color in (WHITE, BLACK):
            if self.solicitud(color) == REQ_OFFER:
                return color
        return None


class MoveFields(Protocol):
    """A move as every layer names its fields (a row read, a record, a value)."""

    @property
    def ply(self) -> int: ...
    @property
    def jugada(self) -> str: ...
    @property
    def reverso(self) -> int: ...
    @property
    def posicion(self) -> str: ...
    @property
    def promocion(self) -> int: ...


@dataclass(frozen=True)
class MoveRecord:
    """A move: its ply, the coordinate move (``e2e4``), ``reverso`` (a flag kept with the
    move for the client that sent it), ``posicion`` (the squares' codes, ``ffTT``, a1=00)
    and ``promocion`` (0 none, 2 knight, 3 bishop, 4 rook, 5 queen). ESPOL: a SPAR record,
    and JGDA's fields after the game."""

    ply: int
    jugada: str
    reverso: int
    posicion: str
    promocion: int


@dataclass(frozen=True)
class NotatedMove(MoveRecord):
    """A move with its SAN, as it is stored."""

    san: str


@dataclass(frozen=True)
class ClockStatus:
    """A game's clocks at the server's ``now_ms`` (ESPOL: the RELJ record). Banks and
    times in milliseconds; 0 for "none" where a time is optional."""

    game: str
    now_ms: int
    control: str
    white_ms: int
    black_ms: int
    waiting: str  # WHITE, BLACK or NO_CLOCK_RUNS
    deadline_ms: int
    white_leave_until_ms: int
    black_leave_until_ms: int
    end_reason: str
    # The end of the server's start-up grace while it lasts (no game ends on time before
    # it: a running side out of time may still move); 0 once it is over.
    grace_until_ms: int = 0

    def bank(self, color: str) -> int:
        return self.white_ms if color == WHITE else self.black_ms

    def leave_until(self, color: str) -> int:
        return self.white_leave_until_ms if color == WHITE else self.black_leave_until_ms


@dataclass(frozen=True)
class LeaveStatus:
    """A player's leave (ESPOL: the LICE record): when it ends (0: not on leave) and the
    leave left this year after it, in milliseconds."""

    until_ms: int
    left_ms: int
