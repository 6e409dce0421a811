"""The clock as the client shows it, with no server and no clock of its own: the
countdown from a stored RELJ record at a moment the test chooses, its wording, the cache
that keeps it (and a file an older client wrote), and what the library puts on the wire
for the commands of time controls and leave (against a fake server)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import chess
import pytest

from ajedrez.client import LeaveRefused, ProtocolFailure, TimeControlChanged
from ajedrez.client.cache import SCHEMA_VERSION, Cache
from ajedrez.client.chessboard import ending, how_it_ended
from ajedrez.client.clocks import (
    Players,
    StoredClock,
    clock_at,
    clock_cell,
    clock_lines,
    control_text,
    days_hours,
    describe_control,
    running_sentence,
    span,
    when,
)
from ajedrez.client.sync import learn_clock, open_challenges
from ajedrez.domain.timecontrol import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS
from ajedrez.espol.records import (
    BLACK,
    WHITE,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_NONE,
    Challenger,
    ClockStatus,
    GameStatus,
    OpenChallenge,
    encode_clocks,
)
from tests.client.test_protocol import FakeServer, reply

AHORA = 1_795_000_000_000  # the server's time of the RELJ answer
ANA_WHITE = Players(WHITE, "ana", "bob")  # ana's view: she plays white against bob
BOB_BLACK = Players(BLACK, "ana", "bob")


def relj(
    *,
    white: int = 3 * DAY_MS,
    black: int = 3 * DAY_MS,
    waiting: str = WHITE,
    deadline: int | None = None,
    leave_white: int = 0,
    leave_black: int = 0,
    control: str = "3d",
    fin: str = "",
) -> ClockStatus:
    if deadline is None:
        running = white if waiting == WHITE else black
        deadline = 0 if waiting == "-" else AHORA + running
    return ClockStatus(
        "P0000007",
        AHORA,
        control,
        white,
        black,
        waiting,
        deadline,
        leave_white,
        leave_black,
        fin,
    )


# -- the countdown ---------------------------------------------------------------------------


def test_the_running_clock_counts_down_from_the_answer_and_stops_at_zero():
    status = relj(white=2 * DAY_MS + 5 * HOUR_MS, black=DAY_MS)
    asked = AHORA  # the local clock agreed with the server's when sync asked
    at_answer = clock_at(status, AHORA - asked, asked)
    assert (at_answer.white_ms, at_answer.black_ms) == (2 * DAY_MS + 5 * HOUR_MS, DAY_MS)

    later = clock_at(status, 0, AHORA + HOUR_MS)
    assert later.white_ms == 2 * DAY_MS + 4 * HOUR_MS
    assert later.black_ms == DAY_MS  # the side that waits keeps its bank
    assert running_sentence(later, ANA_WHITE) == "you have 2 d 4 h to move"
    assert running_sentence(later, BOB_BLACK) == "ana has 2 d 4 h to move"

    gone = clock_at(status, 0, AHORA + 3 * DAY_MS)
    assert gone.white_ms == 0 and gone.time_up
    assert running_sentence(gone, ANA_WHITE) == "your time is up; the server will end the game"
    assert running_sentence(gone, BOB_BLACK) == "ana's time is up; the server will end the game"


def test_a_wrong_local_clock_changes_nothing_but_the_time_elapsed_on_it():
    status = relj(waiting=BLACK, black=5 * HOUR_MS + 3 * MINUTE_MS + 30 * SECOND_MS)
    for skew in (-7 * DAY_MS, 0, 400 * DAY_MS):  # the local clock is that far off
        asked = AHORA + skew
        offset = AHORA - asked  # what sync stores
        held = StoredClock(status, offset)
        now = held.at(asked + 30 * SECOND_MS)  # half a minute later on the local clock
        assert now.black_ms == 5 * HOUR_MS + 3 * MINUTE_MS
        assert running_sentence(now, ANA_WHITE) == "bob has 5 h 3 min to move"


def test_a_clock_before_the_answer_shows_the_bank_whole():
    # A local clock set back after the sync: the countdown does not add time.
    now = clock_at(relj(), 0, AHORA - HOUR_MS)
    assert now.white_ms == 3 * DAY_MS


def test_no_clock_runs_in_a_finished_game():
    status = relj(waiting="-", white=0, black=2 * DAY_MS, fin="timeout")
    now = clock_at(status, 0, AHORA + 10 * DAY_MS)
    assert now.running is None and not now.time_up
    assert (now.white_ms, now.black_ms) == (0, 2 * DAY_MS)
    assert running_sentence(now, ANA_WHITE) is None
    assert clock_cell(now, ANA_WHITE) == "3d: you 0 s, bob 2 d"


def test_a_player_on_leave_keeps_the_bank_whole_until_the_leave_ends():
    leave_end = AHORA + 2 * DAY_MS
    status = relj(waiting=BLACK, black=DAY_MS, deadline=leave_end + DAY_MS, leave_black=leave_end)
    during = clock_at(status, 0, AHORA + DAY_MS)
    assert during.black_ms == DAY_MS and during.leave_until(BLACK) == leave_end
    assert clock_cell(during, ANA_WHITE) == (
        f"3d: bob has 1 d to move; you 3 d; bob on leave until {when(leave_end)}"
    )
    assert f"bob is on leave until {when(leave_end)}." in clock_lines(during, ANA_WHITE)
    assert f"You are on leave until {when(leave_end)}." in clock_lines(during, BOB_BLACK)

    after = clock_at(status, 0, leave_end + 6 * HOUR_MS)
    assert after.black_ms == 18 * HOUR_MS  # runs again once the leave is over
    assert after.leave_until(BLACK) == 0  # and the leave is no longer shown
    assert "on leave" not in clock_cell(after, ANA_WHITE)


def test_show_lines_name_both_banks_and_the_deadline():
    status = relj(white=2 * DAY_MS, black=3 * DAY_MS)
    lines = clock_lines(clock_at(status, 0, AHORA + HOUR_MS), BOB_BLACK)
    assert lines == [
        "Clock: 3d | ana (white) 1 d 23 h | bob (black) 3 d",
        f"ana has 1 d 23 h to move (by {when(AHORA + 2 * DAY_MS)}).",
    ]
    assert clock_lines(clock_at(status, 0, AHORA + 2 * DAY_MS), ANA_WHITE)[1] == (
        "Your time is up; the server will end the game."
    )


# -- words -------------------------------------------------------------------------------------


def test_spans_are_cut_down_never_rounded_up():
    assert span(2 * DAY_MS + 4 * HOUR_MS + 59 * MINUTE_MS) == "2 d 4 h"
    assert span(5 * HOUR_MS + 3 * MINUTE_MS + 59 * SECOND_MS) == "5 h 3 min"
    assert span(3 * DAY_MS) == "3 d"
    assert span(3 * DAY_MS - 1) == "2 d 23 h"
    assert span(2 * DAY_MS + 30 * MINUTE_MS) == "2 d"  # no "0 h"
    assert span(42 * SECOND_MS + 999) == "42 s"
    assert span(999) == "0 s" and span(-5) == "0 s"
    assert days_hours(28 * DAY_MS) == "28 d 0 h"
    assert days_hours(29 * DAY_MS + 23 * HOUR_MS + 59 * MINUTE_MS) == "29 d 23 h"


def test_time_controls_in_words():
    assert describe_control("3d") == "3 d a move"
    assert describe_control("30s-move") == "30 s a move"
    assert describe_control("10m") == "10 min for the game"
    assert describe_control("iccf-10/50") == "50 d + 5 d a move"
    assert describe_control("2h+30s/3h") == "2 h + 30 s a move, at most 3 h"
    assert describe_control("none") == "no clock"
    assert describe_control("what?") == ""
    assert control_text("3d") == "3d (3 d a move)"
    assert control_text(None) == "time control not known yet (sync)"


def test_an_end_on_time_is_named_from_the_servers_reason():
    board = chess.Board()  # nobody moved: the position says nothing
    lost = GameStatus("P0000007", "ana", "bob", 0, 2, WINNER_BLACK, 0, 0, WHITE, 2)
    assert how_it_ended(board, lost) == "forfeit"  # what the position alone tells
    assert ending(board, lost, "timeout") == "bob (black) won: timeout"
    drawn = GameStatus("P0000007", "ana", "bob", 0, 2, WINNER_DRAW, 0, 0, WHITE, 2)
    assert ending(board, drawn, "timeout") == "draw (timeout)"
    aborted = GameStatus("P0000007", "ana", "bob", 0, 2, WINNER_NONE, 0, 0, WHITE, 1)
    assert ending(board, aborted, "aborted") == "aborted (no first move in time; no result)"
    # Other reasons leave the wording of a game without a clock as it was.
    assert ending(board, lost, "resignation") == ending(board, lost)


# -- the cache -----------------------------------------------------------------------------------


def test_the_cache_keeps_the_record_and_its_offset(tmp_path: Path):
    status = relj(waiting=BLACK, black=DAY_MS)
    with Cache(tmp_path / "c.sqlite3") as cache:
        st = GameStatus("P0000007", "ana", "bob", 0, 0, 0, 0, 0, WHITE, 2)
        with cache.transaction():
            cache.store_status(st)
            cache.store_clock(status, -12_345)
        assert cache.clock("P0000007") == StoredClock(status, -12_345)
        assert cache.clocks() == {"P0000007": StoredClock(status, -12_345)}
        assert cache.end_reason("P0000007") is None
        with cache.transaction():
            cache.store_clock(relj(waiting="-", fin="timeout"), 0)
        assert cache.end_reason("P0000007") == "timeout"


def test_a_cache_of_schema_2_keeps_its_data_and_gains_clocks_and_controls(tmp_path: Path):
    path = tmp_path / "v2.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema', '2'), ('last_sync', '1795000000');
        CREATE TABLE fechas (kind TEXT PRIMARY KEY, fecha INTEGER NOT NULL);
        INSERT INTO fechas VALUES ('PPEN', 1794999999);
        CREATE TABLE challenges (
            name TEXT NOT NULL,
            direction TEXT NOT NULL CHECK (direction IN ('in', 'out')),
            seen_at INTEGER NOT NULL,
            PRIMARY KEY (name, direction)
        );
        INSERT INTO challenges VALUES ('carla', 'in', 5), ('dora', 'out', 6);
        CREATE TABLE games (
            id TEXT PRIMARY KEY, white TEXT NOT NULL, black TEXT NOT NULL,
            color TEXT NOT NULL, status INTEGER NOT NULL, ganador INTEGER NOT NULL,
            solicitud_blancas INTEGER NOT NULL, solicitud_negras INTEGER NOT NULL,
            next_ply INTEGER NOT NULL, changed INTEGER NOT NULL, synced_at INTEGER NOT NULL,
            removed_at INTEGER
        );
        INSERT INTO games VALUES ('P0000001', 'ana', 'bob', 'B', 0, 0, 0, 0, 3, 10, 10, NULL);
        """
    )
    old.commit()
    old.close()
    with Cache(path) as cache:
        assert cache.get_meta("schema") == str(SCHEMA_VERSION) == "4"
        assert cache.fecha("PPEN") == 1794999999 and cache.last_sync == 1795000000
        assert cache.game("P0000001") is not None
        # The controls of challenges held before are not known until the next sync.
        assert cache.challenge_controls("in") == {"carla": None}
        assert cache.challenge_controls("out") == {"dora": None}
        assert cache.clock("P0000001") is None
        with cache.transaction():
            cache.replace_challenges([OpenChallenge("carla", True, "3d")])
            cache.store_clock(replace(relj(), game="P0000001"), 0)
        assert cache.challenge_controls("in") == {"carla": "3d"}
        assert cache.challenges() == [("carla", "in")]
    with Cache(path) as again:  # opening it a second time changes nothing
        assert again.challenge_controls("in") == {"carla": "3d"}


# -- the wire, against a fake server ----------------------------------------------------------


def test_time_control_commands_on_the_wire(tmp_path: Path):
    srv = FakeServer(
        [
            reply(200),
            reply(200),
            reply(202, "P0000009"),
            reply(843, "ana's challenge is 10m, not 3d"),
            reply(200, "01795000000,ana:3d,bob:none"),
            reply(216, "E:carla:iccf-10/50,R:ana:3d"),
            reply(216, "E:carla"),
            reply(217, encode_clocks(relj())),
            reply(218, "1795172800000:2419200000"),
            reply(844, "you are not on leave"),
            reply(218, "0:2592000000"),
        ]
    )
    try:
        with srv.client() as c:
            c.juego("bob", "3d")
            c.juego("bob")
            assert c.acep("N", "ana", "3d") == "P0000009"
            with pytest.raises(TimeControlChanged) as changed:
                c.acep("N", "ana", "3d")
            assert changed.value.code == 843 and "10m" in changed.value.reason
            assert c.tran_controls(0) == (
                1795000000,
                [Challenger("ana", "3d"), Challenger("bob", "none")],
            )
            assert c.soli(controls=True) == [
                OpenChallenge("carla", False, "iccf-10/50"),
                OpenChallenge("ana", True, "3d"),
            ]
            assert c.soli() == [OpenChallenge("carla", False)]
            assert c.relj("7") == relj()
            leave = c.leave_start(2)
            assert (leave.until_ms, leave.left_ms) == (1795172800000, 28 * DAY_MS)
            with pytest.raises(LeaveRefused) as refused:
                c.leave_end()
            assert refused.value.reason == "you are not on leave"
            assert c.leave_status().until_ms == 0
            with pytest.raises(ValueError):  # checked before anything is sent
                c.juego("bob", "3 days")
            with pytest.raises(ValueError):
                c.lice("F", 3)
    finally:
        srv.close()
    assert srv.lines == [
        "JUEG:bob:3d",
        "JUEG:bob",
        "ACEP:N:ana:3d",
        "ACEP:N:ana:3d",
        "TRAN:00000000000:1",
        "SOLI:1",
        "SOLI",
        "RELJ:P0000007",
        "LICE:I:2",
        "LICE:F",
        "LICE:E",
    ]


def test_sync_goes_on_without_clocks_against_an_older_server(tmp_path: Path):
    srv = FakeServer(
        [
            reply(801, "SOLI takes no fields"),
            reply(216, "R:ana"),
            reply(800, "unknown command RELJ"),
        ]
    )
    st = GameStatus("P0000007", "ana", "bob", 0, 0, 0, 0, 0, WHITE, 1)
    try:
        with srv.client() as c, Cache(tmp_path / "c.sqlite3") as cache:
            assert open_challenges(c) == [OpenChallenge("ana", True)]
            with cache.transaction():
                cache.store_status(st)
            learn_clock(c, cache, st, clock=lambda: AHORA)
            assert cache.clock(st.game) is None and c.unknown == {"RELJ"}
            learn_clock(c, cache, st, clock=lambda: AHORA)  # not asked again
            assert c.sent["RELJ"] == 1
    finally:
        srv.close()
    assert srv.lines == ["SOLI:1", "SOLI", "RELJ:P0000007"]


def test_sync_stores_the_offset_measured_before_asking(tmp_path: Path):
    status = relj(waiting=BLACK, black=DAY_MS)
    srv = FakeServer([reply(217, encode_clocks(status)), reply(822, "not a clock failure")])
    st = GameStatus("P0000007", "ana", "bob", 0, 0, 0, 0, 0, WHITE, 2)
    local = AHORA - 3 * HOUR_MS  # this machine's clock is three hours slow
    try:
        with srv.client() as c, Cache(tmp_path / "c.sqlite3") as cache:
            with cache.transaction():
                cache.store_status(st)
            learn_clock(c, cache, st, clock=lambda: local)
            held = cache.clock(st.game)
            assert held is not None and held == StoredClock(status, 3 * HOUR_MS)
            assert held.at(local + HOUR_MS).black_ms == 23 * HOUR_MS
            # An active game with a clock is asked again at its next change; a failure
            # other than an unknown command is the sync's to report.
            with pytest.raises(ProtocolFailure):
                learn_clock(c, cache, st, clock=lambda: local)
    finally:
        srv.close()
