"""``--workers N``: several server processes on one listening port and one database.

A stopped worker (SIGSTOP) cannot accept, so stopping each in turn decides which worker
serves which connection: the two players of a game are then served by two different
processes, and every move crosses from one to the other through the database.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import chess
import pytest

from tests.support.common import PASSWORD, wait_for
from tests.support.espol import Conn
from tests.support.play import Match, challenge_and_accept, jgda, stat
from tests.support.server import ServerProcess, start_server
from tests.support.sockets import unix_unread


def _children(master: int) -> list[int]:
    try:
        text = Path(f"/proc/{master}/task/{master}/children").read_text()
    except OSError:
        return []
    return [int(pid) for pid in text.split()]


def _writers(srv: ServerProcess) -> list[int]:
    """Every writer process the master started (PostgreSQL), the current one last."""
    return [int(p) for p in re.findall(r"the writer process started \(pid (\d+)\)", srv.log_text())]


def _workers(srv: ServerProcess) -> list[int]:
    writers = set(_writers(srv))
    return [pid for pid in _children(srv.proc.pid) if pid not in writers]


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
    first, second = _workers(srv)
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
    first, second = _workers(srv)
    white, black = new_user("wk"), new_user("wk")
    w = _connect_to(srv, first, second, white)
    b = _connect_to(srv, second, first, black)
    assert w.cmd(f"JUEG:{black}").code == 200
    m = Match(b.cmd(f"ACEP:N:{white}").text, white, black, w, b)
    m.play("e4", "e5")
    os.kill(second, signal.SIGKILL)  # black's worker
    assert wait_for(lambda: len(_workers(srv)) == 2 and second not in _workers(srv))
    assert wait_for(lambda: "exited unexpectedly" in srv.log_text())
    m.b.close()
    m.b = _connect_to(srv, first, _workers(srv)[-1], black)
    m.play("Nf3")
    assert stat(m.b, m.pid).next_ply == 4
    assert m.board.fullmove_number == 2 and m.board.turn == chess.BLACK
    w.close()
    m.b.close()


def test_sigterm_stops_every_worker(two_workers):
    srv = two_workers
    workers = _workers(srv)
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
    from tests.e2e.test_server_process import run_server

    done = run_server("--database-url", database_url, "--port", "0", "--workers", "0")
    assert done.returncode == 2
    assert "workers must be at least 1" in done.stderr


def test_workers_end_when_the_master_is_killed(two_workers):
    srv = two_workers
    workers = _children(srv.proc.pid)  # with PostgreSQL's writer process
    srv.proc.kill()  # no chance to stop them: the kernel tells them (PR_SET_PDEATHSIG)
    srv.proc.wait(10)
    assert wait_for(lambda: not any(_alive(pid) for pid in workers), timeout=20)


def test_a_worker_that_does_not_stop_is_killed(database_url):
    srv = start_server(database_url, "--workers", "2", "--stop-grace", "1")
    try:
        assert wait_for(lambda: srv.log_text().count("serving") >= 2), srv.log_text()
        stuck, other = _workers(srv)
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


# -- PostgreSQL's writer process (store/writer_process.py) -----------------------------


def _held_while_stopped(writer: int, m: Match, notation: str) -> None:
    """The move is not answered while the writer process is stopped, and is once it runs:
    it went through the writer."""
    move = m.move(notation)
    conn = m.mover
    os.kill(writer, signal.SIGSTOP)
    try:
        conn.send(jgda(m.pid, m.ply, move))
        conn.sock.settimeout(1.0)
        with pytest.raises(TimeoutError):
            conn.reply()
    finally:
        os.kill(writer, signal.SIGCONT)
        conn.sock.settimeout(20)
    r = conn.reply()
    assert (r.code, r.text) == (208, ""), r
    m.board.push(move)


def _stopped(pid: int) -> bool:
    """Whether the process has come to a stop (SIGSTOP is delivered, not obeyed, at once)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "T"


def _linked(srv: ServerProcess) -> int:
    return srv.log_text().count("linked to the writer process")


def _game_across_workers(srv: ServerProcess, new_user, prefix: str) -> Match:  # type: ignore[no-untyped-def]
    """A new game whose two players are served by different workers."""
    first, second = _workers(srv)
    white, black = new_user(prefix), new_user(prefix)
    w, b = _connect_to(srv, first, second, white), _connect_to(srv, second, first, black)
    return challenge_and_accept(white, w, black, b)


def test_on_postgresql_one_writer_process_commits_the_workers_moves(
    two_workers, new_user, database_url
):
    srv = two_workers
    if database_url.startswith("sqlite"):
        # SQLite's workers commit their own moves: no third process.
        assert _writers(srv) == [] and len(_children(srv.proc.pid)) == 2
        assert "writer process" not in srv.log_text()
        return
    assert len(_writers(srv)) == 1 and len(_children(srv.proc.pid)) == 3
    assert wait_for(lambda: _linked(srv) == 2), srv.log_text()
    writer = _writers(srv)[0]
    m = _game_across_workers(srv, new_user, "wp")
    try:
        m.play("e4")
        _held_while_stopped(writer, m, "e5")
        _held_while_stopped(writer, m, "Nf3")
        assert stat(m.w, m.pid).next_ply == 4
    finally:
        m.w.close()
        m.b.close()


def test_a_dead_writer_process_fails_its_move_in_flight_and_is_replaced(
    two_workers, new_user, database_url
):
    srv = two_workers
    if database_url.startswith("sqlite"):
        assert _writers(srv) == []
        return
    assert wait_for(lambda: _linked(srv) == 2), srv.log_text()
    writer = _writers(srv)[0]
    m = _game_across_workers(srv, new_user, "wd")
    try:
        m.play("d4")
        os.kill(writer, signal.SIGSTOP)  # the move below reaches it and is never read
        assert wait_for(lambda: _stopped(writer))
        assert unix_unread(writer) == 0  # it has read all it was sent so far
        m.b.send(jgda(m.pid, m.ply, m.move("d5")))
        # The worker has passed the move on: it waits, unread, in the stopped writer's link.
        assert wait_for(lambda: unix_unread(writer) > 0), "the move did not reach the writer"
        os.kill(writer, signal.SIGKILL)
        r = m.b.reply()
        assert r.code == 401, r  # E_STORAGE: nothing confirmed, send it again
        # Sent again, the move is committed by the worker itself until a new link is up.
        m.play("d5")
        assert wait_for(lambda: len(_writers(srv)) == 2), srv.log_text()
        assert f"the writer process (pid {writer}) exited unexpectedly" in srv.log_text()
        m.play("c4")  # white's worker relinks too
        assert wait_for(lambda: _linked(srv) == 4, timeout=10), srv.log_text()
        _held_while_stopped(_writers(srv)[-1], m, "e6")
        assert stat(m.w, m.pid).next_ply == 5
    finally:
        m.w.close()
        m.b.close()
