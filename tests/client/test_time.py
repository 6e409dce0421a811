"""Clocks through the ``ajedrez`` command against a real server: a challenge with a time
control, accepted only with the control the player saw; the clocks in ``games`` and
``show``, counted down offline; leave; games ended on time (docs/client.md, docs/protocol.md
section 5).

Each test has a server of its own on a database of its own, reading its time from a file
the test writes (``--clock-file``): the server's time moves when the test says so, and no
other server's scheduler sees these games. The clients keep the machine's own clock,
which is nowhere near the server's: the offset sync stores makes up for it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ajedrez.client import Client, OpenChallenge, TimeControlChanged
from ajedrez.client.cache import cache_path
from ajedrez.client.clocks import when
from ajedrez.domain.accounts import Accounts
from ajedrez.store.db import Database
from tests.client.conftest import Machine, MachineFactory, free_port
from tests.support.clock import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS, START_MS, FileTime
from tests.support.common import PASSWORD, ROOT, unique_name
from tests.support.server import ServerProcess, start_server


@dataclass
class Timed:
    srv: ServerProcess
    time: FileTime
    machine: Callable[..., Machine]
    add_user: Callable[[str], str]

    def pair(self, a: str = "ana", b: str = "bob") -> tuple[Machine, Machine]:
        return self.machine(self.add_user(a)), self.machine(self.add_user(b))


@pytest.fixture
def timed(own_db: tuple[str, Database], tmp_path: Path, machine: MachineFactory) -> Iterator[Timed]:
    url, database = own_db
    time = FileTime(tmp_path / "server-now")
    srv = start_server(url, "--clock-file", str(time.path), "--flag-grace", "0")
    accounts = Accounts(database)

    def add_user(prefix: str) -> str:
        name = unique_name(prefix)
        accounts.add_user(name, PASSWORD)
        return name

    yield Timed(srv, time, lambda user, **kw: machine(user, srv=srv, **kw), add_user)
    srv.stop()


def timed_game(white: Machine, black: Machine, control: str) -> str:
    """``black`` challenges ``white`` with ``control``; ``white`` accepts playing white."""
    black("challenge", white.user, "--time", control)
    white("sync")
    out = white("accept", black.user, "--color", "B").out
    return out.split("Game ", 1)[1].split(" ", 1)[0]


def sent(run_err: str, command: str) -> list[str]:
    """The lines of ``command`` a ``-v`` run sent, as sent."""
    return re.findall(rf"^ajedrez: > ({command}(?::\S*)?)$", run_err, re.MULTILINE)


def test_a_challenge_with_a_time_control_is_accepted_and_its_clock_shown(timed):
    a, b = timed.pair()
    ana, bob = a.user, b.user

    # Checked before anything is sent: no server listens at that address.
    nowhere = f"127.0.0.1:{free_port()}"
    bad = a.fail("--server", nowhere, "challenge", bob, "--time", "3 days", rc=2)
    assert "--time: invalid time control '3 days'" in bad.err, bad

    made = a("challenge", bob, "--time", "3d+3d/3d", "-v")  # the same as the preset 3d
    assert sent(made.err, "JUEG") == [f"JUEG:{bob}:3d"]
    assert f"Challenge sent to {bob} with time control 3d (3 d a move)." in made.out

    listed = b("challenges", "--sync").out
    assert f"{ana}   3d (3 d a move)   (ajedrez accept {ana}" in listed, listed
    assert f"{bob}   3d (3 d a move)" in a("challenges", "--sync").out

    accepted = b("accept", ana, "--color", "N", "-v")
    assert sent(accepted.err, "ACEP") == [f"ACEP:N:{ana}:3d"]
    assert "time control 3d (3 d a move)" in accepted.out
    gid = accepted.out.split("Game ", 1)[1].split(" ", 1)[0]

    timed.time.advance(HOUR_MS + 30 * MINUTE_MS)
    synced = a("sync").out
    assert f"Your turn: {gid} ({bob}, 2 d 22 h left)." in synced, synced
    shown = a("show", gid).out
    assert f"Clock: 3d | {ana} (white) 2 d 22 h | {bob} (black) 3 d" in shown, shown
    assert f"You have 2 d 22 h to move (by {when(START_MS + 3 * DAY_MS)})." in shown
    assert f"{ana} has 2 d 22 h to move" in b("show", gid, "--sync").out
    listing = a("games").out
    assert "CLOCK" in listing.splitlines()[0]
    assert f"3d: you have 2 d 22 h to move; {bob} 3 d" in listing, listing
    assert f"Clock:       3d: you have 2 d 22 h to move; {bob} 3 d" in a("status", gid).out

    # Her move adds the increment up to the cap, and bob's clock runs from the move.
    a("move", gid, "e4")
    assert f"You have 2 d 23 h to move (by {when(timed.time.now + 3 * DAY_MS)})" in (
        b("show", gid, "--sync").out
    )
    assert f"Clock: 3d | {ana} (white) 3 d | {bob} (black) 2 d 23 h" in a("show", gid).out

    # A draw offer leaves the clock alone: bob, to move, offers and his clock runs on.
    b("draw", "offer", gid)
    shown = a("show", gid, "--sync").out
    assert f"{bob} has 2 d 23 h to move" in shown, shown


def test_games_without_a_clock_look_as_they_did(timed):
    a, b = timed.pair()
    challenged = b("challenge", a.user, "-v")
    assert sent(challenged.err, "JUEG") == [f"JUEG:{a.user}"]  # no control field at all
    assert f"Challenge sent to {a.user}. When" in challenged.out
    assert f"{b.user}   none (no clock)" in a("challenges", "--sync").out
    gid = a("accept", b.user, "--color", "B").out.split("Game ", 1)[1].split(" ", 1)[0]
    a("move", gid, "d4")
    listing = a("games", "--sync").out
    assert listing.splitlines()[0].split() == [
        "GAME",
        "OPPONENT",
        "YOU",
        "TURN",
        "MOVE",
        "STATUS",
        "LAST",
        "CHANGE",
    ]
    shown = a("show", gid).out
    assert "Clock" not in shown and "to move" not in shown.split("Movida")[0]
    assert "Clock" not in a("status", gid).out


def test_a_challenge_made_again_with_another_control_is_not_accepted_blind(timed):
    a, b = timed.pair()
    ana, bob = a.user, b.user
    a("challenge", bob, "--time", "3d")
    assert "3d (3 d a move)" in b("challenges", "--sync").out
    a("decline", bob)  # withdrawn, and made again with a live control
    a("challenge", bob, "--time", "10m")

    changed = b.fail("accept", ana, "--color", "B", rc=1)
    assert f"the challenge from {ana} changed since you last synced" in changed.err, changed
    assert "(843 F_TIMECONTROL)" in changed.err and "`ajedrez challenges --sync`" in changed.err
    assert "10m (10 min for the game)" in b("challenges", "--sync").out
    accepted = b("accept", ana, "--color", "B", "-v")
    assert sent(accepted.err, "ACEP") == [f"ACEP:B:{ana}:10m"]

    # A machine that never synced has shown its user no control: it names none.
    carl, dora = timed.pair("carl", "dora")
    carl("challenge", dora.user, "--time", "1d")
    fresh = dora("accept", carl.user, "--color", "B", "-v")
    assert sent(fresh.err, "ACEP") == [f"ACEP:B:{carl.user}"]


def test_leave_start_status_and_end(timed):
    a, b = timed.pair()
    ana = a.user
    gid = timed_game(a, b, "3d")  # ana plays white: her clock runs

    before = a("leave", "status").out
    assert "Not on leave." in before and "Leave left this year: 30 d 0 h." in before
    until = when(START_MS + 2 * DAY_MS)
    started = a("leave", "start", "--days", "2", "-v")
    assert sent(started.err, "LICE") == ["LICE:I:2"]
    assert f"On leave until {until}" in started.out
    assert "Leave left this year: 28 d 0 h." in started.out
    status = a("leave", "status").out
    assert f"On leave until {until}." in status and "28 d 0 h" in status

    # Her opponent sees it, and her clock stays whole while it lasts.
    shown = b("show", gid, "--sync").out
    assert f"{ana} is on leave until {until}." in shown, shown
    assert f"{ana} has 3 d to move (by {when(START_MS + 5 * DAY_MS)})." in shown
    assert f"you on leave until {until}" in a("games").out

    again = a.fail("leave", "start", rc=1)
    assert (
        "leave cannot start: you are on leave already; end it first with `ajedrez leave end` "
        "(844 F_LEAVE)"
    ) in again.err
    assert "LICE:" not in again.err

    timed.time.advance(DAY_MS)
    ended = a("leave", "end").out
    assert "Leave ended" in ended and "Leave left this year: 29 d 0 h." in ended
    assert "on leave" not in b("show", gid, "--sync").out
    assert "leave cannot end: you are not on leave (844 F_LEAVE)" in a.fail("leave", "end").err

    assert "--days goes with `leave start`" in a.fail("leave", "end", "--days", "3", rc=2).err
    assert "--days: 1 to 366" in a.fail("leave", "start", "--days", "0", rc=2).err


def _shift_clock_records(m: Machine, ms: int) -> None:
    """Move the stored offsets on by ``ms``: to the countdown, as if that much time had
    passed on this machine since the sync."""
    host, port = m.address.rsplit(":", 1)
    db = sqlite3.connect(cache_path(m.data_dir, host, int(port), m.user))
    with db:
        assert db.execute("UPDATE clocks SET offset_ms = offset_ms + ?", (ms,)).rowcount > 0
    db.close()


def test_show_counts_down_offline_after_a_sync(timed):
    a, b = timed.pair()
    gid = timed_game(a, b, "1d")
    timed.time.advance(2 * HOUR_MS)
    a("sync")
    timed.srv.stop()

    shown = a("show", gid).out  # no server: the clock comes from the local data
    assert re.search(r"You have 21 h 5\d min to move", shown), shown
    assert f"| {b.user} (black) 1 d" in shown

    _shift_clock_records(a, 21 * HOUR_MS)
    assert re.search(r"You have 5\d min \d+ s to move", a("show", gid).out)
    _shift_clock_records(a, HOUR_MS)
    up = a("show", gid).out
    assert "Your time is up; the server will end the game." in up, up
    assert "your time is up; the server will end the game" in a("games").out
    assert a.fail("sync", rc=3).rc == 3  # and there really is no server


def test_games_ended_on_time_say_how(timed):
    a, b = timed.pair()
    never = timed_game(a, b, "1d")  # white never moves
    c, d = timed.pair("carl", "dora")
    late = timed_game(c, d, "1d")
    c("move", late, "e4")
    d("move", late, "e5")

    timed.time.advance(DAY_MS + SECOND_MS)
    # Whether the server's scheduler or the move itself ends them, the move is refused.
    a.fail("move", never, "e4", rc=1)
    c.fail("move", late, "Nf3", rc=1)

    a("sync")
    assert "no result: aborted" in a("games").out
    shown = a("show", never).out
    assert "finished: aborted (no first move in time; no result)" in shown, shown
    assert "to move" not in shown.split("Last move")[-1]

    d("sync")
    assert "won: timeout" in d("games").out
    assert f"finished: {d.user} (black) won: timeout" in c("show", late, "--sync").out
    assert "lost: timeout" in c("games").out
    # The local export is the server's text, each move's clock included.
    exported = c("export", late).out
    assert '[TimeControl "1/86400"]' in exported and "[%clk 23:59:59]" not in exported
    assert "1. e4 { [%clk 24:00:00] } 1... e5 { [%clk 24:00:00] timeout } 0-1" in exported
    assert exported == c("export", late, "--from-server").out
    c("sync", "--full")  # fetches the moves again: their clocks are read again too
    assert c("export", late).out == exported


def test_the_library_against_the_server(timed):
    ana, bob = timed.add_user("ana"), timed.add_user("bob")
    with Client(timed.srv.host, timed.srv.port) as a, Client(timed.srv.host, timed.srv.port) as b:
        a.login(ana, PASSWORD)
        b.login(bob, PASSWORD)
        a.juego(bob, "2h+30s")
        fecha, challengers = b.tran_controls(0)
        assert fecha > 0
        assert [(c.user, c.control) for c in challengers] == [(ana, "2h+30s")]
        assert b.tran(0).items == [ana]  # without the field, as it always was
        assert b.soli(controls=True) == [OpenChallenge(ana, True, "2h+30s")]
        assert b.soli() == [OpenChallenge(ana, True)]
        with pytest.raises(TimeControlChanged):
            b.acep("N", ana, "3d")
        gid = b.acep("N", ana, "2h+30s")
        clock = a.relj(gid)
        assert (clock.control, clock.waiting, clock.now_ms) == ("2h+30s", "B", timed.time.now)
        assert clock.white_ms == clock.black_ms == 2 * HOUR_MS
        assert clock.deadline_ms == timed.time.now + 2 * HOUR_MS and clock.end_reason == ""
        assert b.leave_status().until_ms == 0


def test_a_win_on_time_counts_in_the_ranking_as_the_srnk_doc_says(timed):
    a, b = timed.pair()
    aborted = timed_game(a, b, "1d")  # white never moves: no result
    c, d = timed.pair("carl", "dora")
    late = timed_game(c, d, "1d")
    c("move", late, "e4")
    d("move", late, "e5")
    timed.time.advance(DAY_MS + SECOND_MS)
    c.fail("move", late, "Nf3", rc=1)  # ends it on time, if the scheduler has not
    a.fail("move", aborted, "e4", rc=1)

    ranking = d("ranking", "--sync").out
    wins = {row.split()[1]: int(row.split()[2]) for row in ranking.splitlines()[1:5]}
    assert wins == {d.user: 1, c.user: 0, a.user: 0, b.user: 0}, ranking

    # The protocol's SRNK section says so, and says what does not count.
    doc = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    srnk = doc.split("\n### SRNK\n", 1)[1].split("\n### ", 1)[0]
    said = " ".join(srnk.split())
    for counted in ("checkmate", "resignation", "leaving the service", "clock running out"):
        assert counted in said, counted
    assert "without a winner credits nobody" in said and "aborted on time" in said
