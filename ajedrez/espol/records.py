"""The records of ESPOL's replies (docs/protocol.md section 4) and the values they carry.

One definition for both ends: the server builds each record with ``encode()`` (or
an ``encode_*`` function for the domain's values), the
client reads it with the matching ``parse_*`` function, and the tests use both. A
malformed record raises :class:`MalformedRecord` naming the record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ajedrez.domain.values import (
    BLACK,
    END_ABORTED,
    END_TIMEOUT,
    OBSERVER,
    REMOVED_CHALLENGE,
    REMOVED_GAME,
    REQ_ACCEPT,
    REQ_NONE,
    REQ_OFFER,
    REQ_RESIGN,
    STATUS_ACTIVE,
    STATUS_FINISHED,
    WHITE,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_NONE,
    WINNER_WHITE,
    color_of_ply,
    other_color,
)
from ajedrez.domain.views import (
    NO_CLOCK_RUNS,
    ClockStatus,
    GameStatus,
    GameSummary,
    LeaveStatus,
    MoveRecord,
)
from ajedrez.espol.fields import format_fecha

NOBODY = "-"  # STAT:<partida>:1's takeback field when no takeback is asked

# The domain's values, as the records below carry them (one definition, in the domain).
__all__ = [
    "BLACK",
    "END_ABORTED",
    "END_TIMEOUT",
    "NO_CLOCK_RUNS",
    "OBSERVER",
    "REMOVED_CHALLENGE",
    "REMOVED_GAME",
    "REQ_ACCEPT",
    "REQ_NONE",
    "REQ_OFFER",
    "REQ_RESIGN",
    "STATUS_ACTIVE",
    "STATUS_FINISHED",
    "WHITE",
    "WINNER_BLACK",
    "WINNER_DRAW",
    "WINNER_NONE",
    "WINNER_WHITE",
    "Challenger",
    "ClockStatus",
    "GameStatus",
    "GameSummary",
    "LeaveStatus",
    "MalformedRecord",
    "MoveRecord",
    "OpenChallenge",
    "RankEntry",
    "Removal",
    "color_of_ply",
    "other_color",
]

MADE = "E"  # SOLI: a challenge I made (enviada)
RECEIVED = "R"  # SOLI: a challenge made to me (recibida)

_PARTIDA = re.compile(r"P[0-9]{7}")


class MalformedRecord(ValueError):
    """A reply's record does not have the syntax section 4 gives it."""


def encode_summary(s: GameSummary) -> str:
    """One PPEN record."""
    return f"{s.game}:{s.opponent}:{s.opponent_color}:{s.status}"


def encode_status(s: GameStatus, with_takeback: bool = False) -> str:
    """The STAT record; ``with_takeback`` (STAT:<partida>:1): and a last field, the
    colour asking a takeback now, ``-`` for nobody."""
    fields: tuple[object, ...] = (
        s.game,
        s.white,
        s.black,
        format_fecha(s.fecha),
        s.status,
        s.ganador,
        s.solicitud_blancas,
        s.solicitud_negras,
        s.color,
        s.next_ply,
    )
    if with_takeback:
        fields += (s.takeback or NOBODY,)
    return ":".join(map(str, fields))


def encode_move(m: MoveRecord) -> str:
    """One SPAR record (and JGDA's fields after the game)."""
    return f"{m.ply}:{m.jugada}:{m.reverso}:{m.posicion}:{m.promocion}"


def encode_clocks(c: ClockStatus, with_grace: bool = False) -> str:
    """The RELJ record; ``with_grace`` (RELJ:<partida>:1): and a last field, the end of
    the server's start-up grace while it lasts, 0 after."""
    fields: tuple[object, ...] = (
        c.game,
        c.now_ms,
        c.control,
        c.white_ms,
        c.black_ms,
        c.waiting,
        c.deadline_ms,
        c.white_leave_until_ms,
        c.black_leave_until_ms,
        c.end_reason,
    )
    if with_grace:
        fields += (c.grace_until_ms,)
    return ":".join(map(str, fields))


def encode_leave(leave: LeaveStatus) -> str:
    """The LICE record."""
    return f"{leave.until_ms}:{leave.left_ms}"


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


# The kinds of player in a record of JUGA.
REGISTERED = "R"  # an account
GUEST = "I"  # invitado: a guest of a seed protocol's listener (docs/dialects.md)


@dataclass(frozen=True)
class Listed:
    """One record of JUGA: a player and whether it is a guest."""

    user: str
    guest: bool

    def encode(self) -> str:
        return f"{self.user}:{GUEST if self.guest else REGISTERED}"


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
    if (
        len(f) not in (10, 11)
        or not _PARTIDA.fullmatch(f[0])
        or f[8] not in (WHITE, BLACK, OBSERVER)
        or f[10:] not in ([], [WHITE], [BLACK], [NOBODY])
    ):
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
        f[10] if f[10:] and f[10] != NOBODY else None,
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


def parse_listed(record: str) -> Listed:
    """A record of JUGA."""
    user, sep, kind = record.partition(":")
    if not sep or not user or kind not in (REGISTERED, GUEST):
        raise MalformedRecord(f"malformed JUGA record {record!r}")
    return Listed(user, kind == GUEST)


def parse_clock_status(record: str) -> ClockStatus:
    f = record.split(":")
    if (
        len(f) not in (10, 11)
        or not _PARTIDA.fullmatch(f[0])
        or f[5] not in (WHITE, BLACK, NO_CLOCK_RUNS)
    ):
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
        number(10, "gracia") if len(f) == 11 else 0,
    )


def parse_leave_status(record: str) -> LeaveStatus:
    until, sep, left = record.partition(":")
    if not sep:
        raise MalformedRecord(f"malformed LICE record {record!r}")
    return LeaveStatus(_int(until, "hasta", record, "LICE"), _int(left, "restante", record, "LICE"))
