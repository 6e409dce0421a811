"""Time controls and durations as the protocol writes them (docs/protocol.md sections 2
and 5): parsed and formatted here for the server, the client and the tests alike.

A :class:`TimeControl` is three numbers in milliseconds: the initial bank, the increment
added after each move, and an optional cap on the bank. ``None`` stands for ``none``,
no clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ajedrez.domain.text import shown

SECOND_MS = 1000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
DAY_MS = 24 * HOUR_MS
UNITS = {"d": DAY_MS, "h": HOUR_MS, "m": MINUTE_MS, "s": SECOND_MS}  # largest first
NONE = "none"
MAX_CONTROL_LENGTH = 32

_DURATION = re.compile(r"0|([0-9]{1,6})([dhms])")


@dataclass(frozen=True)
class TimeControl:
    initial_ms: int
    increment_ms: int
    cap_ms: int | None = None

    @property
    def correspondence(self) -> bool:
        """An increment of a day or more: leave stops its clocks (section 5)."""
        return self.increment_ms >= DAY_MS

    def bank_after(self, bank_ms: int, used_ms: int) -> int:
        """The mover's bank after a move: ``min(bank - used + increment, cap)``, never
        below the increment (a late move that the start-up grace let through)."""
        after = max(0, bank_ms - used_ms) + self.increment_ms
        return after if self.cap_ms is None else min(after, self.cap_ms)

    def name(self) -> str:
        """The protocol's spelling: a preset's name, else ``<initial>+<increment>[/<cap>]``."""
        for name, preset in PRESETS.items():
            if preset == self:
                return name
        text = f"{format_duration(self.initial_ms)}+{format_duration(self.increment_ms)}"
        return text if self.cap_ms is None else f"{text}/{format_duration(self.cap_ms)}"

    def pgn_tag(self) -> str:
        """The PGN standard's TimeControl: ``1/<s>`` for a time per move, ``<s>`` for sudden
        death, else ``<s>+<s>``."""
        if self.initial_ms == self.increment_ms == self.cap_ms:
            return f"1/{self.initial_ms // SECOND_MS}"
        if self.increment_ms == 0:
            return str(self.initial_ms // SECOND_MS)
        return f"{self.initial_ms // SECOND_MS}+{self.increment_ms // SECOND_MS}"


def _per_move(days: int) -> TimeControl:
    return TimeControl(days * DAY_MS, days * DAY_MS, days * DAY_MS)


PRESETS: dict[str, TimeControl] = {
    "1d": _per_move(1),
    "3d": _per_move(3),
    "7d": _per_move(7),
    "14d": _per_move(14),
    "iccf-10/50": TimeControl(50 * DAY_MS, 5 * DAY_MS),
    "10m": TimeControl(10 * MINUTE_MS, 0),
    "30s-move": TimeControl(30 * SECOND_MS, 30 * SECOND_MS, 30 * SECOND_MS),
}


def parse_duration(value: str) -> int:
    """``0`` or digits and a unit (``s``, ``m``, ``h``, ``d``), in milliseconds."""
    found = _DURATION.fullmatch(value)
    if not found:
        raise ValueError(
            f"invalid duration '{shown(value)}': 0, or 1-6 digits and a unit s, m, h or d (90s, 3d)"
        )
    return 0 if value == "0" else int(found[1]) * UNITS[found[2]]


def format_duration(ms: int) -> str:
    """``ms`` in the largest unit that holds it exactly (``0`` for none)."""
    if ms == 0:
        return "0"
    for unit, size in UNITS.items():
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms / SECOND_MS:g}s"  # not a whole second: never stored by this server


# A seek's control (BUSC) that takes any correspondence control (an increment of a day
# or more): paired with the oldest waiting correspondence seek, at that seek's control.
ANY_CORRESPONDENCE = "corr"
# The control of a game two "any correspondence" seeks make.
ANY_CORRESPONDENCE_GAME = "3d"


def parse_control(value: str) -> TimeControl | None:
    """A ``control`` field: ``none`` (None), a preset's name, or ``<initial>+<increment>``
    with an optional ``/<cap>``. Syntax only: the server checks its bounds."""
    if value == NONE:
        return None
    if value in PRESETS:
        return PRESETS[value]
    initial, plus, rest = value.partition("+")
    increment, slash, cap = rest.partition("/")
    if len(value) > MAX_CONTROL_LENGTH or not plus or (slash and not cap):
        raise ValueError(
            f"invalid time control '{shown(value)}': none, a preset "
            f"({', '.join(PRESETS)}) or <initial>+<increment>[/<cap>] like 50d+5d or "
            "30s+30s/30s"
        )
    try:
        return TimeControl(
            parse_duration(initial),
            parse_duration(increment),
            parse_duration(cap) if slash else None,
        )
    except ValueError as e:
        raise ValueError(f"invalid time control '{shown(value)}': {e}") from None


def control_name(control: TimeControl | None) -> str:
    return NONE if control is None else control.name()
