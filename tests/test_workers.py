"""``--workers N``: several server processes on one listening port and one database.

A stopped worker (SIGSTOP) cannot accept, so stopping each in turn decides which worker
serves which connection: the two players of a game are then served by two different
processes, and every move crosses from one to the other through the database.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import chess
import pytest

from tests.conftest import PASSWORD, ServerProcess, start_server, wait_for
from tests.espol import Conn
from tests.play_support import Match, stat


def _workers(master: int) -> list[int]:
    try:
        text = Path(f"/proc/{master}/task/{master}/children").read_text()
    except OSError:
        return []
    return [int(pid) for pid in text.split()]


@pytest.fixture
def two_workers(database_url: str) -> Iterator[ServerProcess]:
    srv = start_server(database_url, "--workers", "2")
    assert wait_for(lambda: srv.log_text().count("serving") >= 2), srv.log_text()
    yield srv
    if srv.proc.poll() is None:
        srv.stop()


def _connect_to(srv: ServerProcess, worker: int, other: int, name: str) -> Conn:
    """A logged-in connection that ``worker`` serves: ``other`` is stopped meanwhile."""
    os.kill(other, signal.SIGSTOP)
    try:
        conn = srv.connect()
        assert conn.cmd(f"USER:{name}").code == 101  # answered, so accepted by ``worker``
    finally:
        os.kill(other, signal.SIGCONT)
    assert conn.cmd(f"PASS:{PASSWORD}").code == 102
    return conn


def test_two_workers_serve_one_game_between_them(two_workers, new_user):
    srv = two_workers
    first, second = _workers(srv.proc.pid)
    white, black = new_user("ww"), new_user("wb")
    w = _connect_to(srv, first, second, white)
    b = _connect_to(srv, second, first, black)
    try:
        assert w.cmd(f"JUEG:{black}").code == 200
        r = b.cmd(f"ACEP:N:{white}")
        assert r.code == 202, r
        m = Match(r.text, white, black, w, b)
        m.play("f3", "e5", "g4", "Qh4#")
        st = stat(w, m.pid)
        assert (st.status, st.winner, st.next_ply) == (2, 2, 5)
        seen_by_black = stat(b, m.pid)
        assert (seen_by_black.status, seen_by_black.winner, seen_by_black.next_ply) == (2, 2, 5)
        assert wait_for(lambda: "[worker 1]" in srv.log_text() and "[worker 2]" in srv.log_text())
    finally:
        w.close()
        b.close()


def test_a_dead_worker_is_replaced_and_nothing_acknowledged_is_lost(two_workers, new_user):
    srv = two_workers
    first, second = _workers(srv.proc.pid)
    white, black = new_user("wk"), new_user("wk")
    w = _connect_to(srv, first, second, white)
    b = _connect_to(srv, second, first, black)
    assert w.cmd(f"JUEG:{black}").code == 200
    m = Match(b.cmd(f"ACEP:N:{white}").text, white, black, w, b)
    m.play("e4", "e5")
    os.kill(second, signal.SIGKILL)  # black's worker
    assert wait_for(
        lambda: len(_workers(srv.proc.pid)) == 2 and second not in _workers(srv.proc.pid)
    )
    assert wait_for(lambda: "exited unexpectedly" in srv.log_text())
    m.b.close()
    m.b = _connect_to(srv, first, _workers(srv.proc.pid)[-1], black)
    m.play("Nf3")
    assert stat(m.b, m.pid).next_ply == 4
    assert m.board.fullmove_number == 2 and m.board.turn == chess.BLACK
    w.close()
    m.b.close()


def test_sigterm_stops_every_worker(two_workers):
    srv = two_workers
    workers = _workers(srv.proc.pid)
    assert len(workers) == 2
    conn = srv.connect()  # an idle session: closed at once by the graceful stop
    assert srv.stop() == 0
    for pid in workers:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
        )
    assert wait_for(lambda: srv.log_text().rstrip().endswith("server stopped"))
    assert srv.log_text().count("] ajedrez.server: all sessions closed") == 2
    conn.close()


def test_workers_setting_must_be_positive(database_url):
    from tests.test_server_process import run_server

    done = run_server("--database-url", database_url, "--port", "0", "--workers", "0")
    assert done.returncode == 2
    assert "workers must be at least 1" in done.stderr


def test_workers_end_when_the_master_is_killed(two_workers):
    srv = two_workers
    workers = _workers(srv.proc.pid)
    srv.proc.kill()  # no chance to stop them: the kernel tells them (PR_SET_PDEATHSIG)
    srv.proc.wait(10)
    assert wait_for(lambda: not any(_alive(pid) for pid in workers), timeout=20)


def test_a_worker_that_does_not_stop_is_killed(database_url):
    srv = start_server(database_url, "--workers", "2", "--stop-grace", "1")
    try:
        assert wait_for(lambda: srv.log_text().count("serving") >= 2), srv.log_text()
        stuck, other = _workers(srv.proc.pid)
        os.kill(stuck, signal.SIGSTOP)  # it cannot see SIGTERM
        srv.proc.terminate()
        assert srv.proc.wait(30) == 0
        assert not _alive(stuck) and not _alive(other)
        assert wait_for(lambda: "did not stop in time; killing it" in srv.log_text())
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
