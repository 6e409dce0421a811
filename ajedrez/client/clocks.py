"""A game's clock as the client shows it: counted down offline from the last RELJ answer.

RELJ gives both banks at the server's own time ``ahora``. Sync stores that record with
the offset from this machine's clock to ``ahora`` at the moment it asked, so the server's
time now is the local time plus that offset: the countdown needs no server, and a local
clock that is set wrong changes nothing (only the time elapsed on it counts).

Everything here is arithmetic on values passed in, the present moment included
(``local_now_ms``): no IO and no clock, so the tests choose the moment.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ajedrez.domain.timecontrol import (
    ANY_CORRESPONDENCE,
    DAY_MS,
    HOUR_MS,
    MINUTE_MS,
    NONE,
    SECOND_MS,
    parse_control,
)
from ajedrez.domain.values import BLACK, END_ABORTED, END_TIMEOUT, WHITE, other_color
from ajedrez.domain.views import NO_CLOCK_RUNS, ClockStatus

# The end reasons only the server can tell: the final position and solicitudes look the
# same as those of a game still going on, or of an unclaimed draw.
CLOCK_REASONS = (END_TIMEOUT, END_ABORTED)

_SPAN_UNITS = (("d", DAY_MS), ("h", HOUR_MS), ("min", MINUTE_MS), ("s", SECOND_MS))


def local_ms() -> int:
    """This machine's clock, in milliseconds since 1970."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class StoredClock:
    """A RELJ record as the cache keeps it: ``offset_ms`` is the server's ``ahora`` minus
    the local clock when the command was sent."""

    status: ClockStatus
    offset_ms: int

    @property
    def has_clock(self) -> bool:
        return self.status.control != NONE

    def at(self, local_now_ms: int) -> ClockNow:
        return clock_at(self.status, self.offset_ms, local_now_ms)


@dataclass(frozen=True)
class ClockNow:
    """The clock at one moment: both banks, the running one counted down (never below
    zero), and the leaves still going on at that moment (0 for none)."""

    control: str
    white_ms: int
    black_ms: int
    running: str | None  # the colour whose clock runs, None when none runs
    deadline_ms: int
    white_leave_until_ms: int
    black_leave_until_ms: int
    grace_until_ms: int = 0  # the server's start-up grace, while it lasts: 0 for none

    def bank(self, color: str) -> int:
        return self.white_ms if color == WHITE else self.black_ms

    def leave_until(self, color: str) -> int:
        return self.white_leave_until_ms if color == WHITE else self.black_leave_until_ms

    @property
    def time_up(self) -> bool:
        return self.running is not None and self.bank(self.running) == 0


def clock_at(status: ClockStatus, offset_ms: int, local_now_ms: int) -> ClockNow:
    """The clock of ``status`` (answered at the server's ``now_ms``) at ``local_now_ms``."""
    server_now = local_now_ms + offset_ms
    elapsed = max(0, server_now - status.now_ms)
    running = None if status.waiting == NO_CLOCK_RUNS else status.waiting
    white, black = status.white_ms, status.black_ms
    if running is not None:
        bank = status.bank(running)
        left = bank - elapsed
        if status.deadline_ms:
            # The deadline is the server's word: for a player on leave it is the leave's
            # end plus the bank, and the bank stays whole until the leave ends.
            left = min(bank, status.deadline_ms - server_now)
        left = max(0, left)
        white, black = (left, black) if running == WHITE else (white, left)

    def leave(until: int) -> int:
        return until if until > server_now else 0

    return ClockNow(
        status.control,
        white,
        black,
        running,
        status.deadline_ms,
        leave(status.white_leave_until_ms),
        leave(status.black_leave_until_ms),
        leave(status.grace_until_ms),
    )


# -- in words ------------------------------------------------------------------------------


def span(ms: int) -> str:
    """An amount of time in its two largest units (``2 d 4 h``, ``5 h 3 min``, ``42 s``),
    cut down, never rounded up: a time left shown is never more than the time left."""
    ms = max(0, ms)
    parts: list[str] = []
    for unit, size in _SPAN_UNITS:
        amount, ms = divmod(ms, size)
        if amount or parts:
            parts.append(f"{amount} {unit}")
        if len(parts) == 2:
            break
    if not parts:
        return "0 s"
    if len(parts) == 2 and parts[1].startswith("0 "):
        parts.pop()
    return " ".join(parts)


def days_hours(ms: int) -> str:
    """An amount of time in whole days and hours, cut down: ``28 d 0 h``."""
    days, rest = divmod(max(0, ms), DAY_MS)
    return f"{days} d {rest // HOUR_MS} h"


def when(ms: int) -> str:
    """A point in time (ms since 1970) on this machine's calendar: ``2026-03-05 14:00``."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms // 1000))


@dataclass(frozen=True)
class Players:
    """Whose clock is whose, for the wording: the caller's colour and both names."""

    color: str
    white: str
    black: str

    def name(self, color: str) -> str:
        return self.white if color == WHITE else self.black

    def mine(self, color: str) -> bool:
        return color == self.color


def running_sentence(now: ClockNow, players: Players) -> str | None:
    """``you have 2 d 4 h to move``, ``bob has 5 h to move``, or that the time is up; None
    when no clock runs."""
    if now.running is None:
        return None
    mine = players.mine(now.running)
    if now.time_up and now.grace_until_ms:
        # The server's start-up grace: a move before it ends is still played.
        if mine:
            return (
                "your time is up, but the server's start-up grace lets you move until "
                f"{when(now.grace_until_ms)}"
            )
        name = players.name(now.running)
        ends = when(now.grace_until_ms)
        return f"{name}'s time is up; the server ends the game at {ends} unless {name} moves first"
    if now.time_up:
        whose = "your" if mine else f"{players.name(now.running)}'s"
        return f"{whose} time is up; the server will end the game"
    who = "you have" if mine else f"{players.name(now.running)} has"
    return f"{who} {span(now.bank(now.running))} to move"


def _on_leave(now: ClockNow, players: Players) -> list[tuple[str, int]]:
    """(colour, end of leave) of each player on leave, the caller first."""
    colors = (players.color, other_color(players.color))
    return [(c, now.leave_until(c)) for c in colors if now.leave_until(c)]


def clock_cell(now: ClockNow, players: Players) -> str:
    """One cell of the games list: the control, the running clock in words and the other
    bank (or both banks), and any leave: ``3d: you have 2 d 4 h to move; bob 3 d``."""
    me, other = players.color, other_color(players.color)
    sentence = running_sentence(now, players)
    mine = f"you {span(now.bank(me))}"
    theirs = f"{players.name(other)} {span(now.bank(other))}"
    if sentence is None:
        parts = [f"{mine}, {theirs}"]
    else:
        parts = [sentence, theirs if now.running == me else mine]
    for color, until in _on_leave(now, players):
        who = "you" if players.mine(color) else players.name(color)
        parts.append(f"{who} on leave until {when(until)}")
    return f"{now.control}: " + "; ".join(parts)


def clock_lines(now: ClockNow, players: Players) -> list[str]:
    """The lines ``ajedrez show`` prints: the control and both banks, the running clock in
    words with its deadline, the leaves."""
    banks = " | ".join(
        f"{players.name(c)} ({'white' if c == WHITE else 'black'}) {span(now.bank(c))}"
        for c in (WHITE, BLACK)
    )
    lines = [f"Clock: {now.control} | {banks}"]
    sentence = running_sentence(now, players)
    if sentence is not None:
        by = "" if now.time_up or not now.deadline_ms else f" (by {when(now.deadline_ms)})"
        # Only "you" takes a capital: a user's name is written as it is spelt.
        first = sentence[0].upper() if sentence.startswith("you") else sentence[0]
        lines.append(first + sentence[1:] + by + ".")
    for color, until in _on_leave(now, players):
        who = "You are" if players.mine(color) else f"{players.name(color)} is"
        lines.append(f"{who} on leave until {when(until)}.")
    return lines


def describe_control(control: str) -> str:
    """A time control in words: ``3 d a move``, ``10 min for the game``, ``50 d + 5 d a
    move``, ``no clock``; empty for a control this client cannot read."""
    if control == ANY_CORRESPONDENCE:
        return "any correspondence time control"
    try:
        tc = parse_control(control)
    except ValueError:
        return ""
    if tc is None:
        return "no clock"
    if tc.initial_ms == tc.increment_ms == tc.cap_ms:
        return f"{span(tc.initial_ms)} a move"
    if tc.increment_ms == 0:
        text = f"{span(tc.initial_ms)} for the game"
    else:
        text = f"{span(tc.initial_ms)} + {span(tc.increment_ms)} a move"
    return text if tc.cap_ms is None else f"{text}, at most {span(tc.cap_ms)}"


def live_control(control: str) -> bool:
    """A clock whose increment is under a day: the server keeps such a seek only while
    its owner is connected (docs/protocol.md, BUSC)."""
    try:
        tc = parse_control(control)
    except ValueError:
        return False
    return tc is not None and not tc.correspondence


def control_text(control: str | None) -> str:
    """A challenge's time control as the lists show it: ``3d (3 d a move)``."""
    if control is None:
        return "time control not known yet (sync)"
    words = describe_control(control)
    return f"{control} ({words})" if words and words != control else control
