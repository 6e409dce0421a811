"""Availability against hostile clients (issue: lockout by strangers, pre-login floods,
password hashing before login). Each test plays the attack over real sockets against a
real server process; the clients come from many loopback addresses (127.0.0.0/8)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games
from ajedrez.store.db import Database
from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.espol import Closed, Conn
from tests.support.server import ServerProcess, start_server

WRONG = "PASS:not the password"


@pytest.fixture
def srv(database_url: str) -> Iterator[ServerProcess]:
    server = start_server(database_url)
    yield server
    server.stop()


def timed_login(server: ServerProcess, name: str, source: str) -> float:
    """Seconds a correct login from ``source`` takes."""
    with server.connect(timeout=60, source=source) as c:
        started = time.monotonic()
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102
        return time.monotonic() - started


def fail_once(server: ServerProcess, name: str, source: str) -> None:
    with server.connect(timeout=60, source=source) as c:
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(WRONG).code == 815


# -- 1. nobody can lock a chosen user out ------------------------------------------------


def test_held_attempts_from_a_stranger_do_not_delay_the_user(srv, new_user):
    victim = new_user("victim")
    for _ in range(4):
        fail_once(srv, victim, "127.0.0.2")
    held = []
    for _ in range(31):  # the attacker's guesses wait their turn, connections open
        c = srv.connect(timeout=60, source="127.0.0.2")
        c.send(f"USER:{victim}")
        c.send(WRONG)
        held.append(c)
    # Before: the victim's correct login waited 479 s behind these.
    assert timed_login(srv, victim, "127.0.0.3") < 5.0
    for c in held:
        c.close()


def test_dropped_attempts_from_many_addresses_do_not_delay_the_user(srv, new_user):
    victim = new_user("victim")
    for i in range(300):  # sent and dropped at once, from 10 addresses
        c = srv.connect(timeout=60, source=f"127.0.1.{i % 10 + 1}")
        c.send(f"USER:{victim}\r\n{WRONG}")
        c.close()
    assert timed_login(srv, victim, "127.0.2.1") < 5.0  # before: 4,514 s


def test_a_burst_from_one_address_is_checked_one_at_a_time(database_url, new_user):
    name = new_user()
    server = start_server(database_url, "--login-delay-base", "0.5", "--login-delay-max", "1")
    try:
        conns = [server.connect(timeout=60, source="127.0.3.1") for _ in range(32)]
        for c in conns:
            c.send(f"USER:{name}")
            c.send(WRONG)
        started = time.monotonic()
        for c in conns:
            assert c.reply().code == 101
        answered = 0
        for c in conns:
            c.sock.settimeout(max(0.01, started + 1.5 - time.monotonic()))
            try:
                assert c.reply().code == 815
                answered += 1
            except TimeoutError:
                break
        # Before: all 32 were checked within 0.5 s. Now one goes, then each waits its turn
        # (0.5 s after the first failure, 1 s after the next ones).
        assert answered <= 4, answered
        for c in conns:
            c.close()
    finally:
        server.stop()


def test_a_dropped_attempt_frees_its_place(srv, new_user):
    name = new_user()
    fail_once(srv, name, "127.0.4.1")  # the address's next check waits 2 s
    for _ in range(20):  # queued behind that delay, then gone
        with srv.connect(timeout=10, source="127.0.4.1") as c:
            c.send(f"USER:{name}\r\n{WRONG}")
            c.sock.shutdown(socket.SHUT_WR)  # gone: the server takes it so (eof_received)
            assert c.reply().code == 101
            assert c.is_closed(timeout=10)  # the server let the attempt go, and closed
    # Only the address's own 2 s remain; before, each dropped attempt kept its slot
    # (2, 4, 8, 15, 15 ... s further).
    assert timed_login(srv, name, "127.0.4.1") < 4.0


def test_unsu_with_a_wrong_password_is_a_failed_login(srv, new_user):
    name = new_user()
    with srv.connect(source="127.0.5.1") as c:
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102
        r = c.cmd(f"UNSU:{name}:a guess")
        assert r.code == 815, r
        assert c.is_closed()  # no second guess on this session
    assert wait_for(lambda: f"failed login (UNSU) for '{name}'" in srv.log_text())
    with srv.connect(source="127.0.5.1") as c:  # the address now waits before its check
        assert c.cmd(f"USER:{name}").code == 101
        started = time.monotonic()
        assert c.cmd(f"PASS:{PASSWORD}").code == 102
        assert time.monotonic() - started >= 1.5
    assert wait_for(lambda: "delaying a login of" in srv.log_text())


def test_a_pipelined_second_password_check_finds_the_slot_free(srv, new_user):
    name = new_user()
    with srv.connect(timeout=10, source="127.0.5.2") as c:
        c.send_raw(f"USER:{name}\r\nPASS:{PASSWORD}\r\nUNSU:{name}:{PASSWORD}\r\n".encode())
        assert [c.reply().code for _ in range(3)] == [101, 102, 104]
    assert timed_login(srv, new_user(), "127.0.5.2") < 5.0  # the address is not stuck


# -- 2. connections that never log in -----------------------------------------------------


def test_a_connection_that_does_not_log_in_is_closed(database_url):
    server = start_server(database_url, "--login-grace", "1")
    try:
        with server.connect() as silent, server.connect() as chatty:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:  # one complete HELP line at a time
                try:
                    chatty.send("HELP:QUIT")
                    if chatty.reply().code == 811:
                        break
                except (Closed, OSError):
                    break
                time.sleep(0.2)  # real time: talking must not stretch the 1 s login grace
            assert time.monotonic() < deadline
            r = silent.reply()
            assert r.code == 811 and "no login within 1 s" in r.text, r
            assert silent.is_closed()
    finally:
        server.stop()


def test_a_flood_of_silent_connections_does_not_keep_a_player_out(
    srv, accounts: Accounts, games: Games, new_user
):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = accounts.login(ana, PASSWORD), accounts.login(bob, PASSWORD)
    games.challenge(b.id, ana)
    gid = games.accept(a.id, "B", bob)
    with srv.connect() as player:  # logged in before the flood: never dropped
        assert player.cmd(f"USER:{bob}").code == 101
        assert player.cmd(f"PASS:{PASSWORD}").code == 102
        flood = [
            Conn(srv.host, srv.port, timeout=30, source=f"127.0.9.{i % 40 + 1}")
            for i in range(1000)
        ]
        started = time.monotonic()
        with srv.connect(timeout=10, source="127.0.10.1") as newcomer:
            assert newcomer.cmd(f"USER:{ana}").code == 101
            assert newcomer.cmd(f"PASS:{PASSWORD}").code == 102
            r = newcomer.cmd(f"JGDA:P{gid:07d}:1:e2e4:0:1228:0")
            assert r.code == 208, r
        assert time.monotonic() - started < 3.0
        assert player.cmd(f"STAT:P{gid:07d}").code == 206  # still connected
        for c in flood:
            c.close()
    assert "dropping" in srv.log_text() and "not logged in, to make room" in srv.log_text()


# -- 3. password hashing before login ----------------------------------------------------


def test_subs_is_rate_limited_per_address(database_url):
    server = start_server(database_url, "--subs-per-address", "5")
    try:
        codes = []
        for i in range(7):
            with server.connect(source="127.0.6.1") as c:
                codes.append(c.cmd(f"SUBS:{unique_name('rl')}{i}:secret:").code)
        assert codes[:5] == [103] * 5 and codes[5:] == [812, 812], codes
        with server.connect(source="127.0.6.2") as c:  # another address is not affected
            assert c.cmd(f"SUBS:{unique_name('rl')}:secret:").code == 103
    finally:
        server.stop()


def test_pending_subscriptions_are_capped(own_db: tuple[str, Database]):
    url, _database = own_db
    server = start_server(
        url,
        "--max-pending-per-address",
        "2",
        "--max-pending-subscriptions",
        "3",
        "--subs-per-address",
        "100",
    )
    try:

        def subs(source: str, name: str) -> tuple[int, str]:
            with server.connect(source=source) as c:
                r = c.cmd(f"SUBS:{name}:secret:")
                return r.code, r.text

        assert subs("127.0.7.1", "p1")[0] == 103
        assert subs("127.0.7.1", "p2")[0] == 103
        code, text = subs("127.0.7.1", "p3")
        assert code == 813 and "from your address" in text, text
        assert subs("127.0.7.2", "p4")[0] == 103
        code, text = subs("127.0.7.3", "p5")
        assert code == 813 and "3 subscription requests" in text, text
    finally:
        server.stop()
