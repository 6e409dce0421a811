"""The daemon as a process: connection limit, idle timeout, signals, start-up failures and
the schema created on an empty SQLite path (contract section 5)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest
from sqlalchemy import inspect

from ajedrez.server.loops import EVENT_LOOPS
from ajedrez.store.db import Database
from ajedrez.store.migrate import is_current
from tests.support.common import PASSWORD, ROOT, wait_for
from tests.support.espol import Conn
from tests.support.play import challenge_and_accept, records, stat
from tests.support.server import start_server

UNREACHABLE_PG = "postgresql+psycopg://postgres@127.0.0.1:1/test"


def run_server(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the server to completion (for start-ups that must fail)."""
    return subprocess.run(
        [sys.executable, "-m", "ajedrez", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if " ERROR " in line or " CRITICAL " in line]


def login(conn: Conn, name: str) -> None:
    assert conn.cmd(f"USER:{name}").code == 101
    assert conn.cmd(f"PASS:{PASSWORD}").code == 102


def admitted(srv, name: str, keep: list[Conn]) -> bool:
    """Connect and log in; False when refused with E_BUSY. The connection is kept open
    (closing a probe would itself hold a slot until the server sees the close)."""
    c = srv.connect(timeout=5)
    r = c.cmd(f"USER:{name}")
    if r.code == 402:
        c.close()
        return False
    assert r.code == 101, r
    assert c.cmd(f"PASS:{PASSWORD}").code == 102
    keep.append(c)
    return True


# -- connection limit ----------------------------------------------------------------------


def test_max_connections(database_url, db, new_user):
    name = new_user()
    srv = start_server(database_url, "--max-connections", "2")
    try:
        a, b = srv.connect(), srv.connect()
        login(a, name)
        assert b.cmd("HELP:QUIT").code == 110  # admitted, even before login
        # Full: the newcomer gets in, and the one connection not logged in makes room.
        third = srv.connect(timeout=5)
        r = b.reply()
        assert r.code == 811 and "to make room" in r.text, r
        assert b.is_closed()
        login(third, name)
        # Full of logged-in sessions: the next one is refused.
        with srv.connect(timeout=5) as fourth:
            r = fourth.reply()
            assert r.code == 402
            assert not r.more and r.text and "\n" not in r.text
            assert fourth.is_closed()
        # The two logged-in sessions are not disturbed by the refusal.
        assert a.cmd("JAUT:99999999999").code == 201
        assert third.cmd("HELP:QUIT").code == 110
        third.send("QUIT")
        assert third.is_closed()
        fresh: list[Conn] = []
        assert wait_for(lambda: admitted(srv, name, fresh))
        assert fresh[0].cmd("JAUT:99999999999").code == 201
        fresh[0].close()
        a.close()
    finally:
        assert srv.stop() == 0


# -- idle timeout --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def idle_server(database_url, db):
    srv = start_server(database_url, "--idle-timeout", "1")
    yield srv
    srv.stop()


def test_idle_connection_is_closed(idle_server):
    with idle_server.connect() as c:
        assert c.is_closed(timeout=15)
    assert wait_for(lambda: "closing idle connection" in idle_server.log_text())


def test_idle_logged_in_connection_is_closed(idle_server, new_user):
    name = new_user()
    with idle_server.connect() as c:
        login(c, name)
        assert c.is_closed(timeout=15)


def test_partial_line_does_not_keep_a_connection_alive_forever(idle_server):
    with idle_server.connect() as c:
        c.send_raw(b"HELP")
        r = c.reply()
        assert r.code == 809 and "not finished" in r.text
        assert c.is_closed(timeout=15)


def test_idle_timeout_does_not_affect_a_talking_client(idle_server):
    with idle_server.connect() as c:
        for _ in range(6):  # about 1.2 s in all, each gap well under the timeout
            assert c.cmd("HELP:QUIT").code == 110
            time.sleep(0.2)  # real time: the talk must outlast the 1 s idle timeout
        assert c.cmd("HELP:QUIT").code == 110


# -- signals -------------------------------------------------------------------------------


@pytest.mark.parametrize("loop", EVENT_LOOPS)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly(database_url, db, new_user, sig, loop):
    name = new_user()
    srv = start_server(database_url, "--event-loop", loop)
    assert f"event loop: {loop}" in srv.log_text()
    for partial in (b"USER:" + name.encode(), b"HELP\r\nJAU"):  # clients that vanish mid-line
        c = srv.connect()
        c.send_raw(partial)
        c.close()
    with srv.connect() as idle, srv.connect() as logged:
        login(logged, name)
        assert logged.cmd("JAUT:99999999999").code == 201
        srv.proc.send_signal(sig)
        assert srv.proc.wait(30) == 0
        assert idle.is_closed()
        assert logged.is_closed()
    assert wait_for(lambda: "server stopped" in srv.log_text())
    assert "Traceback" not in srv.log_text()
    with pytest.raises(OSError), socket.create_connection((srv.host, srv.port), timeout=5):
        pass


# -- event loops ---------------------------------------------------------------------------


@pytest.mark.parametrize("loop", EVENT_LOOPS)
def test_each_event_loop_plays_a_game_to_mate(database_url, db, new_user, loop):
    """uvloop is the default where installed; asyncio's loop must serve just as well."""
    white, black = new_user("el"), new_user("el")
    srv = start_server(database_url, "--event-loop", loop)
    try:
        assert f"event loop: {loop}" in srv.log_text()
        with srv.connect() as w, srv.connect() as b:
            login(w, white)
            login(b, black)
            m = challenge_and_accept(white, w, black, b)
            m.play("f3", "e5", "g4", "Qh4")  # fool's mate
            assert stat(w, m.pid).status == 2
            assert [r.split(":")[1] for r in records(b.cmd_all(f"SPAR:{m.pid}:2"), 207)] == [
                "g2g4",
                "d8h4",
            ]
            assert w.cmd("HELP:QUIT").code == 110
    finally:
        assert srv.stop() == 0
    assert "Traceback" not in srv.log_text()


def test_an_unknown_event_loop_is_refused(database_url):
    done = run_server("--database-url", database_url, "--event-loop", "trio")
    assert done.returncode != 0
    assert "--event-loop" in done.stderr


# -- start-up ------------------------------------------------------------------------------


def test_port_taken(database_url, db):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = run_server(
            "--database-url", database_url, "--host", "127.0.0.1", "--port", str(port)
        )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    errors = error_lines(done.stderr)
    assert len(errors) == 1, done.stderr
    assert str(port) in errors[0]
    assert "cannot listen" in errors[0]
    assert "listening on" not in done.stderr


def test_unreachable_database(tmp_path):
    done = run_server(
        "--database-url", UNREACHABLE_PG, "--host", "127.0.0.1", "--port", "0", timeout=120
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    errors = error_lines(done.stderr)
    assert len(errors) == 1, done.stderr
    assert "database" in errors[0]
    assert "listening on" not in done.stderr


def test_empty_sqlite_path_gets_the_schema(tmp_path):
    path = tmp_path / "new" / "dir" / "ajedrez.sqlite3"
    assert not path.parent.exists()
    url = f"sqlite:///{path}"
    srv = start_server(url)
    try:
        assert path.exists()
        database = Database(url, create=False)
        try:
            assert is_current(database)
            tables = set(inspect(database.engine).get_table_names())
            assert {"users", "subscriptions", "game_requests", "games", "moves"} <= tables
        finally:
            database.dispose()
        with srv.connect() as c:  # and the server works on it
            assert c.cmd("SUBS:primero:clave:").code == 103
            assert c.cmd("HELP:QUIT").code == 110
    finally:
        assert srv.stop() == 0
