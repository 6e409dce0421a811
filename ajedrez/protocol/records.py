"""The records of ESPOL's replies (docs/protocol.md section 4) and the values they carry.

One definition for both ends: the server builds each record with ``encode()``, the
client reads it with the matching ``parse_*`` function, and the tests use both. A
malformed record raises :class:`MalformedRecord` naming the record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ajedrez.protocol.fields import format_fecha

WHITE = "B"  # blancas
BLACK = "N"  # negras
OBSERVER = "-"  # STAT's colour for a caller who observes the game
STATUS_ACTIVE = 0
STATUS_FINISHED = 2
WINNER_NONE = 0
WINNER_WHITE = 1
WINNER_BLACK = 2
WINNER_DRAW = 3
REQ_NONE = 0
REQ_OFFER = 1
REQ_ACCEPT = 2
REQ_RESIGN = 3
REMOVED_GAME = "P"  # BAJA: the administrator purged this game
REMOVED_CHALLENGE = "R"  # BAJA: the challenge with this user closed without a game
MADE = "E"  # SOLI: a challenge I made (enviada)
# End reasons of a game ended on time (RELJ's fin, 833's text, PGN, the admin's listing).
END_TIMEOUT = "timeout"
END_ABORTED = "aborted"  # the side out of time never moved: no result
RECEIVED = "R"  # SOLI: a challenge made to me (recibida)

_PARTIDA = re.compile(r"P[0-9]{7}")


class MalformedRecord(ValueError):
    """A reply's record does not have the syntax section 4 gives it."""


def other_color(color: str) -> str:
    return BLACK if color == WHITE else WHITE


def color_of_ply(ply: int) -> str:
    """The colour that plays ``ply``: odd plies are white's."""
    return WHITE if ply % 2 == 1 else BLACK


@dataclass(frozen=True)
class GameSummary:
    """One PPEN record. ``opponent_color`` is the colour the *opponent* plays."""

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

    def encode(self) -> str:
        return f"{self.game}:{self.opponent}:{self.opponent_color}:{self.status}"


@dataclass(frozen=True)
class GameStatus:
    """The STAT record. ``fecha`` is the game's last change, ``color`` the caller's."""

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

    def encode(self) -> str:
        fields = (
            self.game,
            self.white,
            self.black,
            format_fecha(self.fecha),
            self.status,
            self.ganador,
            self.solicitud_blancas,
            self.solicitud_negras,
            self.color,
            self.next_ply,
        )
        return ":".join(map(str, fields))


@dataclass(frozen=True)
class MoveRecord:
    """One SPAR record (and JGDA's fields after the game): ply, coordinate move,
    reverso, posicion (``ffTT``), promocion."""

    ply: int
    jugada: str
    reverso: int
    posicion: str
    promocion: int

    def encode(self) -> str:
        return f"{self.ply}:{self.jugada}:{self.reverso}:{self.posicion}:{self.promocion}"


@dataclass(frozen=True)
class RankEntry:
    """One SRNK record."""

    user: str
    wins: int

    def encode(self) -> str:
        return f"{self.user}:{self.wins}"


@dataclass(frozen=True)
class Removal:
    """One BAJA record: ``kind`` P with a game id, or R with the other user's name."""

    kind: str
    subject: str

    def encode(self) -> str:
        return f"{self.kind}:{self.subject}"


@dataclass(frozen=True)
class OpenChallenge:
    """One SOLI record: ``received`` (R) from ``user``, or made (E) to ``user``;
    ``control``: the challenge's time control, for ``SOLI:1`` only."""

    user: str
    received: bool
    control: str | None = None

    def encode(self) -> str:
        way = RECEIVED if self.received else MADE
        return f"{way}:{self.user}" if self.control is None else f"{way}:{self.user}:{self.control}"


@dataclass(frozen=True)
class Challenger:
    """One record of ``TRAN:<fecha>:1``: who challenged me, with what time control."""

    user: str
    control: str

    def encode(self) -> str:
        return f"{self.user}:{self.control}"


NO_CLOCK_RUNS = "-"  # RELJ's espera when no clock runs


@dataclass(frozen=True)
class ClockStatus:
    """The RELJ record: a game's clocks at the server's ``now_ms`` (docs/protocol.md,
    RELJ). Banks and times in milliseconds; 0 for "none" where a time is optional."""

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

    def bank(self, color: str) -> int:
        return self.white_ms if color == WHITE else self.black_ms

    def leave_until(self, color: str) -> int:
        return self.white_leave_until_ms if color == WHITE else self.black_leave_until_ms

    def encode(self) -> str:
        fields = (
            self.game,
            self.now_ms,
            self.control,
            self.white_ms,
            self.black_ms,
            self.waiting,
            self.deadline_ms,
            self.white_leave_until_ms,
            self.black_leave_until_ms,
            self.end_reason,
        )
        return ":".join(map(str, fields))


@dataclass(frozen=True)
class LeaveStatus:
    """The LICE record: when the caller's leave ends (0: not on leave) and the leave
    left this year after it, in milliseconds."""

    until_ms: int
    left_ms: int

    def encode(self) -> str:
        return f"{self.until_ms}:{self.left_ms}"


def _int(value: str, what: str, record: str, kind: str) -> int:
    if not value.isdigit():
        raise MalformedRecord(f"malformed {kind} record {record!r}: {what} {value!r}")
    return int(value)


def parse_game_summary(record: str) -> GameSummary:
    f = record.split(":")
    if len(f) != 4 or not _PARTIDA.fullmatch(f[0]) or f[2] not in (WHITE, BLACK):
        raise MalformedRecord(f"malformed PPEN record {record!r}")
    return GameSummary(f[0], f[1], f[2], _int(f[3], "status", record, "PPEN"))


def parse_game_status(record: str) -> GameStatus:
    f = record.split(":")
    if len(f) != 10 or not _PARTIDA.fullmatch(f[0]) or f[8] not in (WHITE, BLACK, OBSERVER):
        raise MalformedRecord(f"malformed STAT record {record!r}")
    return GameStatus(
        f[0],
        f[1],
        f[2],
        _int(f[3], "fecha", record, "STAT"),
        _int(f[4], "status", record, "STAT"),
        _int(f[5], "ganador", record, "STAT"),
        _int(f[6], "solicitud_blancas", record, "STAT"),
        _int(f[7], "solicitud_negras", record, "STAT"),
        f[8],
        _int(f[9], "proxima_jugada", record, "STAT"),
    )


def parse_move_record(record: str) -> MoveRecord:
    f = record.split(":")
    if len(f) != 5:
        raise MalformedRecord(f"malformed SPAR record {record!r}")
    return MoveRecord(
        _int(f[0], "ply", record, "SPAR"),
        f[1],
        _int(f[2], "reverso", record, "SPAR"),
        f[3],
        _int(f[4], "promocion", record, "SPAR"),
    )


def parse_rank_entry(record: str) -> RankEntry:
    user, sep, wins = record.rpartition(":")
    if not sep:
        raise MalformedRecord(f"malformed SRNK record {record!r}")
    return RankEntry(user, _int(wins, "wins", record, "SRNK"))


def parse_removal(record: str) -> Removal:
    kind, sep, subject = record.partition(":")
    if not sep or kind not in (REMOVED_GAME, REMOVED_CHALLENGE) or not subject:
        raise MalformedRecord(f"malformed BAJA record {record!r}")
    if kind == REMOVED_GAME and not _PARTIDA.fullmatch(subject):
        raise MalformedRecord(f"malformed BAJA record {record!r}")
    return Removal(kind, subject)


def parse_open_challenge(record: str) -> OpenChallenge:
    """A SOLI record, with or without (``SOLI:1``) the time control."""
    f = record.split(":")
    if len(f) not in (2, 3) or f[0] not in (MADE, RECEIVED) or not all(f[1:]):
        raise MalformedRecord(f"malformed SOLI record {record!r}")
    return OpenChallenge(f[1], f[0] == RECEIVED, f[2] if len(f) == 3 else None)


def parse_challenger(record: str) -> Challenger:
    """A record of ``TRAN:<fecha>:1``."""
    user, sep, control = record.partition(":")
    if not sep or not user or not control:
        raise MalformedRecord(f"malformed TRAN record {record!r}")
    return Challenger(user, control)


def parse_clock_status(record: str) -> ClockStatus:
    f = record.split(":")
    if len(f) != 10 or not _PARTIDA.fullmatch(f[0]) or f[5] not in (WHITE, BLACK, NO_CLOCK_RUNS):
        raise MalformedRecord(f"malformed RELJ record {record!r}")

    def number(i: int, what: str) -> int:
        return _int(f[i], what, record, "RELJ")

    return ClockStatus(
        f[0],
        number(1, "ahora"),
        f[2],
        number(3, "reloj_blancas"),
        number(4, "reloj_negras"),
        f[5],
        number(6, "limite"),
        number(7, "licencia_blancas"),
        number(8, "licencia_negras"),
        f[9],
    )


def parse_leave_status(record: str) -> LeaveStatus:
    until, sep, left = record.partition(":")
    if not sep:
        raise MalformedRecord(f"malformed LICE record {record!r}")
    return LeaveStatus(_int(until, "hasta", record, "LICE"), _int(left, "restante", record, "LICE"))
