"""Game clocks (docs/protocol.md section 5): which clock runs, what a move, leave or an
administrator's extension does to the banks, and how a game ends on time.

Pure arithmetic on a game row's clock columns and a time in milliseconds handed in by
the caller (``Clock``: the system's in production, a test's own in tests). The store
writes what these functions return (``ClockValues.columns``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Protocol

import chess

from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.rules import GameRow
from ajedrez.domain.timecontrol import DAY_MS, HOUR_MS, SECOND_MS, TimeControl, format_duration
from ajedrez.domain.values import (
    BLACK,
    END_ABORTED,
    END_TIMEOUT,
    WHITE,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_NONE,
    WINNER_WHITE,
    color_of_ply,
    other_color,
)

LEAVE_MARGIN_MS = HOUR_MS  # leave cannot start this close to a running deadline


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since 1970-01-01 UTC."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class ClockRules:
    """The server's settings for clocks (``docs/operations.md``)."""

    default_control: TimeControl | None = None  # for a JUEG that names none
    leave_days: int = 30  # per calendar year
    min_bank_ms: int = 10 * SECOND_MS
    max_bank_ms: int = 365 * DAY_MS
    flag_after_ms: int = 0  # the start-up grace: no game ends on time before this
    grace_ms: int = 0  # its length: what a late move the grace lets through leaves its mover

    def check(self, control: TimeControl | None) -> None:
        """Refuse (``802``) a control outside the server's bounds."""
        if control is None:
            return
        low, high = format_duration(self.min_bank_ms), format_duration(self.max_bank_ms)
        numbers = [control.initial_ms, control.increment_ms]
        if control.cap_ms is not None:
            numbers.append(control.cap_ms)
        if control.initial_ms < self.min_bank_ms or any(n > self.max_bank_ms for n in numbers):
            raise Failure(
                Refusal.INVALID,
                f"time control {control.name()}: the initial bank must be {low} to {high}, "
                f"the increment and cap at most {high}",
            )
        if control.cap_ms is not None and control.cap_ms < max(
            control.initial_ms, control.increment_ms
        ):
            raise Failure(
                Refusal.INVALID,
                f"time control {control.name()}: the cap may not be below the initial bank "
                "or the increment",
            )

    def may_flag(self, now_ms: int) -> bool:
        return now_ms >= self.flag_after_ms

    def leave_allowance_ms(self) -> int:
        return self.leave_days * DAY_MS


class ClockRow(Protocol):
    """A game row's columns that clocks read."""

    @property
    def status(self) -> int: ...
    @property
    def next_ply(self) -> int: ...
    @property
    def tc_increment_ms(self) -> int | None: ...
    @property
    def tc_cap_ms(self) -> int | None: ...
    @property
    def white_ms(self) -> int | None: ...
    @property
    def black_ms(self) -> int | None: ...
    @property
    def clock_since_ms(self) -> int | None: ...
    @property
    def deadline_ms(self) -> int | None: ...
    @property
    def white_leave_until_ms(self) -> int | None: ...
    @property
    def black_leave_until_ms(self) -> int | None: ...


class ClockGameRow(GameRow, ClockRow, Protocol):
    """A game row as a move or the scheduler reads it: position and clocks."""


@dataclass(frozen=True)
class ClockValues:
    """New values of a game's clock columns. ``warned_until``: the clock warnings of
    this turn up to then were sent already (None: none was)."""

    white_ms: int
    black_ms: int
    since_ms: int
    deadline_ms: int | None
    warned_until: int | None = None

    @property
    def warn_at_ms(self) -> int | None:
        if self.deadline_ms is None:
            return None
        after = self.since_ms - 1 if self.warned_until is None else self.warned_until
        return next_warning(self.since_ms, self.deadline_ms, after)

    def columns(self) -> dict[str, object]:
        return {
            "white_ms": self.white_ms,
            "black_ms": self.black_ms,
            "clock_since_ms": self.since_ms,
            "deadline_ms": self.deadline_ms,
            "warn_at_ms": self.warn_at_ms,
        }

    def bank(self, color: str) -> int:
        return self.white_ms if color == WHITE else self.black_ms


def next_warning(since_ms: int, deadline_ms: int, after_ms: int) -> int | None:
    """The first clock warning of a turn (AVISO_RELOJ, docs/protocol.md section 6) later
    than ``after_ms``: when a tenth of the bank the turn began with is left, and, for a
    turn of more than a day, when a day is left. None: no warning is left."""
    bank = deadline_ms - since_ms
    times = [deadline_ms - bank // 10]
    if bank > DAY_MS:
        times.append(deadline_ms - DAY_MS)
    later = [t for t in times if t > after_ms]
    return min(later) if later else None


def control_columns(control: TimeControl | None) -> dict[str, object]:
    """A challenge's or game's ``tc_*`` columns."""
    if control is None:
        return {"tc_initial_ms": None, "tc_increment_ms": None, "tc_cap_ms": None}
    return {
        "tc_initial_ms": control.initial_ms,
        "tc_increment_ms": control.increment_ms,
        "tc_cap_ms": control.cap_ms,
    }


def control_from(initial: int | None, increment: int | None, cap: int | None) -> TimeControl | None:
    if initial is None:
        return None
    return TimeControl(initial, increment or 0, cap)


class ControlColumns(Protocol):
    @property
    def tc_initial_ms(self) -> int | None: ...
    @property
    def tc_increment_ms(self) -> int | None: ...
    @property
    def tc_cap_ms(self) -> int | None: ...


def control_of(row: ControlColumns) -> TimeControl | None:
    """The time control a game's row (or a listing's) holds."""
    return control_from(row.tc_initial_ms, row.tc_increment_ms, row.tc_cap_ms)


def has_clock(row: ClockRow) -> bool:
    return row.clock_since_ms is not None


def correspondence(row: ClockRow) -> bool:
    return (row.tc_increment_ms or 0) >= DAY_MS


def leave_until(row: ClockRow, color: str) -> int | None:
    """When the leave of ``color``'s player ends, as the game's row holds it."""
    return row.white_leave_until_ms if color == WHITE else row.black_leave_until_ms


def leave_columns(color: str, until_ms: int | None) -> dict[str, object]:
    return {"white_leave_until_ms" if color == WHITE else "black_leave_until_ms": until_ms}


def waiting_color(row: ClockRow) -> str:
    """Whose clock runs: the side to move's, whatever offer is pending (docs/protocol.md
    section 5), so nobody is out of time by ignoring an offer."""
    return color_of_ply(row.next_ply)


def starts_at(now_ms: int, is_correspondence: bool, leave_until_ms: int | None) -> int:
    """When a clock that is to start now starts counting: after its player's leave, in a
    correspondence game."""
    if is_correspondence and leave_until_ms is not None and leave_until_ms > now_ms:
        return leave_until_ms
    return now_ms


def start(control: TimeControl, now_ms: int, white_leave_until_ms: int | None) -> ClockValues:
    """A new game: both banks full, white's clock running."""
    since = starts_at(now_ms, control.correspondence, white_leave_until_ms)
    bank = control.initial_ms
    return ClockValues(bank, bank, since, since + bank)


def remaining(row: ClockRow, color: str, now_ms: int) -> int:
    """``color``'s bank at ``now_ms``: the running clock counted down, never below 0."""
    bank = _banks(row)[color]
    if row.deadline_ms is None or color != waiting_color(row):
        return bank
    since = row.clock_since_ms or 0
    return max(0, bank - max(0, now_ms - since))


def _banks(row: ClockRow) -> dict[str, int]:
    return {WHITE: row.white_ms or 0, BLACK: row.black_ms or 0}


def _running(banks: dict[str, int], running: str, since: int) -> ClockValues:
    """The clocks with these banks, ``running``'s counting from ``since``."""
    return ClockValues(banks[WHITE], banks[BLACK], since, since + banks[running])


def after_move(
    row: ClockRow,
    mover: str,
    now_ms: int,
    next_leave_until_ms: int | None,
    late_floor_ms: int = 0,
) -> tuple[ClockValues, int]:
    """The clocks after ``mover``'s move at ``now_ms``, and the mover's bank after it. A
    move later than the mover's bank (one the start-up grace let through) leaves at least
    ``late_floor_ms``: the move stands, and the mover's next turn is not lost before it
    begins."""
    control = TimeControl(0, row.tc_increment_ms or 0, row.tc_cap_ms)
    used = max(0, now_ms - (row.clock_since_ms or now_ms))
    banks = _banks(row)
    after = control.bank_after(banks[mover], used)
    if used > banks[mover]:
        after = max(after, late_floor_ms)
    banks[mover] = after
    since = starts_at(now_ms, control.correspondence, next_leave_until_ms)
    return _running(banks, other_color(mover), since), after


def paused(row: ClockRow, now_ms: int, until_ms: int) -> ClockValues:
    """The running clock stopped until ``until_ms`` (its player's leave)."""
    running = waiting_color(row)
    banks = _banks(row)
    banks[running] = remaining(row, running, now_ms)
    return _running(banks, running, max(until_ms, row.clock_since_ms or 0))


def resumed(row: ClockRow, now_ms: int) -> ClockValues | None:
    """The running clock started now, if it was waiting for a leave's end."""
    if (row.clock_since_ms or 0) <= now_ms:
        return None
    return _running(_banks(row), waiting_color(row), now_ms)


def extended(row: ClockRow, by_ms: int, now_ms: int) -> ClockValues:
    """The running side's bank (and its deadline) ``by_ms`` longer; the warnings that
    fell before ``now_ms`` are not sent again."""
    running = waiting_color(row)
    banks = _banks(row)
    banks[running] += by_ms
    return replace(_running(banks, running, row.clock_since_ms or 0), warned_until=now_ms)


def expired(row: ClockRow, now_ms: int, rules: ClockRules) -> bool:
    """Has the running side run out (and may this server end the game for it now)?"""
    return row.deadline_ms is not None and now_ms >= row.deadline_ms and rules.may_flag(now_ms)


def timeout_result(row: ClockGameRow, fen: str) -> tuple[int, str]:
    """(ganador, end reason) of a game whose running side ran out, in position ``fen``:
    aborted if that side never moved; a draw if the opponent cannot mate; else a loss."""
    out = waiting_color(row)
    never_moved = row.next_ply <= (1 if out == WHITE else 2)
    if never_moved:
        return WINNER_NONE, END_ABORTED
    winner = other_color(out)
    board = chess.Board(fen)
    if board.has_insufficient_material(chess.WHITE if winner == WHITE else chess.BLACK):
        return WINNER_DRAW, END_TIMEOUT
    return (WINNER_WHITE if winner == WHITE else WINNER_BLACK), END_TIMEOUT


def leave_left_ms(
    year_now: int, leave_year: int | None, leave_left: int | None, rules: ClockRules
) -> int:
    """The leave a player has left this year (a new year brings the full allowance)."""
    if leave_year != year_now or leave_left is None:
        return rules.leave_allowance_ms()
    return leave_left


def utc_year(now_ms: int) -> int:
    return time.gmtime(now_ms // 1000).tm_year


def taken_back(
    row: ClockRow, mover: str, bank_ms: int, now_ms: int, leave_until_ms: int | None
) -> ClockValues:
    """A move of ``mover`` taken back: ``mover`` is to move again with ``bank_ms`` (what
    the turn began with), counting from now; the opponent's bank is as it was before
    their clock started, so the time the request waited costs them nothing."""
    banks = _banks(row)
    banks[mover] = bank_ms
    since = starts_at(now_ms, correspondence(row), leave_until_ms)
    return _running(banks, mover, since)
