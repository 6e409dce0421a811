"""Clocks through the session (docs/protocol.md sections 4 and 5): time controls on JUEG,
TRAN:1, SOLI:1 and ACEP; RELJ; timed moves and deadlines (JGDA and the scheduler's pass,
``Timekeeping.flag_due``); draw offers leaving the clock alone; games aborted or drawn on
time; leave (LICE); the start-up grace; PGNX of a clocked game.

Both players' sessions share one ``FakeClock`` (``clock``): time passes only when a test
moves it, and every expected time below is worked out from ``START_MS`` by hand.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from sqlalchemy import text

from ajedrez.domain.clocks import ClockRules
from ajedrez.domain.timecontrol import PRESETS
from ajedrez.store.db import Database
from tests.session.conftest import Game
from tests.support.clock import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS, START_MS, FakeClock
from tests.support.common import PASSWORD
from tests.support.play import raw_move
from tests.support.session import Client, frame, make_session

S = START_MS
NEW_YEAR_2027 = 1_798_761_600_000  # 2027-01-01 00:00:00 UTC
LEAVE_DAYS = 30


@dataclass
class Clocked:
    """Sessions on the module's store, all timed by the test's ``clock``."""

    db: Database
    clock: FakeClock
    loop: asyncio.AbstractEventLoop
    user: Callable[..., str]

    def login(self, name: str, rules: ClockRules | None = None) -> Client:
        c = Client(make_session(self.db, clock=self.clock, clock_rules=rules), self.loop)
        assert c.raw(f"USER:{name}") == frame(101, name)
        assert c.raw(f"PASS:{PASSWORD}") == frame(102, name)
        return c

    def game(self, control: str | None, rules: ClockRules | None = None) -> Game:
        """A new game: black challenges with ``control`` (None: sends none), white accepts
        now, playing white (ACEP:B)."""
        white, black = self.user("w"), self.user("b")
        w, b = self.login(white, rules), self.login(black, rules)
        line = f"JUEG:{white}" if control is None else f"JUEG:{white}:{control}"
        assert b.raw(line) == frame(200)
        accepted = w.cmd(f"ACEP:B:{black}")
        assert accepted.code == 202, accepted
        return Game(accepted.text, white, black, w, b)

    def at(self, ms: int) -> None:
        """Move the clock to ``ms`` (never back)."""
        assert ms >= self.clock.now, (ms, self.clock.now)
        self.clock.now = ms

    def flag_due(self, client: Client) -> dict[str, str]:
        """The scheduler's pass at the clock's time: {game: end reason} of what it ended."""
        ended = client.session.games.time.flag_due()
        return {f"P{game_id:07d}": reason for game_id, reason in ended}

    def wins(self, name: str) -> int:
        with self.db.engine.connect() as c:
            found = c.execute(text("SELECT wins FROM users WHERE name = :n"), {"n": name})
            return int(found.scalar_one())


@pytest.fixture
def timed(session_db, clock, loop, user) -> Clocked:
    return Clocked(session_db, clock, loop, user)


def relj(client: Client, pid: str) -> str:
    r = client.cmd(f"RELJ:{pid}")
    assert r.code == 217, r
    return r.text


def clock_record(
    pid: str,
    now: int,
    control: str,
    white: int,
    black: int,
    waiting: str,
    deadline: int,
    white_leave: int = 0,
    black_leave: int = 0,
    end: str = "",
) -> bytes:
    """RELJ's exact reply."""
    fields = (pid, now, control, white, black, waiting, deadline, white_leave, black_leave, end)
    return frame(217, ":".join(map(str, fields)))


def stat(client: Client, pid: str) -> list[str]:
    r = client.cmd(f"STAT:{pid}")
    assert r.code == 206, r
    return r.text.split(":")


def status_and_winner(client: Client, pid: str) -> tuple[str, str]:
    fields = stat(client, pid)
    return fields[4], fields[5]


def move(client: Client, game: Game, ply: int, uci: str) -> bytes:
    return client.raw(raw_move(game.pid, ply, uci))


def lice(client: Client, line: str) -> bytes:
    return client.raw(f"LICE:{line}")


# -- time controls on challenges ----------------------------------------------------------


def test_jueg_with_a_control_shown_by_tran_1_and_soli_1(timed, user):
    target, a, c, d = user("t"), user("a"), user("c"), user("d")
    assert timed.login(a).raw(f"JUEG:{target}:3d") == frame(200)
    assert timed.login(c).raw(f"JUEG:{target}:50d+5d") == frame(200)  # written as the preset
    assert timed.login(d).raw(f"JUEG:{target}") == frame(200)  # the default: none
    me = timed.login(target)

    got = me.raw("TRAN:0:1")
    fecha = got[6:17].decode()
    assert re.fullmatch(r"[0-9]{11}", fecha)
    assert got == frame(200, f"{fecha},{a}:3d,{c}:iccf-10/50,{d}:none")
    got = me.raw("TRAN:0")
    assert got == frame(200, f"{got[6:17].decode()},{a},{c},{d}")  # as before clocks

    assert me.raw("SOLI:1") == frame(216, f"R:{a}:3d,R:{c}:iccf-10/50,R:{d}:none")
    assert me.raw("SOLI") == frame(216, f"R:{a},R:{c},R:{d}")  # as before clocks
    assert me.raw(f"JUEG:{user('e')}:2h+30s") == frame(200)
    assert me.cmd("SOLI:1").text.endswith(":2h+30s")
    assert timed.login(a).raw("SOLI:1") == frame(216, f"E:{target}:3d")
    assert timed.login(a).raw("SOLI") == frame(216, f"E:{target}")


def test_tran_and_soli_take_only_1(timed, user):
    me = timed.login(user())
    got = me.raw("TRAN:0:1")
    assert got == frame(201, got[6:].decode()) and re.fullmatch(rb"[0-9]{11}", got[6:])
    assert me.raw("SOLI:1") == frame(216)
    for line in ("TRAN:0:2", "TRAN:0:x", "SOLI:0", "SOLI:yes"):
        assert me.code(line) == 802, line
    assert me.code("TRAN:0:1:1") == 801
    assert me.code("SOLI:1:1") == 801


@pytest.mark.parametrize(
    ("control", "says"),
    [
        ("3x", "invalid time control '3x'"),
        ("3d+", "invalid time control '3d+'"),
        ("3d+3d/", "invalid time control '3d+3d/'"),
        ("1d+1d/1d/1d", "invalid time control '1d+1d/1d/1d'"),
        ("NONE", "invalid time control 'NONE'"),
        ("5s+0", "time control 5s+0: the initial bank must be 10s to 365d"),
        ("0+1d", "time control 0+1d: the initial bank must be 10s to 365d"),
        ("366d+0", "time control 366d+0: the initial bank must be 10s to 365d"),
        ("1d+366d", "time control 1d+366d: "),
        ("1h+0/30m", "time control 1h+0/30m: the cap may not be below the initial bank"),
    ],
)
def test_jueg_with_a_malformed_or_out_of_bounds_control_is_802(timed, user, control, says):
    me, other = timed.login(user()), user()
    r = me.cmd(f"JUEG:{other}:{control}")
    assert r.code == 802 and says in r.text, r
    assert me.raw("SOLI") == frame(216)  # nothing was stored
    assert not me.closed


def test_the_servers_default_control_and_none(timed, user):
    rules = ClockRules(default_control=PRESETS["3d"])
    a, b, c = user("a"), user("b"), user("c")
    me = timed.login(a, rules)
    assert me.raw(f"JUEG:{b}") == frame(200)
    assert me.raw(f"JUEG:{c}:none") == frame(200)
    assert me.raw("SOLI:1") == frame(216, f"E:{b}:3d,E:{c}:none")

    with_default = timed.login(b).cmd(f"ACEP:B:{a}")
    assert with_default.code == 202
    pid = with_default.text
    assert timed.login(b).raw(f"RELJ:{pid}") == clock_record(
        pid, S, "3d", 3 * DAY_MS, 3 * DAY_MS, "B", S + 3 * DAY_MS
    )
    without = timed.login(c).cmd(f"ACEP:B:{a}")
    assert without.code == 202
    assert me.raw(f"RELJ:{without.text}") == clock_record(without.text, S, "none", 0, 0, "-", 0)


def test_acep_with_the_wrong_control_is_843_and_the_challenge_stays_open(timed, user):
    a, b = user("a"), user("b")
    challenger, me = timed.login(a), timed.login(b)
    assert challenger.raw(f"JUEG:{b}:3d") == frame(200)
    r = me.cmd(f"ACEP:B:{a}:7d")
    assert r.code == 843 and "3d" in r.text and "7d" in r.text, r
    assert me.cmd(f"ACEP:B:{a}:none").code == 843
    assert me.cmd(f"ACEP:B:{a}:3d+3d").code == 843  # no cap: another control
    assert me.cmd(f"ACEP:B:{a}:3x").code == 802
    assert me.raw("SOLI:1") == frame(216, f"R:{a}:3d")  # still open
    accepted = me.cmd(f"ACEP:N:{a}:3d+3d/3d")  # the same three numbers as 3d
    assert accepted.code == 202
    assert me.raw("SOLI") == frame(216)
    assert stat(me, accepted.text)[8] == "N"


def test_acep_with_the_right_control(timed, user):
    a, b, c = user("a"), user("b"), user("c")
    assert timed.login(a).raw(f"JUEG:{b}:iccf-10/50") == frame(200)
    assert timed.login(c).raw(f"JUEG:{b}") == frame(200)
    me = timed.login(b)
    assert me.cmd(f"ACEP:B:{a}:50d+5d").code == 202
    assert me.cmd(f"ACEP:B:{c}:none").code == 202


# -- RELJ -----------------------------------------------------------------------------------


def test_relj_at_the_start_and_after_moves(timed):
    g = timed.game("3d")
    start = clock_record(g.pid, S, "3d", 3 * DAY_MS, 3 * DAY_MS, "B", S + 3 * DAY_MS)
    assert g.w.raw(f"RELJ:{g.pid}") == start
    assert g.b.raw(f"RELJ:{g.pid}") == start  # the same for both players

    timed.at(S + HOUR_MS)
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + HOUR_MS, "3d", 3 * DAY_MS - HOUR_MS, 3 * DAY_MS, "B", S + 3 * DAY_MS
    )
    assert move(g.w, g, 1, "e2e4") == frame(208)
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + HOUR_MS, "3d", 3 * DAY_MS, 3 * DAY_MS, "N", S + HOUR_MS + 3 * DAY_MS
    )
    timed.at(S + HOUR_MS + 2 * DAY_MS)
    assert g.w.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + HOUR_MS + 2 * DAY_MS, "3d", 3 * DAY_MS, DAY_MS, "N", S + HOUR_MS + 3 * DAY_MS
    )
    assert move(g.b, g, 2, "e7e5") == frame(208)
    now = S + HOUR_MS + 2 * DAY_MS
    assert g.w.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, now, "3d", 3 * DAY_MS, 3 * DAY_MS, "B", now + 3 * DAY_MS
    )


def test_relj_of_a_game_without_a_clock(timed):
    g = timed.game(None)
    assert g.w.raw(f"RELJ:{g.pid}") == clock_record(g.pid, S, "none", 0, 0, "-", 0)
    assert move(g.w, g, 1, "e2e4") == frame(208)
    timed.at(S + 400 * DAY_MS)  # no clock: nothing ever runs out
    assert timed.flag_due(g.w).get(g.pid) is None
    assert move(g.b, g, 2, "e7e5") == frame(208)
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(g.pid, timed.clock.now, "none", 0, 0, "-", 0)


def test_relj_and_lice_bad_fields(timed, user):
    me = timed.login(user())
    for line, code in [
        ("RELJ", 801),
        ("RELJ:P1", 802),
        ("RELJ:p0000001", 802),
        ("RELJ:P00000001", 802),
        ("RELJ:P0000001:1", 801),
        ("LICE", 801),
        ("LICE:X", 802),
        ("LICE:i", 802),
        ("LICE:", 802),  # an empty accion
        ("LICE:I:0", 802),
        ("LICE:I:367", 802),
        ("LICE:I:-1", 802),
        ("LICE:I:x", 802),
        ("LICE:I:1:2", 801),
        ("LICE:F:3", 802),
        ("LICE:E:3", 802),
    ]:
        r = me.cmd(line)
        assert r.code == code and r.text, (line, r)
    assert not me.closed
    assert me.raw("LICE:E") == frame(218, f"0:{LEAVE_DAYS * DAY_MS}")  # nothing changed


def test_relj_players_only(timed, user):
    g = timed.game("3d")
    stranger = timed.login(user())
    assert stranger.cmd(f"RELJ:{g.pid}").code == 831
    assert stranger.cmd("RELJ:P9999999").code == 830
    assert g.w.cmd("RELJ:P9999999").code == 830


# -- deadlines ------------------------------------------------------------------------------


def test_a_move_a_millisecond_before_the_deadline_is_played(timed):
    g = timed.game("10m")
    deadline = S + 10 * MINUTE_MS
    timed.at(deadline - 1)
    assert move(g.w, g, 1, "e2e4") == frame(208)
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, deadline - 1, "10m", 1, 10 * MINUTE_MS, "N", deadline - 1 + 10 * MINUTE_MS
    )


def test_a_move_at_the_deadline_is_833_and_the_game_is_over(timed):
    g = timed.game("10m")
    assert move(g.w, g, 1, "e2e4") == frame(208)
    timed.at(S + MINUTE_MS)
    assert move(g.b, g, 2, "e7e5") == frame(208)
    deadline = S + MINUTE_MS + 10 * MINUTE_MS  # white's, whose bank is 10 minutes
    timed.at(deadline)
    r = g.w.cmd(raw_move(g.pid, 3, "g1f3"))
    assert r.code == 833 and r.text == f"your time ran out: {g.pid} is finished (timeout)", r
    assert status_and_winner(g.b, g.pid) == ("2", "2")  # finished, black won
    assert stat(g.w, g.pid)[9] == "3"  # the late move was not stored
    assert g.w.cmd(f"SPAR:{g.pid}:2").code == 839
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, deadline, "10m", 0, 9 * MINUTE_MS, "-", 0, end="timeout"
    )
    assert (timed.wins(g.white), timed.wins(g.black)) == (0, 1)
    # the game is over for every command, and the scheduler finds nothing to end
    r = g.b.cmd(f"TBLS:{g.pid}:{g.white}")
    assert r.code == 833 and r.text == f"{g.pid} is finished (timeout)", r
    assert g.pid not in timed.flag_due(g.w)
    timed.at(deadline + DAY_MS)
    assert g.pid not in timed.flag_due(g.w)
    assert (timed.wins(g.white), timed.wins(g.black)) == (0, 1)


def test_other_commands_at_the_deadline_end_the_game(timed):
    """A draw offer by the side not to move, at the deadline of the side to move: 833,
    "your opponent's time ran out", and the game ends in that same instant."""
    g = timed.game("30s-move")
    assert move(g.w, g, 1, "e2e4") == frame(208)
    assert move(g.b, g, 2, "e7e5") == frame(208)
    timed.at(S + 30 * SECOND_MS)
    r = g.b.cmd(f"TBLS:{g.pid}:{g.white}")
    assert r.code == 833, r
    assert r.text == f"your opponent's time ran out: {g.pid} is finished (timeout)"
    assert status_and_winner(g.w, g.pid) == ("2", "2")
    assert g.pid not in timed.flag_due(g.w)  # already ended, once
    assert (timed.wins(g.white), timed.wins(g.black)) == (0, 1)


def test_the_scheduler_ends_a_game_exactly_at_its_deadline_once(timed):
    g = timed.game("10m")
    assert move(g.w, g, 1, "e2e4") == frame(208)
    timed.at(S + SECOND_MS)
    assert move(g.b, g, 2, "e7e5") == frame(208)
    deadline = S + SECOND_MS + 10 * MINUTE_MS
    timed.at(deadline - 1)
    assert g.pid not in timed.flag_due(g.w)
    assert status_and_winner(g.w, g.pid) == ("0", "0")
    timed.at(deadline)
    assert timed.flag_due(g.w).get(g.pid) == "timeout"
    assert status_and_winner(g.w, g.pid) == ("2", "2")
    assert g.w.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, deadline, "10m", 0, 10 * MINUTE_MS - SECOND_MS, "-", 0, end="timeout"
    )
    assert g.pid not in timed.flag_due(g.w)
    assert (timed.wins(g.white), timed.wins(g.black)) == (0, 1)
    r = g.w.cmd(raw_move(g.pid, 3, "g1f3"))
    assert r.code == 833 and r.text == f"{g.pid} is finished (timeout)"


def test_resignation_or_claim_at_the_deadline_is_833(timed):
    for line in ("REND:{pid}:{other}", "FINP:{pid}:{other}", "RTBL:{pid}:N:{other}"):
        g = timed.game("30s-move")
        assert move(g.w, g, 1, "e2e4") == frame(208)
        assert move(g.b, g, 2, "e7e5") == frame(208)
        timed.at(timed.clock.now + 30 * SECOND_MS)  # white's deadline
        r = g.w.cmd(line.format(pid=g.pid, other=g.black))
        assert r.code == 833, (line, r)
        assert r.text == f"your time ran out: {g.pid} is finished (timeout)"
        assert status_and_winner(g.b, g.pid) == ("2", "2")  # on time: black won
        assert stat(g.b, g.pid)[6:8] == ["0", "0"]  # no resignation, no answer recorded


def test_a_resend_at_the_deadline_is_208_and_a_stranger_learns_nothing(timed, user):
    g = timed.game("10m")
    assert move(g.w, g, 1, "e2e4") == frame(208)
    timed.at(S + 10 * MINUTE_MS)  # black's deadline
    assert move(g.w, g, 1, "e2e4") == frame(208)  # the exact resend of the move stored
    stranger = timed.login(user())
    assert stranger.cmd(raw_move(g.pid, 2, "e7e5")).code == 831
    assert stranger.cmd(f"TBLS:{g.pid}:{g.white}").code == 831
    assert status_and_winner(g.w, g.pid) == ("0", "0")  # neither ended the game
    assert timed.flag_due(g.w).get(g.pid) == "aborted"


def test_ppen_shows_a_game_ended_on_time(timed):
    g = timed.game("1d")
    got = g.w.cmd("PPEN:0")
    fecha, *records = got.text.split(",")
    assert records == [f"{g.pid}:{g.black}:N:0"]
    timed.at(S + DAY_MS)
    assert timed.flag_due(g.w).get(g.pid) == "aborted"
    got = g.w.cmd(f"PPEN:{fecha}")
    assert got.code == 203 and got.text.split(",")[1:] == [f"{g.pid}:{g.black}:N:2"]
    assert stat(g.b, g.pid)[4:6] == ["2", "0"]


@pytest.mark.parametrize(
    ("control", "steps"),
    [
        # (time the mover takes, the mover's bank after the move); white moves first
        (
            "30s-move",
            [
                (10 * SECOND_MS, 30 * SECOND_MS),
                (30 * SECOND_MS - 1, 30 * SECOND_MS),
                (SECOND_MS, 30 * SECOND_MS),
                (0, 30 * SECOND_MS),
            ],
        ),
        (
            "3d",
            [
                (2 * DAY_MS, 3 * DAY_MS),
                (HOUR_MS, 3 * DAY_MS),
                (3 * DAY_MS - 1, 3 * DAY_MS),
            ],
        ),
        (
            "10s+30s",  # increment only, no cap: the bank grows
            [
                (5 * SECOND_MS, 35 * SECOND_MS),
                (9 * SECOND_MS, 31 * SECOND_MS),
                (20 * SECOND_MS, 45 * SECOND_MS),
                (31 * SECOND_MS - 1, 30_001),
                (0, 75 * SECOND_MS),
            ],
        ),
        (
            "iccf-10/50",
            [
                (10 * DAY_MS, 45 * DAY_MS),
                (DAY_MS, 54 * DAY_MS),
                (45 * DAY_MS - 1, 5 * DAY_MS + 1),
            ],
        ),
        ("1h+10m/70m", [(MINUTE_MS, 69 * MINUTE_MS), (0, 70 * MINUTE_MS), (0, 70 * MINUTE_MS)]),
        ("10m", [(90 * SECOND_MS, 510 * SECOND_MS), (MINUTE_MS, 9 * MINUTE_MS)]),
    ],
)
def test_increments_and_caps_over_several_moves(timed, control, steps):
    line = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4"]
    g = timed.game(control)
    start = relj(g.w, g.pid).split(":")
    name, initial = start[2], int(start[3])
    banks = {"B": initial, "N": initial}
    for ply, (used, after) in enumerate(steps, start=1):
        mover, side, other = (g.w, "B", "N") if ply % 2 else (g.b, "N", "B")
        timed.at(timed.clock.now + used)
        assert move(mover, g, ply, line[ply - 1]) == frame(208), (ply, used)
        banks[side] = after
        now = timed.clock.now
        assert g.w.raw(f"RELJ:{g.pid}") == clock_record(
            g.pid, now, name, banks["B"], banks["N"], other, now + banks[other]
        ), (ply, used)


def test_a_draw_offer_changes_neither_the_running_clock_nor_who_may_move(timed):
    g = timed.game("10m")
    timed.at(S + MINUTE_MS)
    running = clock_record(
        g.pid, S + MINUTE_MS, "10m", 9 * MINUTE_MS, 10 * MINUTE_MS, "B", S + 10 * MINUTE_MS
    )
    # white, to move, offers: white's clock runs on, and white may still move
    assert g.w.raw(f"TBLS:{g.pid}:{g.black}") == frame(209)
    assert g.b.raw(f"RELJ:{g.pid}") == running
    timed.at(S + 3 * MINUTE_MS)
    assert move(g.w, g, 1, "e2e4") == frame(208)  # the maker's move: the offer stands
    assert stat(g.b, g.pid)[6:8] == ["1", "0"]
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + 3 * MINUTE_MS, "10m", 7 * MINUTE_MS, 10 * MINUTE_MS, "N", S + 13 * MINUTE_MS
    )
    # black, to move, answers by moving: the move declines the offer
    timed.at(S + 4 * MINUTE_MS)
    assert move(g.b, g, 2, "e7e5") == frame(208)
    assert stat(g.w, g.pid)[6:8] == ["0", "0"]
    assert g.w.cmd(f"RTBL:{g.pid}:S:{g.black}").code == 841  # nothing left to accept
    # black, not to move, offers: white's clock runs on; white declines: nothing changes
    still = clock_record(
        g.pid, S + 4 * MINUTE_MS, "10m", 7 * MINUTE_MS, 9 * MINUTE_MS, "B", S + 11 * MINUTE_MS
    )
    assert g.b.raw(f"TBLS:{g.pid}:{g.white}") == frame(209)
    assert g.w.raw(f"RELJ:{g.pid}") == still
    assert g.w.raw(f"RTBL:{g.pid}:N:{g.black}") == frame(210)
    assert g.w.raw(f"RELJ:{g.pid}") == still


def test_a_declined_offer_is_not_renewed_before_its_maker_moves(timed):
    g = timed.game("10m")
    assert g.w.raw(f"TBLS:{g.pid}:{g.black}") == frame(209)
    assert g.b.raw(f"RTBL:{g.pid}:N:{g.white}") == frame(210)
    again = g.w.cmd(f"TBLS:{g.pid}:{g.black}")
    assert again.code == 840
    assert "after your next move" in again.text, again
    assert move(g.w, g, 1, "e2e4") == frame(208)
    # black offers on white's move, then moves: a new offer only after that move
    assert g.b.raw(f"TBLS:{g.pid}:{g.white}") == frame(209)
    assert g.w.raw(f"RTBL:{g.pid}:N:{g.black}") == frame(210)
    assert g.b.cmd(f"TBLS:{g.pid}:{g.white}").code == 840
    assert move(g.b, g, 2, "e7e5") == frame(208)
    assert g.b.raw(f"TBLS:{g.pid}:{g.white}") == frame(209)
    # white, whose last offer came before its last move, may offer again too
    assert g.w.cmd(f"RTBL:{g.pid}:N:{g.black}").code == 210
    assert g.w.raw(f"TBLS:{g.pid}:{g.black}") == frame(209)


def test_an_offer_opens_no_way_round_the_last_hour_rule_of_leave(timed):
    g = timed.game("1d")
    timed.at(S + DAY_MS - 30 * MINUTE_MS)  # white, to move, has 30 minutes left
    assert g.w.cmd("LICE:I").code == 844
    assert g.w.raw(f"TBLS:{g.pid}:{g.black}") == frame(209)
    assert g.w.cmd("LICE:I").code == 844
    assert g.b.raw(f"TBLS:{g.pid}:{g.white}").startswith(b"840")  # one offer pending
    assert g.w.raw(f"RTBL:{g.pid}:N:{g.black}").startswith(b"841")
    assert g.w.cmd("LICE:I").code == 844


def test_an_offer_accepted_stops_the_clocks(timed):
    g = timed.game("10m")
    timed.at(S + MINUTE_MS)
    assert g.w.raw(f"TBLS:{g.pid}:{g.black}") == frame(209)
    assert g.b.raw(f"RTBL:{g.pid}:S:{g.white}") == frame(210)
    fields = relj(g.w, g.pid).split(":")
    assert fields[5:7] == ["-", "0"] and fields[9] == "agreement"
    assert status_and_winner(g.w, g.pid) == ("2", "3")
    timed.at(S + DAY_MS)
    assert g.pid not in timed.flag_due(g.w)


def test_ignoring_an_offer_runs_no_clock_but_the_side_to_moves(timed):
    """Nobody wins on time by ignoring an offer: the side to move's clock runs."""
    g = timed.game("10m")
    assert move(g.w, g, 1, "e2e4") == frame(208)
    timed.at(S + SECOND_MS)
    assert move(g.b, g, 2, "e7e5") == frame(208)
    timed.at(S + 2 * SECOND_MS)
    assert g.w.raw(f"TBLS:{g.pid}:{g.black}") == frame(209)  # on white's own turn
    deadline = S + SECOND_MS + 10 * MINUTE_MS  # white's bank: 10:00 from black's move
    timed.at(deadline - 1)
    assert g.pid not in timed.flag_due(g.w)
    timed.at(deadline)
    assert timed.flag_due(g.w).get(g.pid) == "timeout"
    assert status_and_winner(g.w, g.pid) == ("2", "2")  # black won: white ignored its turn


# -- aborted and drawn on time --------------------------------------------------------------


def test_white_never_moved_the_game_is_aborted(timed):
    g = timed.game("3d")
    timed.at(S + 3 * DAY_MS)
    assert timed.flag_due(g.w).get(g.pid) == "aborted"
    assert status_and_winner(g.b, g.pid) == ("2", "0")
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + 3 * DAY_MS, "3d", 0, 3 * DAY_MS, "-", 0, end="aborted"
    )
    assert (timed.wins(g.white), timed.wins(g.black)) == (0, 0)  # nobody credited
    ranking = g.w.cmd("SRNK")
    assert ranking.code == 205
    shown = dict(entry.split(":") for entry in ranking.text.split(","))
    assert shown.get(g.white, "0") == shown.get(g.black, "0") == "0"
    r = g.w.cmd(raw_move(g.pid, 1, "e2e4"))
    assert r.code == 833 and r.text == f"{g.pid} is finished (aborted)"


def test_black_never_moved_the_game_is_aborted_by_its_own_late_move(timed):
    g = timed.game("1d")
    timed.at(S + HOUR_MS)
    assert move(g.w, g, 1, "e2e4") == frame(208)
    timed.at(S + HOUR_MS + DAY_MS)
    r = g.b.cmd(raw_move(g.pid, 2, "e7e5"))
    assert r.code == 833 and r.text == f"your time ran out: {g.pid} is finished (aborted)"
    assert status_and_winner(g.w, g.pid) == ("2", "0")
    assert relj(g.w, g.pid).endswith(":-:0:0:0:aborted")
    assert (timed.wins(g.white), timed.wins(g.black)) == (0, 0)


def _set_position(db: Database, pid: str, fen: str) -> None:
    """Put ``fen`` on the game's board (only its stored position: a test of how a game
    ends on time in it, where reaching it by moves would take a whole game)."""
    with db.engine.begin() as c:
        c.execute(text("UPDATE games SET fen = :f WHERE id = :g"), {"f": fen, "g": int(pid[1:])})


LONE_BLACK_KING = "4k3/8/8/8/8/8/8/R3K3 w - - 0 2"
BLACK_KNIGHT = "4kn2/8/8/8/8/8/8/4K3 w - - 0 2"
BLACK_ROOK = "4kr2/8/8/8/8/8/8/4K3 w - - 0 2"


def _two_moves_played(timed: Clocked) -> Game:
    g = timed.game("10m")
    assert move(g.w, g, 1, "e2e4") == frame(208)
    assert move(g.b, g, 2, "e7e5") == frame(208)
    return g


@pytest.mark.parametrize(
    ("fen", "winner"), [(LONE_BLACK_KING, "3"), (BLACK_KNIGHT, "3"), (BLACK_ROOK, "2")]
)
def test_insufficient_material_draw_on_time_by_the_scheduler(timed, fen, winner):
    g = _two_moves_played(timed)
    _set_position(timed.db, g.pid, fen)
    timed.at(S + 10 * MINUTE_MS)
    assert timed.flag_due(g.w).get(g.pid) == "timeout"
    assert status_and_winner(g.w, g.pid) == ("2", winner)
    assert relj(g.b, g.pid).endswith(":-:0:0:0:timeout")
    credited = 1 if winner == "2" else 0
    assert (timed.wins(g.white), timed.wins(g.black)) == (0, credited)


def test_insufficient_material_draw_on_time_by_a_late_move(timed):
    g = _two_moves_played(timed)
    _set_position(timed.db, g.pid, LONE_BLACK_KING)
    timed.at(S + 10 * MINUTE_MS)
    r = g.w.cmd(raw_move(g.pid, 3, "a1a8"))
    assert r.code == 833 and r.text == f"your time ran out: {g.pid} is finished (timeout)"
    assert status_and_winner(g.b, g.pid) == ("2", "3")
    assert (timed.wins(g.white), timed.wins(g.black)) == (0, 0)


# -- leave ----------------------------------------------------------------------------------


def test_leave_pauses_a_correspondence_clock_and_ends_early_giving_days_back(timed):
    g = timed.game("3d")
    timed.at(S + HOUR_MS)
    until = S + HOUR_MS + 5 * DAY_MS
    assert lice(g.w, "I:5") == frame(218, f"{until}:{25 * DAY_MS}")
    bank = 3 * DAY_MS - HOUR_MS  # white's clock ran an hour before the leave
    paused = clock_record(g.pid, S + HOUR_MS, "3d", bank, 3 * DAY_MS, "B", until + bank, until)
    assert g.b.raw(f"RELJ:{g.pid}") == paused  # the opponent sees the leave
    assert lice(g.w, "E") == frame(218, f"{until}:{25 * DAY_MS}")
    assert lice(g.b, "E") == frame(218, f"0:{LEAVE_DAYS * DAY_MS}")

    timed.at(S + HOUR_MS + 2 * DAY_MS)  # the clock does not run meanwhile
    assert g.w.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + HOUR_MS + 2 * DAY_MS, "3d", bank, 3 * DAY_MS, "B", until + bank, until
    )
    assert timed.flag_due(g.w).get(g.pid) is None
    # back three days early: they are given back, and the clock runs from now
    back = S + HOUR_MS + 2 * DAY_MS
    assert lice(g.w, "F") == frame(218, f"0:{28 * DAY_MS}")
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, back, "3d", bank, 3 * DAY_MS, "B", back + bank
    )
    timed.at(back + HOUR_MS)
    assert relj(g.b, g.pid).split(":")[3] == str(bank - HOUR_MS)
    assert lice(g.w, "F")[:3] == b"844"  # not on leave any more
    assert move(g.w, g, 1, "e2e4") == frame(208)


def test_leave_ends_by_itself(timed):
    g = timed.game("3d")
    timed.at(S + HOUR_MS)
    until = S + HOUR_MS + 2 * DAY_MS
    assert lice(g.w, "I:2") == frame(218, f"{until}:{28 * DAY_MS}")
    bank = 3 * DAY_MS - HOUR_MS
    timed.at(until + HOUR_MS)  # an hour after the leave: the clock has run an hour again
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, until + HOUR_MS, "3d", bank - HOUR_MS, 3 * DAY_MS, "B", until + bank
    )
    assert lice(g.w, "E") == frame(218, f"0:{28 * DAY_MS}")
    timed.at(until + bank - 1)
    assert timed.flag_due(g.w).get(g.pid) is None
    timed.at(until + bank)
    assert timed.flag_due(g.w).get(g.pid) == "aborted"  # white never moved


def test_a_clock_started_by_the_opponents_move_waits_for_the_leave(timed):
    g = timed.game("3d")
    until = S + 2 * DAY_MS
    assert lice(g.b, "I:2") == frame(218, f"{until}:{28 * DAY_MS}")
    # white's clock runs as before: black's leave does not touch it
    assert g.w.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S, "3d", 3 * DAY_MS, 3 * DAY_MS, "B", S + 3 * DAY_MS, 0, until
    )
    timed.at(S + HOUR_MS)
    assert move(g.w, g, 1, "e2e4") == frame(208)
    assert g.w.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + HOUR_MS, "3d", 3 * DAY_MS, 3 * DAY_MS, "N", until + 3 * DAY_MS, 0, until
    )
    timed.at(S + DAY_MS)
    assert relj(g.w, g.pid).split(":")[4] == str(3 * DAY_MS)  # not running yet
    timed.at(until + DAY_MS)
    assert relj(g.w, g.pid).split(":")[4] == str(2 * DAY_MS)


def test_a_game_accepted_during_whites_leave_starts_after_it(timed, user):
    white, black = user("w"), user("b")
    w, b = timed.login(white), timed.login(black)
    until = S + DAY_MS
    assert lice(w, "I:1") == frame(218, f"{until}:{29 * DAY_MS}")
    assert b.raw(f"JUEG:{white}:7d") == frame(200)
    pid = w.cmd(f"ACEP:B:{black}").text
    assert b.raw(f"RELJ:{pid}") == clock_record(
        pid, S, "7d", 7 * DAY_MS, 7 * DAY_MS, "B", until + 7 * DAY_MS, until
    )


def test_leave_refused_within_the_last_hour_of_a_running_deadline(timed):
    ok, late = timed.game("3d"), timed.game("3d")
    timed.at(S + 3 * DAY_MS - HOUR_MS)  # an hour left on both white clocks
    assert lice(ok.w, "I:1") == frame(218, f"{timed.clock.now + DAY_MS}:{29 * DAY_MS}")
    timed.at(S + 3 * DAY_MS - HOUR_MS + 1)
    r = late.w.cmd("LICE:I:1")
    assert r.code == 844 and late.pid in r.text, r
    assert lice(late.w, "E") == frame(218, f"0:{LEAVE_DAYS * DAY_MS}")  # nothing booked
    fields = relj(late.b, late.pid).split(":")
    assert fields[5:9] == ["B", str(S + 3 * DAY_MS), "0", "0"]
    # the opponent, whose clock does not run, may go on leave
    assert lice(late.b, "I:1")[:3] == b"218"


def test_leave_refused_when_on_leave_already_or_none_left(timed, user):
    me = timed.login(user())
    assert lice(me, "I") == frame(218, f"{S + 30 * DAY_MS}:0")  # all the days left
    r = me.cmd("LICE:I:1")
    assert r.code == 844 and "on leave already" in r.text, r
    timed.at(S + 30 * DAY_MS)  # 2026-12-23: the leave is over, and none is left
    assert lice(me, "E") == frame(218, "0:0")
    r = me.cmd("LICE:I")
    assert r.code == 844 and "no leave left in 2026" in r.text, r
    r = me.cmd("LICE:F")
    assert r.code == 844 and "not on leave" in r.text, r
    timed.at(NEW_YEAR_2027)  # a new year, a new allowance
    assert lice(me, "E") == frame(218, f"0:{LEAVE_DAYS * DAY_MS}")
    assert lice(me, "I:3") == frame(218, f"{NEW_YEAR_2027 + 3 * DAY_MS}:{27 * DAY_MS}")


def test_leave_is_never_longer_than_the_days_left(timed, user):
    me = timed.login(user())
    assert lice(me, "I:10") == frame(218, f"{S + 10 * DAY_MS}:{20 * DAY_MS}")
    assert lice(me, "F") == frame(218, f"0:{30 * DAY_MS}")  # at once: all given back
    assert lice(me, "I:366") == frame(218, f"{S + 30 * DAY_MS}:0")


def test_leave_across_the_new_year_counts_against_the_year_it_started(timed, user):
    me = timed.login(user())
    start = NEW_YEAR_2027 - 12 * DAY_MS  # 2026-12-20
    timed.at(start)
    until = start + 20 * DAY_MS
    assert lice(me, "I:20") == frame(218, f"{until}:{10 * DAY_MS}")
    timed.at(NEW_YEAR_2027 + DAY_MS)
    assert lice(me, "E") == frame(218, f"{until}:{LEAVE_DAYS * DAY_MS}")
    assert lice(me, "F") == frame(218, f"0:{LEAVE_DAYS * DAY_MS}")


def test_leave_configured_days(timed, user):
    me = timed.login(user(), ClockRules(leave_days=5))
    assert lice(me, "E") == frame(218, f"0:{5 * DAY_MS}")
    assert lice(me, "I") == frame(218, f"{S + 5 * DAY_MS}:0")


def test_a_live_game_is_not_paused_by_leave(timed):
    g = timed.game("10m")
    timed.at(S + MINUTE_MS)
    until = S + MINUTE_MS + DAY_MS
    # 9 minutes left on white's clock: no bar to leave in a live game
    assert lice(g.w, "I:1") == frame(218, f"{until}:{29 * DAY_MS}")
    deadline = S + 10 * MINUTE_MS
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + MINUTE_MS, "10m", 9 * MINUTE_MS, 10 * MINUTE_MS, "B", deadline, until
    )
    timed.at(S + 2 * MINUTE_MS)
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + 2 * MINUTE_MS, "10m", 8 * MINUTE_MS, 10 * MINUTE_MS, "B", deadline, until
    )
    timed.at(deadline)
    assert timed.flag_due(g.w).get(g.pid) == "aborted"


# -- the start-up grace ---------------------------------------------------------------------


def test_nothing_is_flagged_during_the_start_up_grace(timed):
    grace = S + HOUR_MS
    rules = ClockRules(flag_after_ms=grace)
    g = timed.game("30s-move", rules)
    timed.at(S + 10 * SECOND_MS)
    assert move(g.w, g, 1, "e2e4") == frame(208)
    timed.at(S + 10 * MINUTE_MS)  # black's deadline (S + 40 s) is long past
    assert g.pid not in timed.flag_due(g.w)
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid, S + 10 * MINUTE_MS, "30s-move", 30 * SECOND_MS, 0, "N", S + 40 * SECOND_MS
    )
    # a late move is played, and counts as using the whole bank
    assert move(g.b, g, 2, "e7e5") == frame(208)
    assert g.b.raw(f"RELJ:{g.pid}") == clock_record(
        g.pid,
        S + 10 * MINUTE_MS,
        "30s-move",
        30 * SECOND_MS,
        30 * SECOND_MS,
        "B",
        S + 10 * MINUTE_MS + 30 * SECOND_MS,
    )
    timed.at(grace - 1)  # white's deadline has passed too
    assert g.pid not in timed.flag_due(g.w)
    assert g.b.raw(f"TBLS:{g.pid}:{g.white}") == frame(209)
    assert g.w.raw(f"RTBL:{g.pid}:N:{g.black}") == frame(210)
    timed.at(grace)
    assert timed.flag_due(g.w).get(g.pid) == "timeout"
    assert status_and_winner(g.w, g.pid) == ("2", "2")
    assert g.pid not in timed.flag_due(g.w)


def test_a_late_move_at_the_end_of_the_grace_is_833(timed):
    grace = S + HOUR_MS
    g = timed.game("10m", ClockRules(flag_after_ms=grace))
    assert move(g.w, g, 1, "e2e4") == frame(208)
    timed.at(grace)
    r = g.b.cmd(raw_move(g.pid, 2, "e7e5"))
    assert r.code == 833 and r.text == f"your time ran out: {g.pid} is finished (aborted)"


# -- PGNX -----------------------------------------------------------------------------------


def pgn(client: Client, pid: str) -> str:
    parts = client.all(f"PGNX:{pid}")
    assert {p.code for p in parts} == {214}
    return "\n".join(p.text for p in parts)


def test_pgnx_of_a_clocked_game_ended_on_time(timed):
    g = timed.game("iccf-10/50")
    timed.at(S + 10 * DAY_MS)
    assert move(g.w, g, 1, "e2e4") == frame(208)  # 45 days left: 1080 hours
    timed.at(S + 11 * DAY_MS)
    assert move(g.b, g, 2, "e7e5") == frame(208)  # 54 days left
    timed.at(S + 11 * DAY_MS + 45 * DAY_MS)
    assert timed.flag_due(g.w).get(g.pid) == "timeout"
    text_ = pgn(g.b, g.pid)
    assert '[TimeControl "4320000+432000"]' in text_.split("\n")
    assert '[Termination "time forfeit"]' in text_.split("\n")
    assert '[Result "0-1"]' in text_.split("\n")
    assert "1. e4 { [%clk 1080:00:00] } 1... e5 { [%clk 1296:00:00] timeout } 0-1" in text_


def test_pgnx_of_an_aborted_game(timed):
    g = timed.game("1d")
    timed.at(S + DAY_MS)
    assert timed.flag_due(g.w).get(g.pid) == "aborted"
    lines = pgn(g.w, g.pid).split("\n")
    assert '[TimeControl "1/86400"]' in lines
    assert '[Termination "unterminated"]' in lines
    assert '[Result "*"]' in lines


def test_pgnx_of_a_game_drawn_on_time(timed):
    g = _two_moves_played(timed)
    _set_position(timed.db, g.pid, LONE_BLACK_KING)
    timed.at(S + 10 * MINUTE_MS)
    assert timed.flag_due(g.w).get(g.pid) == "timeout"
    lines = pgn(g.w, g.pid).split("\n")
    assert '[Termination "time forfeit"]' in lines
    assert '[Result "1/2-1/2"]' in lines


def test_pgnx_without_a_clock_has_no_time_control(timed):
    g = timed.game(None)
    assert move(g.w, g, 1, "e2e4") == frame(208)
    assert g.b.raw(f"REND:{g.pid}:{g.white}") == frame(211)
    text_ = pgn(g.w, g.pid)
    assert "TimeControl" not in text_ and "%clk" not in text_
    assert '[Termination "normal"]' in text_.split("\n")
    assert "1. e4 { resignation } 1-0" in text_


def test_pgnx_clock_comments_are_h_mm_ss(timed):
    """docs/protocol.md (PGNX): each move is followed by ``{[%clk H:MM:SS]}``, also when
    the bank is not a whole number of seconds, as in any live game without a cap."""
    g = timed.game("10m")
    timed.at(S + 12_345)
    assert move(g.w, g, 1, "e2e4") == frame(208)  # 587.655 s left
    timed.at(S + 12_345 + 1)
    assert move(g.b, g, 2, "e7e5") == frame(208)  # 599.999 s left
    found = re.findall(r"\[%clk ([^\]]*)\]", pgn(g.w, g.pid))
    assert len(found) == 2
    for shown in found:
        assert re.fullmatch(r"[0-9]+:[0-5][0-9]:[0-5][0-9]", shown), found
