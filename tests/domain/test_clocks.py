"""Clock arithmetic without IO (docs/protocol.md sections 2 and 5): time controls and
durations as the protocol writes them (``domain/timecontrol.py``), and the pure
functions of ``domain/clocks.py`` on a small row object that holds a game's clock columns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import chess
import pytest

from ajedrez.domain import clocks
from ajedrez.domain.clocks import ClockRules, ClockValues
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.timecontrol import (
    PRESETS,
    TimeControl,
    control_name,
    format_duration,
    parse_control,
    parse_duration,
)
from ajedrez.domain.values import (
    BLACK,
    REQ_NONE,
    REQ_OFFER,
    WHITE,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_NONE,
    WINNER_WHITE,
)
from tests.support.clock import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS, START_MS

S = START_MS
THREE_DAYS = PRESETS["3d"]
TEN_MINUTES = PRESETS["10m"]
ICCF = PRESETS["iccf-10/50"]
PER_MOVE = PRESETS["30s-move"]


# -- control and duration syntax ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "initial", "increment", "cap"),
    [
        ("1d", DAY_MS, DAY_MS, DAY_MS),
        ("3d", 3 * DAY_MS, 3 * DAY_MS, 3 * DAY_MS),
        ("7d", 7 * DAY_MS, 7 * DAY_MS, 7 * DAY_MS),
        ("14d", 14 * DAY_MS, 14 * DAY_MS, 14 * DAY_MS),
        ("iccf-10/50", 50 * DAY_MS, 5 * DAY_MS, None),
        ("10m", 10 * MINUTE_MS, 0, None),
        ("30s-move", 30 * SECOND_MS, 30 * SECOND_MS, 30 * SECOND_MS),
    ],
)
def test_presets_parse_to_their_numbers_and_keep_their_names(text, initial, increment, cap):
    control = parse_control(text)
    assert control == TimeControl(initial, increment, cap)
    assert control.name() == text
    assert control_name(control) == text
    assert parse_control(control.name()) == control


def test_none_is_no_clock_both_ways():
    assert parse_control("none") is None
    assert control_name(None) == "none"


@pytest.mark.parametrize(
    ("text", "initial", "increment", "cap", "canonical"),
    [
        # the three numbers of a preset are written as the preset's name
        ("50d+5d", 50 * DAY_MS, 5 * DAY_MS, None, "iccf-10/50"),
        ("3d+3d/3d", 3 * DAY_MS, 3 * DAY_MS, 3 * DAY_MS, "3d"),
        ("72h+72h/72h", 3 * DAY_MS, 3 * DAY_MS, 3 * DAY_MS, "3d"),
        ("10m+0", 10 * MINUTE_MS, 0, None, "10m"),
        ("600s+0", 10 * MINUTE_MS, 0, None, "10m"),
        ("30s+30s/30s", 30 * SECOND_MS, 30 * SECOND_MS, 30 * SECOND_MS, "30s-move"),
        # else the explicit form, each duration in its largest exact unit, no cap if none
        ("15m+0", 15 * MINUTE_MS, 0, None, "15m+0"),
        ("2h+30s", 2 * HOUR_MS, 30 * SECOND_MS, None, "2h+30s"),
        ("120s+0", 2 * MINUTE_MS, 0, None, "2m+0"),
        ("90s+0", 90 * SECOND_MS, 0, None, "90s+0"),
        ("48h+1440m", 2 * DAY_MS, DAY_MS, None, "2d+1d"),
        ("1d+0/2d", DAY_MS, 0, 2 * DAY_MS, "1d+0/2d"),
        ("3d+3d/7d", 3 * DAY_MS, 3 * DAY_MS, 7 * DAY_MS, "3d+3d/7d"),
        ("3d+3d", 3 * DAY_MS, 3 * DAY_MS, None, "3d+3d"),  # no cap: not the 3d preset
        ("999999s+0", 999_999 * SECOND_MS, 0, None, "999999s+0"),
    ],
)
def test_explicit_controls_and_their_canonical_names(text, initial, increment, cap, canonical):
    control = parse_control(text)
    assert control == TimeControl(initial, increment, cap)
    assert control.name() == canonical
    assert parse_control(canonical) == control  # the canonical name reads back the same


@pytest.mark.parametrize(
    "text",
    [
        "",
        "3x",
        "3d3d",
        "3d+",
        "+3d",
        "3d+3d/",
        "3d+3d+3d",
        "1d+1d/1d/1d",
        "3D+0",
        "-1d+0",
        "1.5h+0",
        "1234567s+0",  # seven digits
        "3d+3d/3",  # a bare number is not a duration
        "1w+0",
        "None",
        "none ",
        " 3d",
        "3d ",
        "ICCF-10/50",
        "1" * 29 + "s+0",  # 33 characters
    ],
)
def test_malformed_controls_are_refused_naming_the_input(text):
    with pytest.raises(ValueError) as raised:
        parse_control(text)
    assert f"'{text}'" in str(raised.value)


def test_the_longest_controls():
    """Six digits to each duration: 23 characters, under the 32 a control may have."""
    longest = "999999s+999999s/999999s"
    assert parse_control(longest) == TimeControl(
        999_999 * SECOND_MS, 999_999 * SECOND_MS, 999_999 * SECOND_MS
    )
    too_long = "1" * 45 + "d+0"
    with pytest.raises(ValueError) as raised:
        parse_control(too_long)
    assert "'" + too_long[:40] + "...'" in str(raised.value)  # named, shortened


def test_a_control_reason_shows_no_control_character():
    with pytest.raises(ValueError) as raised:
        parse_control("3d\x00+0")
    assert "'3d?+0'" in str(raised.value)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("0", 0),
        ("90s", 90 * SECOND_MS),
        ("1s", SECOND_MS),
        ("15m", 15 * MINUTE_MS),
        ("2h", 2 * HOUR_MS),
        ("3d", 3 * DAY_MS),
        ("999999d", 999_999 * DAY_MS),
        ("0s", 0),
        ("007m", 7 * MINUTE_MS),
    ],
)
def test_durations(text, ms):
    assert parse_duration(text) == ms


@pytest.mark.parametrize(
    "text", ["", "1", "s", "1w", "1.5h", "1 s", "1S", "1234567s", "-1s", "00", "1d1h", "1d "]
)
def test_malformed_durations_are_refused_naming_the_input(text):
    with pytest.raises(ValueError) as raised:
        parse_duration(text)
    assert f"'{text}'" in str(raised.value)


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0"),
        (SECOND_MS, "1s"),
        (90 * SECOND_MS, "90s"),
        (MINUTE_MS, "1m"),
        (HOUR_MS, "1h"),
        (36 * HOUR_MS, "36h"),
        (DAY_MS, "1d"),
        (365 * DAY_MS, "365d"),
        (DAY_MS + SECOND_MS, "86401s"),
    ],
)
def test_durations_are_written_in_their_largest_exact_unit(ms, text):
    assert format_duration(ms) == text
    assert parse_duration(text) == ms


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("1d", "1/86400"),  # a time per move: initial = increment = cap
        ("3d", "1/259200"),
        ("30s-move", "1/30"),
        ("iccf-10/50", "4320000+432000"),
        ("2h+30s", "7200+30"),
        ("3d+3d", "259200+259200"),  # no cap: not a time per move
        ("3d+3d/7d", "259200+259200"),
        # Sudden death: the PGN standard's single number of seconds (section 9.6.1), the
        # form the PGN standard gives for no increment; see the report on protocol.md.
        ("10m", "600"),
        ("15m+0", "900"),
    ],
)
def test_pgn_time_control_tag(text, tag):
    control = parse_control(text)
    assert control is not None
    assert control.pgn_tag() == tag


# -- the one rule ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("control", "bank", "used", "after"),
    [
        # with a cap: min(bank - used + increment, cap)
        (THREE_DAYS, 3 * DAY_MS, DAY_MS, 3 * DAY_MS),
        (THREE_DAYS, 3 * DAY_MS, 3 * DAY_MS - 1, 3 * DAY_MS),
        (PER_MOVE, 30 * SECOND_MS, 29_999, 30 * SECOND_MS),
        (TimeControl(HOUR_MS, 10 * MINUTE_MS, 90 * MINUTE_MS), HOUR_MS, MINUTE_MS, 69 * MINUTE_MS),
        (
            TimeControl(HOUR_MS, 10 * MINUTE_MS, 90 * MINUTE_MS),
            85 * MINUTE_MS,
            MINUTE_MS,
            90 * MINUTE_MS,
        ),
        # without a cap the bank grows
        (ICCF, 50 * DAY_MS, 10 * DAY_MS, 45 * DAY_MS),
        (ICCF, 50 * DAY_MS, 0, 55 * DAY_MS),
        (TimeControl(10 * SECOND_MS, 30 * SECOND_MS), 10 * SECOND_MS, 5 * SECOND_MS, 35_000),
        (TEN_MINUTES, 10 * MINUTE_MS, 90 * SECOND_MS, 510 * SECOND_MS),
        (TEN_MINUTES, 10 * MINUTE_MS, 10 * MINUTE_MS - 1, 1),
        # a late move (the start-up grace let it through) used the whole bank
        (PER_MOVE, 30 * SECOND_MS, 10 * MINUTE_MS, 30 * SECOND_MS),
        (TEN_MINUTES, 10 * MINUTE_MS, 11 * MINUTE_MS, 0),
        (ICCF, DAY_MS, 2 * DAY_MS, 5 * DAY_MS),
    ],
)
def test_bank_after_a_move(control, bank, used, after):
    assert control.bank_after(bank, used) == after
    expected = bank - min(used, bank) + control.increment_ms
    if control.cap_ms is not None:
        expected = min(expected, control.cap_ms)
    assert after == expected


def test_correspondence_is_an_increment_of_a_day_or_more():
    assert THREE_DAYS.correspondence and ICCF.correspondence
    assert PRESETS["1d"].correspondence
    assert TimeControl(HOUR_MS, DAY_MS).correspondence
    assert not TimeControl(5 * DAY_MS, DAY_MS - 1).correspondence
    assert not TEN_MINUTES.correspondence and not PER_MOVE.correspondence


# -- a game row's clock ----------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """A game row's clock columns, as ``clocks.ClockRow`` reads them."""

    tc_increment_ms: int | None
    tc_cap_ms: int | None
    white_ms: int | None
    black_ms: int | None
    clock_since_ms: int | None
    deadline_ms: int | None
    next_ply: int = 1
    status: int = 0
    req_white: int = REQ_NONE
    req_black: int = REQ_NONE

    def then(self, values: ClockValues | None = None, **changes: object) -> Row:
        """This row with new clock values written (``ClockValues.columns``) and ``changes``."""
        if values is not None:
            changes = {
                "white_ms": values.white_ms,
                "black_ms": values.black_ms,
                "clock_since_ms": values.since_ms,
                "deadline_ms": values.deadline_ms,
                **changes,
            }
        return dataclasses.replace(self, **changes)


def started(control: TimeControl, at: int = S, leave_until: int | None = None) -> Row:
    values = clocks.start(control, at, leave_until)
    return Row(control.increment_ms, control.cap_ms, None, None, None, None).then(values)


NO_CLOCK = Row(None, None, None, None, None, None)


def test_start_fills_both_banks_and_runs_whites_clock():
    assert clocks.start(THREE_DAYS, S, None) == ClockValues(
        3 * DAY_MS, 3 * DAY_MS, S, S + 3 * DAY_MS
    )
    assert clocks.start(ICCF, S, None) == ClockValues(50 * DAY_MS, 50 * DAY_MS, S, S + 50 * DAY_MS)
    row = started(TEN_MINUTES)
    assert clocks.waiting_color(row) == WHITE and clocks.has_clock(row)
    assert not clocks.has_clock(NO_CLOCK)


def test_start_waits_for_whites_leave_in_a_correspondence_game_only():
    until = S + 5 * DAY_MS
    assert clocks.start(THREE_DAYS, S, until) == ClockValues(
        3 * DAY_MS, 3 * DAY_MS, until, until + 3 * DAY_MS
    )
    assert clocks.start(TEN_MINUTES, S, until) == ClockValues(
        10 * MINUTE_MS, 10 * MINUTE_MS, S, S + 10 * MINUTE_MS
    )
    assert clocks.start(THREE_DAYS, S, S) == clocks.start(THREE_DAYS, S, None)  # leave over


def test_waiting_color_is_the_side_to_move_whatever_offer_is_pending():
    row = started(TEN_MINUTES)
    assert clocks.waiting_color(row) == WHITE
    assert clocks.waiting_color(row.then(next_ply=2)) == BLACK
    assert clocks.waiting_color(row.then(next_ply=7)) == WHITE
    assert clocks.waiting_color(row.then(req_white=REQ_OFFER)) == WHITE  # white to move offers
    assert clocks.waiting_color(row.then(next_ply=2, req_black=REQ_OFFER)) == BLACK
    assert clocks.waiting_color(row.then(req_black=REQ_OFFER)) == WHITE  # offer off turn


def test_remaining_counts_the_running_clock_down_never_below_zero():
    row = started(TEN_MINUTES)
    assert clocks.remaining(row, WHITE, S) == 10 * MINUTE_MS
    assert clocks.remaining(row, WHITE, S + 90 * SECOND_MS) == 510 * SECOND_MS
    assert clocks.remaining(row, BLACK, S + 90 * SECOND_MS) == 10 * MINUTE_MS  # not running
    assert clocks.remaining(row, WHITE, S + 10 * MINUTE_MS) == 0
    assert clocks.remaining(row, WHITE, S + DAY_MS) == 0
    assert clocks.remaining(row, WHITE, S - HOUR_MS) == 10 * MINUTE_MS  # starts later
    assert clocks.remaining(NO_CLOCK, WHITE, S) == 0


def test_after_move_with_a_cap():
    row = started(THREE_DAYS)
    values, bank = clocks.after_move(row, WHITE, S + DAY_MS, None)
    assert bank == 3 * DAY_MS
    assert values == ClockValues(3 * DAY_MS, 3 * DAY_MS, S + DAY_MS, S + 4 * DAY_MS)
    # black answers 2 days and 23 hours later: its bank is topped up to the cap
    row = row.then(values, next_ply=2)
    at = S + DAY_MS + 3 * DAY_MS - HOUR_MS
    values, bank = clocks.after_move(row, BLACK, at, None)
    assert bank == 3 * DAY_MS
    assert values == ClockValues(3 * DAY_MS, 3 * DAY_MS, at, at + 3 * DAY_MS)


def test_after_move_without_a_cap():
    row = started(ICCF)
    values, bank = clocks.after_move(row, WHITE, S + 10 * DAY_MS, None)
    assert bank == 45 * DAY_MS
    # black's clock starts with black's bank
    assert values == ClockValues(45 * DAY_MS, 50 * DAY_MS, S + 10 * DAY_MS, S + 60 * DAY_MS)
    row = row.then(values, next_ply=2)
    values, bank = clocks.after_move(row, BLACK, S + 11 * DAY_MS, None)
    assert bank == 54 * DAY_MS
    assert values == ClockValues(45 * DAY_MS, 54 * DAY_MS, S + 11 * DAY_MS, S + 56 * DAY_MS)


def test_after_move_in_a_sudden_death_game():
    row = started(TEN_MINUTES)
    values, bank = clocks.after_move(row, WHITE, S + 90 * SECOND_MS, None)
    assert bank == 510 * SECOND_MS
    assert values == ClockValues(
        510 * SECOND_MS, 10 * MINUTE_MS, S + 90 * SECOND_MS, S + 90 * SECOND_MS + 10 * MINUTE_MS
    )


def test_after_move_starts_the_opponents_clock_after_its_leave_in_correspondence_only():
    until = S + 5 * DAY_MS
    values, _bank = clocks.after_move(started(THREE_DAYS), WHITE, S + HOUR_MS, until)
    assert values.since_ms == until
    assert values.deadline_ms == until + 3 * DAY_MS
    values, _bank = clocks.after_move(started(TEN_MINUTES), WHITE, S + SECOND_MS, until)
    assert values.since_ms == S + SECOND_MS
    assert values.deadline_ms == S + SECOND_MS + 10 * MINUTE_MS
    # a leave already over changes nothing
    values, _bank = clocks.after_move(started(THREE_DAYS), WHITE, S + HOUR_MS, S + HOUR_MS)
    assert values.since_ms == S + HOUR_MS


def test_paused_and_resumed():
    row = started(THREE_DAYS)
    until = S + HOUR_MS + 5 * DAY_MS
    paused = clocks.paused(row, S + HOUR_MS, until)
    bank = 3 * DAY_MS - HOUR_MS
    assert paused == ClockValues(bank, 3 * DAY_MS, until, until + bank)
    row = row.then(paused)
    assert clocks.remaining(row, WHITE, S + 3 * DAY_MS) == bank  # stopped meanwhile
    # the leave ends early: the clock runs from then on, with the bank it had
    back = S + 2 * DAY_MS
    resumed = clocks.resumed(row, back)
    assert resumed == ClockValues(bank, 3 * DAY_MS, back, back + bank)
    # a clock that already runs is not resumed
    assert clocks.resumed(row.then(resumed), back + HOUR_MS) is None
    assert clocks.resumed(row, until) is None


def test_paused_keeps_a_later_start():
    """A clock that was to start after a leave anyway starts no sooner."""
    later = S + 10 * DAY_MS
    row = started(THREE_DAYS, leave_until=later)
    assert clocks.paused(row, S, S + DAY_MS) == ClockValues(
        3 * DAY_MS, 3 * DAY_MS, later, later + 3 * DAY_MS
    )


def test_extended_gives_the_running_side_time():
    row = started(TEN_MINUTES)
    now = S + MINUTE_MS
    assert clocks.extended(row, HOUR_MS, now) == ClockValues(
        10 * MINUTE_MS + HOUR_MS, 10 * MINUTE_MS, S, S + 10 * MINUTE_MS + HOUR_MS, now
    )
    row = row.then(next_ply=2)
    assert clocks.extended(row, DAY_MS, now) == ClockValues(
        10 * MINUTE_MS, 10 * MINUTE_MS + DAY_MS, S, S + 10 * MINUTE_MS + DAY_MS, now
    )


# -- clock warnings (AVISO_RELOJ) ------------------------------------------------------------


def test_a_short_turn_is_warned_once_at_a_tenth_of_its_bank():
    deadline = S + 10 * MINUTE_MS
    assert clocks.next_warning(S, deadline, S - 1) == deadline - MINUTE_MS
    assert clocks.next_warning(S, deadline, deadline - MINUTE_MS) is None


def test_a_turn_of_days_is_warned_a_day_before_and_at_a_tenth():
    deadline = S + 3 * DAY_MS
    tenth = deadline - 3 * DAY_MS // 10  # 7.2 hours before
    assert clocks.next_warning(S, deadline, S - 1) == deadline - DAY_MS
    assert clocks.next_warning(S, deadline, deadline - DAY_MS) == tenth
    assert clocks.next_warning(S, deadline, tenth) is None


def test_a_long_turn_gets_the_tenth_first():
    deadline = S + 50 * DAY_MS
    assert clocks.next_warning(S, deadline, S - 1) == deadline - 5 * DAY_MS
    assert clocks.next_warning(S, deadline, deadline - 5 * DAY_MS) == deadline - DAY_MS


def test_a_turn_of_exactly_a_day_gets_only_the_tenth():
    deadline = S + DAY_MS
    assert clocks.next_warning(S, deadline, S - 1) == deadline - DAY_MS // 10
    assert clocks.next_warning(S, deadline, deadline - DAY_MS // 10) is None


def test_new_clock_values_carry_their_first_warning():
    values = clocks.start(THREE_DAYS, S, None)
    assert values.warn_at_ms == S + 2 * DAY_MS
    assert values.columns()["warn_at_ms"] == S + 2 * DAY_MS
    assert ClockValues(0, 0, S, None).warn_at_ms is None


def test_an_extension_does_not_repeat_the_warnings_already_due():
    row = started(TEN_MINUTES)
    now = S + 9 * MINUTE_MS + 30 * SECOND_MS  # past the tenth: it was warned
    values = clocks.extended(row, MINUTE_MS, now)
    assert values.warn_at_ms == S + 9 * MINUTE_MS + 54 * SECOND_MS  # a tenth of 11 minutes
    values = clocks.extended(row, 10 * SECOND_MS, now)  # its tenth (S + 9:29) is past
    assert values.warn_at_ms is None
    values = clocks.extended(row, 10 * MINUTE_MS, now)
    assert values.warn_at_ms == S + 20 * MINUTE_MS - 2 * MINUTE_MS


def test_expired_at_the_deadline_not_a_millisecond_before():
    row = started(TEN_MINUTES)
    rules = ClockRules()
    deadline = S + 10 * MINUTE_MS
    assert not clocks.expired(row, deadline - 1, rules)
    assert clocks.expired(row, deadline, rules)
    assert clocks.expired(row, deadline + DAY_MS, rules)
    assert not clocks.expired(NO_CLOCK, deadline, rules)


def test_expired_waits_for_the_start_up_grace():
    row = started(TEN_MINUTES)
    grace = ClockRules(flag_after_ms=S + HOUR_MS)
    assert not clocks.expired(row, S + HOUR_MS - 1, grace)
    assert clocks.expired(row, S + HOUR_MS, grace)


# -- bounds ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "10s+0",
        "10s+365d",
        "365d+0",
        "365d+365d/365d",
        "1d+0/1d",
        "1h+1d/1d",
        *PRESETS,
    ],
)
def test_controls_within_the_bounds(text):
    ClockRules().check(parse_control(text))


def test_no_clock_is_within_the_bounds():
    ClockRules().check(None)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("9s+0", "the initial bank must be 10s to 365d"),
        ("0+1d", "the initial bank must be 10s to 365d"),
        ("366d+0", "the initial bank must be 10s to 365d"),
        ("1d+366d", "the increment and cap at most 365d"),
        ("1d+1d/366d", "the increment and cap at most 365d"),
        ("1h+0/30m", "the cap may not be below the initial bank or the increment"),
        ("1h+2h/90m", "the cap may not be below the initial bank or the increment"),
    ],
)
def test_controls_outside_the_bounds_are_802(text, says):
    control = parse_control(text)
    with pytest.raises(Failure) as raised:
        ClockRules().check(control)
    assert raised.value.kind is Refusal.INVALID
    assert raised.value.reason.startswith(f"time control {control_name(control)}: ")
    assert says in raised.value.reason


def test_the_servers_own_bounds():
    rules = ClockRules(min_bank_ms=MINUTE_MS, max_bank_ms=30 * DAY_MS)
    rules.check(parse_control("1m+0"))
    rules.check(parse_control("30d+30d/30d"))
    for text in ("59s+0", "31d+0", "1d+31d"):
        with pytest.raises(Failure) as raised:
            rules.check(parse_control(text))
        assert raised.value.kind is Refusal.INVALID
        assert "1m to 30d" in raised.value.reason


# -- ending on time -------------------------------------------------------------------------

OPENING_FEN = chess.STARTING_FEN


def out_of_time(next_ply: int, **changes: object) -> Row:
    return started(TEN_MINUTES).then(next_ply=next_ply, **changes)


@pytest.mark.parametrize(
    ("next_ply", "changes", "result"),
    [
        (1, {}, (WINNER_NONE, "aborted")),  # white never moved
        (2, {}, (WINNER_NONE, "aborted")),  # black never moved
        # white offered at once and let its own clock run out: white never moved
        (1, {"req_white": REQ_OFFER}, (WINNER_NONE, "aborted")),
        (3, {}, (WINNER_BLACK, "timeout")),
        (4, {}, (WINNER_WHITE, "timeout")),
        # black offered a draw at ply 2 and let its own clock run out: it never moved
        (2, {"req_black": REQ_OFFER}, (WINNER_NONE, "aborted")),
        # white offered on its turn at ply 3 and let its clock run out: black wins
        (3, {"req_white": REQ_OFFER}, (WINNER_BLACK, "timeout")),
    ],
)
def test_timeout_result_aborted_when_the_side_never_moved(next_ply, changes, result):
    assert clocks.timeout_result(out_of_time(next_ply, **changes), OPENING_FEN) == result


@pytest.mark.parametrize(
    ("fen", "result"),
    [
        # white out of time; black has a lone king: a draw
        ("4k3/8/8/8/8/8/8/R3K3 w - - 0 40", (WINNER_DRAW, "timeout")),
        # black has king and knight, white a lone king (or king and queen): a draw
        ("4kn2/8/8/8/8/8/8/4K3 w - - 0 40", (WINNER_DRAW, "timeout")),
        ("4kn2/8/8/8/8/8/8/3QK3 w - - 0 40", (WINNER_DRAW, "timeout")),
        # black has king and bishop: a draw
        ("4kb2/8/8/8/8/8/8/R3K3 w - - 0 40", (WINNER_DRAW, "timeout")),
        # king and knight can mate a king with a rook beside it (a helpmate): black wins
        ("4kn2/8/8/8/8/8/8/R3K3 w - - 0 40", (WINNER_BLACK, "timeout")),
        # a lone rook or pawn can mate: black wins
        ("4kr2/8/8/8/8/8/8/4K3 w - - 0 40", (WINNER_BLACK, "timeout")),
        ("4k3/8/8/8/8/8/p7/4K3 w - - 0 40", (WINNER_BLACK, "timeout")),
    ],
)
def test_timeout_result_draw_when_the_opponent_cannot_mate(fen, result):
    assert clocks.timeout_result(out_of_time(79), fen) == result


def test_timeout_result_black_out_of_time():
    lone_white_king = "4k3/8/8/8/8/8/8/4K3 b - - 0 40"
    assert clocks.timeout_result(out_of_time(80), lone_white_king) == (WINNER_DRAW, "timeout")
    white_knight = "r3k3/8/8/8/8/8/8/4KN2 b - - 0 40"
    assert clocks.timeout_result(out_of_time(80), white_knight) == (WINNER_WHITE, "timeout")
    white_rook = "4k3/8/8/8/8/8/8/R3K3 b - - 0 40"
    assert clocks.timeout_result(out_of_time(80), white_rook) == (WINNER_WHITE, "timeout")


# -- leave -------------------------------------------------------------------------------------


def test_leave_left_this_year_and_a_new_year():
    rules = ClockRules()
    assert rules.leave_allowance_ms() == 30 * DAY_MS
    assert clocks.leave_left_ms(2026, 2026, 5 * DAY_MS, rules) == 5 * DAY_MS
    assert clocks.leave_left_ms(2026, 2026, 0, rules) == 0
    assert clocks.leave_left_ms(2027, 2026, 0, rules) == 30 * DAY_MS  # a new year
    assert clocks.leave_left_ms(2026, None, None, rules) == 30 * DAY_MS  # never on leave
    assert clocks.leave_left_ms(2026, 2026, None, rules) == 30 * DAY_MS
    ten = ClockRules(leave_days=10)
    assert clocks.leave_left_ms(2027, 2026, 3 * DAY_MS, ten) == 10 * DAY_MS


def test_the_leave_year_is_the_utc_calendar_year():
    assert clocks.utc_year(S) == 2026
    new_year = 1_798_761_600_000  # 2027-01-01 00:00:00 UTC
    assert clocks.utc_year(new_year - 1) == 2026
    assert clocks.utc_year(new_year) == 2027


def test_control_columns_round_trip():
    for control in [*PRESETS.values(), TimeControl(HOUR_MS, 0, 2 * HOUR_MS), None]:
        columns = clocks.control_columns(control)
        assert set(columns) == {"tc_initial_ms", "tc_increment_ms", "tc_cap_ms"}
        assert clocks.control_from(*columns.values()) == control
