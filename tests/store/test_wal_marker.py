"""SQLite: a write-ahead log deleted after an unclean stop is reported at the next start.

The server is killed (SIGKILL) after acknowledging moves, its ``-wal`` file deleted, and
the server started again: the moves are gone, and the log says why in one WARNING line.
Every other way of stopping and starting (a clean stop, a kill with the WAL kept, two
servers on one file, ``--workers``, the admin command in between) warns of nothing.

These tests use a SQLite file of their own whatever the store under test: the WAL is
SQLite's.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from tests.support.common import PASSWORD, ROOT, unique_name, wait_for
from tests.support.hardening import log_in
from tests.support.play import Match, challenge_and_accept
from tests.support.server import ServerProcess, admin, start_server

MOVES = ("e4", "e5", "Nf3", "Nc6", "Bb5", "a6")


def _wal_warnings(text: str) -> list[str]:
    return [line for line in text.splitlines() if "write-ahead log" in line]


class Setup:
    def __init__(self, directory: Path) -> None:
        self.path = directory / "marked.sqlite3"
        self.url = f"sqlite:///{self.path}"
        self.wal = self.path.with_name(self.path.name + "-wal")
        self.shm = self.path.with_name(self.path.name + "-shm")
        db = Database(self.url)
        try:
            upgrade(db)
            accounts = Accounts(db)
            self.names = [unique_name("wal") for _ in range(4)]
            for name in self.names:
                accounts.add_user(name, PASSWORD, "")
        finally:
            db.dispose()
        self.servers: list[ServerProcess] = []

    def start(self, *extra: str) -> ServerProcess:
        srv = start_server(self.url, *extra)
        self.servers.append(srv)
        return srv

    def play(self, srv: ServerProcess, pair: int = 0) -> Match:
        """A new game between the ``pair``-th two users, every move of ``MOVES``
        acknowledged."""
        white, black = self.names[2 * pair : 2 * pair + 2]
        w = log_in(srv.host, srv.port, white, PASSWORD)
        b = log_in(srv.host, srv.port, black, PASSWORD)
        match = challenge_and_accept(white, w, black, b)
        match.play(*MOVES)
        w.close()
        b.close()
        return match

    def stored_plies(self, pid: str) -> int:
        with sqlite3.connect(self.path) as conn:
            found = conn.execute(
                "SELECT count(*) FROM moves WHERE game_id = ?", (int(pid[1:]),)
            ).fetchone()
        return int(found[0])

    def markers(self) -> list[str]:
        directory = self.path.with_name(self.path.name + "-open")
        return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    found = Setup(tmp_path)
    yield found
    for srv in found.servers:
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.wait()


def _kill(srv: ServerProcess) -> None:
    srv.proc.kill()
    srv.proc.wait()


def _stop(srv: ServerProcess) -> None:
    assert srv.stop() == 0, srv.log_text()


def test_a_wal_deleted_after_a_kill_is_reported(setup: Setup) -> None:
    srv = setup.start()
    match = setup.play(srv)
    _kill(srv)
    assert setup.wal.exists(), "a killed server leaves its WAL"
    setup.wal.unlink()  # what the operator must never do
    setup.shm.unlink(missing_ok=True)
    srv = setup.start()
    assert wait_for(lambda: bool(_wal_warnings(srv.log_text()))), srv.log_text()
    (warning,) = _wal_warnings(srv.log_text())
    assert " WARNING ajedrez.storage: " in warning and str(setup.wal.name) in warning, warning
    lost = len(MOVES) - setup.stored_plies(match.pid)
    print(f"{lost} of {len(MOVES)} acknowledged moves lost with the WAL")
    assert lost > 0  # what the warning is about
    _stop(srv)
    # Said once: the server that stopped cleanly took the dead one's marker away.
    srv = setup.start()
    _stop(srv)
    assert _wal_warnings(srv.log_text()) == []
    assert setup.markers() == []


def test_the_admin_command_reports_it_too(setup: Setup) -> None:
    srv = setup.start()
    setup.play(srv)
    _kill(srv)
    setup.wal.unlink()
    setup.shm.unlink(missing_ok=True)
    done = admin(setup.url, "users", "list")
    assert done.returncode == 0, done.stderr
    assert len(_wal_warnings(done.stderr)) == 1, done.stderr


def test_no_warning_after_a_clean_stop(setup: Setup) -> None:
    srv = setup.start()
    match = setup.play(srv)
    _stop(srv)
    assert not setup.wal.exists()  # the last connection copied it and removed it
    assert setup.markers() == []
    srv = setup.start()
    _stop(srv)
    assert _wal_warnings(srv.log_text()) == []
    assert setup.stored_plies(match.pid) == len(MOVES)


def test_no_warning_after_a_kill_that_kept_the_wal(setup: Setup) -> None:
    srv = setup.start()
    match = setup.play(srv)
    _kill(srv)
    assert len(setup.markers()) == 1  # the dead server's
    srv = setup.start()
    _stop(srv)
    assert _wal_warnings(srv.log_text()) == []
    assert setup.stored_plies(match.pid) == len(MOVES)
    assert setup.markers() == []


def test_the_admin_command_after_a_kill_is_no_false_alarm(setup: Setup) -> None:
    """The admin command, last to close the database, copies the dead server's WAL in and
    removes it: the next server must not take that for a deleted WAL."""
    srv = setup.start()
    match = setup.play(srv)
    _kill(srv)
    done = admin(setup.url, "users", "list")
    assert done.returncode == 0 and _wal_warnings(done.stderr) == [], done.stderr
    assert not setup.wal.exists()
    srv = setup.start()
    _stop(srv)
    assert _wal_warnings(srv.log_text()) == []
    assert setup.stored_plies(match.pid) == len(MOVES)


def test_two_servers_one_killed_the_other_stopped_cleanly(setup: Setup) -> None:
    first, second = setup.start(), setup.start()
    match = setup.play(second)
    _kill(second)
    setup.play(first, pair=1)
    _stop(first)  # the last to close: the WAL is copied in and removed
    assert not setup.wal.exists()
    srv = setup.start()
    _stop(srv)
    assert _wal_warnings(first.log_text() + srv.log_text()) == []
    assert setup.stored_plies(match.pid) == len(MOVES)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def test_workers_killed_then_their_wal_deleted_warn_once(setup: Setup) -> None:
    srv = setup.start("--workers", "2")
    assert wait_for(lambda: srv.log_text().count("serving") >= 2, 30), srv.log_text()
    setup.play(srv)
    workers = _children(srv.proc.pid)
    assert len(workers) == 2, workers
    # Stopped first, the master cannot replace its workers, nor stop them cleanly.
    os.kill(srv.proc.pid, signal.SIGSTOP)
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: len(_children(srv.proc.pid)) == 0 or _all_zombies(workers))
    _kill(srv)
    setup.wal.unlink()
    setup.shm.unlink(missing_ok=True)
    srv = setup.start("--workers", "2")
    assert wait_for(lambda: srv.log_text().count("serving") >= 2, 30), srv.log_text()
    _stop(srv)
    assert len(_wal_warnings(srv.log_text())) == 1, srv.log_text()
    assert setup.markers() == []


def _all_zombies(pids: list[int]) -> bool:
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            return False
    return True


def test_a_process_that_exits_without_closing_is_no_false_alarm(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    """A program that never calls dispose() still exits normally: its connections close
    (the WAL copied in and removed) or its WAL stays, and its marker goes either way."""
    forgetful = (
        "import sys\n"
        "from ajedrez.store.db import Database\n"
        "db = Database(sys.argv[1])\n"
        "with db.write() as tx:\n"
        "    tx.conn.exec_driver_sql('UPDATE users SET wins = wins + 1')\n"
    )
    subprocess.run([sys.executable, "-c", forgetful, setup.url], cwd=ROOT, check=True)
    assert setup.markers() == []
    with caplog.at_level(logging.WARNING, logger="ajedrez.storage"):
        Database(setup.url).dispose()
    assert _wal_warnings(caplog.text) == []
    with sqlite3.connect(setup.path) as conn:
        assert conn.execute("SELECT min(wins) FROM users").fetchone() == (1,)
