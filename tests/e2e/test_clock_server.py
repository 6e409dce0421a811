"""Deadlines enforced by the server itself, with nobody connected: one process,
``--workers 2``, and two servers on one database; each game ended on time exactly once;
the start-up grace after an outage, and the administrator's extension (docs/protocol.md
section 5, docs/operations.md).

The servers read their time from a file the test writes (``--clock-file``): time moves
when the test says so, never by sleeping. The scheduler looks for new deadlines every
``--clock-poll`` seconds of real time; the tests wait for the game's end as an event.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.store.db import Database
from tests.support.clock import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS, FileTime
from tests.support.common import PASSWORD, ROOT, unique_name, wait_for
from tests.support.espol import Conn
from tests.support.server import ServerProcess, admin, start_server

POLL = "0.05"
ENDED_ON_TIME = re.compile(r"(P\d{7}) ended on time \((\w+)\)")


@pytest.fixture
def file_time(tmp_path: Path) -> FileTime:
    return FileTime(tmp_path / "now")


@pytest.fixture
def servers(own_db: tuple[str, Database]) -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for srv in started:
        if srv.proc.poll() is None:
            srv.stop()


def start(
    servers: list[ServerProcess], url: str, file_time: FileTime, *extra: str
) -> ServerProcess:
    srv = start_server(
        url,
        "--clock-file",
        str(file_time.path),
        "--clock-poll",
        POLL,
        "--flag-grace",
        "0",
        *extra,
    )
    servers.append(srv)
    return srv


def login(srv: ServerProcess, name: str) -> Conn:
    c = srv.connect()
    assert c.cmd(f"USER:{name}").code == 101
    assert c.cmd(f"PASS:{PASSWORD}").code == 102
    return c


OPENING = ("JGDA:{pid}:1:e2e4:0:1228:0", "JGDA:{pid}:2:e7e5:0:5236:0")


def new_games(
    srv: ServerProcess, database: Database, count: int, control: str, *, plies: int = 1
) -> list[tuple[str, str, str]]:
    """``count`` games with ``control`` (white, black, game id), after ``plies`` moves
    (a side that has moved loses on time; one that has not has the game aborted). Every
    connection is closed again: nobody is connected when the clocks run out."""
    accounts = Accounts(database)
    made = []
    for _ in range(count):
        white, black = unique_name("w"), unique_name("b")
        for name in (white, black):
            accounts.add_user(name, PASSWORD)
        with login(srv, black) as b, login(srv, white) as w:
            assert b.cmd(f"JUEG:{white}:{control}").code == 200
            accepted = w.cmd(f"ACEP:B:{black}:{control}")
            assert accepted.code == 202, accepted
            for ply in range(plies):
                mover = w if ply % 2 == 0 else b
                assert mover.cmd(OPENING[ply].format(pid=accepted.text)).code == 208
        made.append((white, black, accepted.text))
    return made


def status_of(srv: ServerProcess, player: str, pid: str) -> list[str]:
    with login(srv, player) as c:
        r = c.cmd(f"STAT:{pid}")
        assert r.code == 206, r
        return r.text.split(":")


def finished(srv: ServerProcess, player: str, pid: str) -> bool:
    return status_of(srv, player, pid)[4] == "2"


def ended_on_time(servers: list[ServerProcess]) -> list[str]:
    return [m[1] for srv in servers for m in ENDED_ON_TIME.finditer(srv.log_text())]


def wins(database: Database, names: list[str]) -> dict[str, int]:
    found = {u.name: u.wins for u in Accounts(database).list_users()}
    return {n: found[n] for n in names}


def test_one_server_ends_a_game_on_time_with_nobody_connected(own_db, file_time, servers):
    url, database = own_db
    srv = start(servers, url, file_time)
    [(white, black, pid)] = new_games(srv, database, 1, "1d")
    file_time.advance(DAY_MS - 1)
    with login(srv, black) as b:  # one millisecond before: the move is played
        assert b.cmd(f"JGDA:{pid}:2:e7e5:0:5236:0").code == 208
    file_time.advance(DAY_MS)  # white's day is over (the increment made it a day again)
    assert wait_for(lambda: ended_on_time(servers) == [pid], timeout=20), srv.log_text()
    fields = status_of(srv, black, pid)
    assert fields[4:6] == ["2", "2"]  # finished, black won
    with login(srv, white) as w:
        relj = w.cmd(f"RELJ:{pid}")
        assert relj.code == 217
        assert relj.text.split(":")[5:] == ["-", "0", "0", "0", "timeout"]
        assert w.cmd(f"JGDA:{pid}:3:g1f3:0:0621:0").code == 833
    assert wins(database, [white, black]) == {white: 0, black: 1}


def test_a_game_nobody_began_is_aborted(own_db, file_time, servers):
    url, database = own_db
    srv = start(servers, url, file_time)
    [(white, black, pid)] = new_games(srv, database, 1, "30s-move", plies=0)
    file_time.advance(30 * SECOND_MS)
    assert wait_for(lambda: ended_on_time(servers) == [pid], timeout=20), srv.log_text()
    assert f"{pid} ended on time (aborted)" in srv.log_text()
    assert status_of(srv, white, pid)[4:6] == ["2", "0"]  # finished, no result
    assert wins(database, [white, black]) == {white: 0, black: 0}


@pytest.mark.parametrize("layout", ["workers", "two servers"])
def test_every_game_ends_on_time_exactly_once(own_db, file_time, servers, layout):
    url, database = own_db
    if layout == "workers":
        srv = start(servers, url, file_time, "--workers", "2")
        assert wait_for(lambda: srv.log_text().count("serving") >= 2), srv.log_text()
    else:
        srv = start(servers, url, file_time)
        start(servers, url, file_time)
    games = new_games(srv, database, 12, "1d", plies=2)
    file_time.advance(DAY_MS)
    pids = sorted(pid for _w, _b, pid in games)
    assert wait_for(lambda: len(ended_on_time(servers)) >= len(pids), timeout=30), [
        s.log_text() for s in servers
    ]
    assert sorted(ended_on_time(servers)) == pids  # each once, by one scheduler
    for white, _black, pid in games:
        assert status_of(srv, white, pid)[4:6] == ["2", "2"]  # white out of time: black won
    players = [n for w, b, _p in games for n in (w, b)]
    assert sum(wins(database, players).values()) == len(games)


def test_restart_grace_lets_the_administrator_extend_first(own_db, file_time, servers):
    url, database = own_db
    srv = start(servers, url, file_time)
    [(_white, black, pid)] = new_games(srv, database, 1, "1d")
    srv.stop()
    file_time.advance(DAY_MS + HOUR_MS)  # the server was down when black's day ran out
    srv = start(servers, url, file_time, "--flag-grace", "600")
    assert "start-up grace: no game ends on time in the next 600 s" in srv.log_text()
    done = admin(url, "games", "extend", "--all", "2h")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1 game extended by 2h\n"
    listing = admin(url, "games", "list").stdout
    assert re.search(rf"^{pid} .* 1d +\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d", listing, re.M), listing
    # A game that runs out inside the grace period is ended once it is over, and the
    # extended game, due later, still runs.
    [(_w2, black2, pid2)] = new_games(srv, database, 1, "30s-move", plies=2)
    file_time.advance(10 * MINUTE_MS + SECOND_MS)
    assert wait_for(lambda: ended_on_time(servers) == [pid2], timeout=20), srv.log_text()
    assert not finished(srv, black, pid)
    file_time.advance(HOUR_MS)  # past the extended deadline
    assert wait_for(lambda: pid in ended_on_time(servers), timeout=20), srv.log_text()
    assert status_of(srv, black2, pid2)[4:6] == ["2", "2"]


# Five years after the test's usual time: any reading of the file is told from a reading of
# the system clock.
FAR_MS = 1_795_435_200_000 + 5 * 365 * DAY_MS


def test_what_the_clock_file_drives_and_what_it_does_not(own_db, file_time, servers):
    """The clock file is the time of the game clocks and of events (RELJ's time, a move's
    deadline, EVEN's event times); every fecha (STAT's, TRAN's, PPEN's) is the database's
    stamp, from the system clock, whatever the file says (docs/operations.md, clock_file)."""
    url, database = own_db
    file_time.set(FAR_MS)
    srv = start(servers, url, file_time)
    [(_white, black, pid)] = new_games(srv, database, 1, "1d")
    with login(srv, black) as b:
        relj = b.cmd(f"RELJ:{pid}").text.split(":")
        assert relj[1] == str(FAR_MS)  # the server's time, as RELJ gives it
        assert relj[6] == str(FAR_MS + DAY_MS)  # black's deadline: a day from the file's now
        assert b.cmd("EVEN:0").code == 219
        events = []
        while (r := b.reply()).code != 601:
            events.append(r.text)
        moved = [e for e in events if f":FIN_DE_TURNO:{pid}:1:" in e]
        assert [e.split(":")[1] for e in moved] == [str(FAR_MS)], events
    now = time.time()
    with login(srv, black) as b:
        fecha = int(status_of(srv, black, pid)[3])
        assert abs(fecha - now) < 120, (fecha, now)  # STAT's fecha: the system clock
        for command in ("TRAN:0", "PPEN:0"):
            answered = int(b.cmd(command).text.split(",", 1)[0])
            assert abs(answered - now) < 120, (command, answered, now)
    row = next(
        line
        for line in (ROOT / "docs" / "operations.md").read_text().splitlines()
        if line.startswith("| `clock_file` |")
    )
    for named in ("RELJ", "EVEN", "STAT", "TRAN", "fecha", "system clock"):
        assert named in row, (named, row)
