"""Hardening of the transport: limits, login throttling, TLS, settings file.

Each test starts a server with the limit made small, so that hitting it is quick, and
checks the documented reply or close and the log line.
"""

from __future__ import annotations

import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ajedrez.server.settings import Limits, Settings, SettingsError, load
from ajedrez.service.throttle import LoginThrottle
from tests.support.common import PASSWORD, ROOT, wait_for, wait_for_async
from tests.support.espol import Conn, Reply
from tests.support.server import start_server, tls_port
from tests.support.sockets import peer_has_read

# -- settings ----------------------------------------------------------------------------


def test_settings_precedence_command_line_over_file_over_defaults(tmp_path: Path) -> None:
    path = tmp_path / "ajedrez.toml"
    path.write_text('port = 2000\nhost = "0.0.0.0"\nidle_timeout = 60\nmax_line = 4000\n')
    s = load(str(path), {"port": 2001, "host": None})
    assert (s.port, s.host) == (2001, "0.0.0.0")
    assert s.limits.idle_timeout == 60.0 and s.limits.max_line == 4000
    assert s.limits.request_deadline == Limits().request_deadline
    assert load(None, {}) == Settings()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("colour = 3\n", "unknown setting"),
        ("port = 'x'\n", "must be int"),
        ("idle_timeout = -1\n", "must not be negative"),
        ("port = \n", "not valid TOML"),
        ('tls_cert = "a.pem"\n', "go together"),
        ("metrics_max_connections = 0\n", "metrics_max_connections must be at least 1"),
        ("metrics_request_timeout = 0\n", "metrics_request_timeout must be above 0"),
        ("token_days = 0\n", "token_days must be at least 1"),
        ('binary_time_control = "soon"\n', "binary_time_control"),
    ],
)
def test_bad_settings_file_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(SettingsError, match=message):
        load(str(path), {})


def test_server_refuses_a_bad_config_file_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("colour = 3\n")
    done = subprocess.run(
        [sys.executable, "-m", "ajedrez", "--config", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["ajedrez-server: unknown setting(s): colour"]


@pytest.mark.parametrize("flag", ["--hash-tls-port", "--binary-tls-port"])
def test_a_seed_tls_listener_needs_the_certificate(tmp_path: Path, flag: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ajedrez", "--database-url", f"sqlite:///{tmp_path}/x", flag, "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert f"{flag} needs --tls-cert and --tls-key" in done.stderr


def test_server_reads_its_config_file(tmp_path: Path, database_url: str) -> None:
    path = tmp_path / "ajedrez.toml"
    path.write_text("max_connections_per_address = 1\n")
    srv = start_server(database_url, "--config", str(path))
    try:
        with srv.connect() as first, srv.connect() as second:
            assert first.cmd("HELP:QUIT").code == 110
            assert second.reply().code == 810
    finally:
        assert srv.stop() == 0


# -- connection limits -------------------------------------------------------------------


def test_connections_per_address_are_capped(database_url: str) -> None:
    srv = start_server(database_url, "--max-connections-per-address", "2")
    try:
        a, b = srv.connect(), srv.connect()
        with srv.connect() as third:
            r = third.reply()
            assert r.code == 810 and "too many connections from your address" in r.text
            assert third.is_closed()
        for c in (a, b):
            assert c.cmd("HELP:QUIT").code == 110
        a.close()

        # Once the server has noticed the close, the address has a free place again.
        def fourth_served() -> bool:
            with srv.connect() as c:
                c.send("HELP:QUIT")
                return c.reply().code == 110

        assert wait_for(fourth_served)
        b.close()
        assert wait_for(lambda: "too many connections from your address" in srv.log_text())
    finally:
        srv.stop()


def test_sessions_per_account_are_capped(database_url: str, new_user) -> None:  # type: ignore[no-untyped-def]
    """Issue 32: 1,000 streaming sessions of one account took every place of the server.
    The cap counts logged-in sessions over every process on the database."""
    srv = start_server(database_url, "--max-sessions-per-account", "3")
    try:
        ana, bob = new_user("a"), new_user("b")

        def log_in(name: str) -> tuple[Conn, Reply]:
            c = srv.connect()
            assert c.cmd(f"USER:{name}").code == 101
            return c, c.cmd(f"PASS:{PASSWORD}")

        held = [log_in(ana)[0] for _ in range(3)]
        held[0].cmd("EVEN")  # streaming sessions count as any other
        extra, r = log_in(ana)
        assert r.code == 810, r
        assert (
            r.text == f"too many sessions of the account '{ana}' (limit 3); end one of them first"
        )
        assert extra.is_closed()
        assert log_in(bob)[1].code == 102  # another account is not held back
        assert held[1].cmd("HELP:QUIT").code == 110
        held[0].close()

        def a_place_came_free() -> bool:
            c, r = log_in(ana)
            c.close()
            return r.code == 102

        assert wait_for(a_place_came_free)
        assert f"login of '{ana}' from" in srv.log_text()
    finally:
        srv.stop()


def test_a_trickled_line_meets_the_request_deadline(database_url: str) -> None:
    srv = start_server(database_url, "--request-deadline", "1.5", "--idle-timeout", "30")
    try:
        with srv.connect() as c:
            started = time.monotonic()
            closed_by_server = False
            for byte in b"HELP:JGDA":  # one byte every 0.4 s: never idle, never finished
                try:
                    c.send_raw(bytes([byte]))
                except OSError:
                    closed_by_server = True
                    break
                time.sleep(0.4)  # a slow client: real time passes between its bytes
            r = c.reply()
            assert r.code == 809 and "not finished" in r.text
            assert c.is_closed()
            assert closed_by_server or time.monotonic() - started < 30
        assert wait_for(lambda: "a line was not finished in time" in srv.log_text())
    finally:
        srv.stop()


def test_line_limit_is_smaller_before_login(database_url: str, new_user) -> None:  # type: ignore[no-untyped-def]
    name = new_user()
    srv = start_server(database_url)
    try:
        before, after = Limits().max_line_before_login, Limits().max_line
        assert before < after
        with srv.connect() as c:
            c.send_raw(b"HELP:" + b"x" * (before + 1 - 5) + b"\r\n")
            r = c.reply()
            assert r.code == 803 and str(before) in r.text
            assert c.cmd(f"USER:{name}").code == 101
            assert c.cmd(f"PASS:{PASSWORD}").code == 102
            line = b"JAUT:" + b"1" * (before + 100 - 5)  # too long before login, fine after
            c.send_raw(line + b"\r\n")
            assert c.reply().code == 802  # malformed fecha, but read as a line
    finally:
        srv.stop()


# -- login throttling --------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_throttle_delays_grow_and_cap() -> None:
    clock = FakeClock()
    t = LoginThrottle(base=2, maximum=15, forget_after=900, clock=clock)
    assert t.wait("1.2.3.4", "ana") == 0
    waits = []
    for _ in range(6):
        t.failed("1.2.3.4", "ana")
        wait = t.wait("1.2.3.4", "ana")
        waits.append(wait)
        clock.now += wait  # the attempt happens when allowed, and fails again
    assert waits == [2, 4, 8, 15, 15, 15]


def test_throttle_is_per_address_and_per_pair_not_per_name() -> None:
    clock = FakeClock()
    t = LoginThrottle(base=2, maximum=15, clock=clock)
    t.failed("1.2.3.4", "ana")
    assert t.wait("5.6.7.8", "ana") == 0  # a clean address: the name alone holds no one
    assert t.wait("1.2.3.4", "bob") == 2  # the same address, another name
    assert t.wait("5.6.7.8", "bob") == 0


def test_a_clean_address_is_never_held_up_by_strangers() -> None:
    clock = FakeClock()
    t = LoginThrottle(base=2, maximum=15, name_budget=30, clock=clock)
    for i in range(300):  # 300 failures on ana from 10 addresses
        t.failed(f"10.0.0.{i % 10}", "ana")
    assert t.wait("192.0.2.1", "ana") == 0  # the real user, from home


def test_past_the_name_budget_its_attackers_share_one_queue() -> None:
    clock = FakeClock()
    t = LoginThrottle(base=2, maximum=15, name_budget=30, name_window=3600, clock=clock)
    for i in range(30):
        t.failed(f"10.0.{i}.1", "ana")  # 30 addresses, one failure each
    clock.now += 20  # every address's own delay has passed
    assert t.wait("10.0.0.1", "bob") == 0  # another name: only the address's own delay
    assert t.wait("10.0.0.1", "ana") == 0  # the name's queue is free: one goes ...
    t.checking("10.0.0.1", "ana")
    assert t.wait("10.0.1.1", "ana") == 15  # ... and the others wait behind it
    assert t.wait("10.0.2.1", "ana") == 15
    clock.now += 15
    assert t.wait("10.0.2.1", "ana") == 0
    assert t.wait("192.0.2.1", "ana") == 0  # clean addresses pass throughout
    clock.now += 3601  # the window passes: the budget is whole again
    assert t.wait("10.0.3.1", "ana") == 0
    assert len(t) == 0  # and every record is forgotten


def test_one_check_per_address_at_a_time_in_arrival_order() -> None:
    t = LoginThrottle()
    called: list[str] = []
    waiters = {name: (lambda name=name: called.append(name)) for name in "abcd"}
    assert t.enter("1.2.3.4", waiters["a"])  # free: a holds it
    assert t.enter("5.6.7.8", waiters["d"])  # another address has its own slot
    assert not t.enter("1.2.3.4", waiters["b"])
    assert not t.enter("1.2.3.4", waiters["c"])
    assert t.queued("1.2.3.4") == 2
    t.cancel("1.2.3.4", waiters["b"])  # b's client left while it queued: b is dropped
    t.leave("1.2.3.4")  # a is done: the slot goes to c
    assert called == ["c"]
    t.leave("1.2.3.4")
    assert t.queued("1.2.3.4") == 0
    assert t.enter("1.2.3.4", waiters["a"])  # free again
    t.cancel("1.2.3.4", waiters["c"])  # not queued: nothing happens


def test_success_and_time_clear_the_throttle() -> None:
    clock = FakeClock()
    t = LoginThrottle(base=2, maximum=15, forget_after=900, name_window=600, clock=clock)
    t.failed("1.2.3.4", "ana")
    t.succeeded("1.2.3.4", "ana")  # the real user typed it right at last
    assert t.wait("1.2.3.4", "ana") == 0
    t.failed("1.2.3.4", "bob")
    clock.now += 901
    assert t.wait("1.2.3.4", "bob") == 0
    assert len(t) == 0


def _failed_login(srv, name: str) -> float:  # type: ignore[no-untyped-def]
    """Seconds from sending a wrong PASS to its reply."""
    with srv.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        started = time.monotonic()
        assert c.cmd("PASS:wrong guess").code == 815
        return time.monotonic() - started


def test_failed_logins_are_delayed_over_tcp(database_url: str, new_user) -> None:  # type: ignore[no-untyped-def]
    name = new_user()
    srv = start_server(database_url, "--login-delay-base", "0.6", "--login-delay-max", "1.2")
    try:
        _failed_login(srv, name)
        second = _failed_login(srv, name)
        third = _failed_login(srv, name)
        assert second >= 0.55 and third >= 1.15  # 0.6 s, then 1.2 s (the cap)
        assert wait_for(lambda: "delaying a login of" in srv.log_text())
        with srv.connect() as c:  # the right password still works, after the delay
            assert c.cmd(f"USER:{name}").code == 101
            assert c.cmd(f"PASS:{PASSWORD}").code == 102
        assert _failed_login(srv, name) < 0.55  # a success cleared the record
    finally:
        srv.stop()


def test_waiting_attackers_hold_no_threads(database_url: str, new_user) -> None:  # type: ignore[no-untyped-def]
    name = new_user()
    srv = start_server(
        database_url, "--login-delay-base", "5", "--max-connections-per-address", "100"
    )
    try:
        _failed_login(srv, name)
        conns = [srv.connect() for _ in range(40)]
        for c in conns:
            c.send(f"USER:{name}")
            c.reply()
            c.send("PASS:still wrong")  # each now waits its turn, 5 s apart
        # The server has read every PASS (and so queued or delayed each attempt).
        assert wait_for(lambda: peer_has_read([c.sock for c in conns]))
        assert wait_for(lambda: f"delaying a login of {name!r}" in srv.log_text())
        threads = len(list(Path(f"/proc/{srv.proc.pid}/task").iterdir()))
        assert threads < 40, threads  # the 40 waiters are timers, not threads
        with srv.connect() as other:  # the server goes on serving others meanwhile
            assert other.cmd("HELP:QUIT").code == 110
        for c in conns:
            c.close()
    finally:
        srv.stop()


# -- TLS ---------------------------------------------------------------------------------


def test_tls_listener_serves_the_protocol(database_url, new_user, tls_certificate) -> None:  # type: ignore[no-untyped-def]
    cert, key = tls_certificate
    name = new_user()
    srv = start_server(
        database_url, "--tls-cert", str(cert), "--tls-key", str(key), "--tls-port", "0"
    )
    try:
        context = ssl.create_default_context(cafile=str(cert))
        with Conn(srv.host, tls_port(srv), tls=context) as c:
            assert c.sock.version() in ("TLSv1.2", "TLSv1.3")
            assert c.cmd(f"USER:{name}").code == 101
            assert c.cmd(f"PASS:{PASSWORD}").code == 102
            assert c.cmd("JAUT:99999999999").code == 201
        with srv.connect() as plain:  # the clear listener goes on as well
            assert plain.cmd("HELP:QUIT").code == 110
    finally:
        assert srv.stop() == 0


def test_tls_listener_refuses_a_clear_text_client(database_url, tls_certificate) -> None:  # type: ignore[no-untyped-def]
    cert, key = tls_certificate
    srv = start_server(
        database_url, "--tls-cert", str(cert), "--tls-key", str(key), "--tls-port", "0"
    )
    try:
        with Conn(srv.host, tls_port(srv), timeout=15) as c:
            c.send("HELP")
            assert c.is_closed(timeout=15)
        with srv.connect() as plain:
            assert plain.cmd("HELP:QUIT").code == 110
    finally:
        srv.stop()


def test_clear_text_on_a_public_address_is_warned_about(database_url) -> None:  # type: ignore[no-untyped-def]
    srv = start_server(database_url, "--host", "0.0.0.0")
    try:
        assert wait_for(lambda: "passwords cross the network in clear" in srv.log_text())
    finally:
        srv.stop()
    loopback = start_server(database_url)
    try:
        with loopback.connect() as c:  # by now every start-up line has been logged
            assert c.cmd("HELP:QUIT").code == 110
        assert "in clear" not in loopback.log_text()
    finally:
        loopback.stop()


def test_a_vanishing_tls_client_does_not_hurt_others(database_url, tls_certificate) -> None:  # type: ignore[no-untyped-def]
    cert, key = tls_certificate
    srv = start_server(
        database_url, "--tls-cert", str(cert), "--tls-key", str(key), "--tls-port", "0"
    )
    try:
        port = tls_port(srv)
        stalled = [Conn(srv.host, port, timeout=5) for _ in range(5)]  # no handshake
        half = Conn(srv.host, port, timeout=5)
        half.send_raw(b"\x16\x03\x01\x02\x00\x01")  # the start of a ClientHello, then nothing
        done = threading.Event()

        def talk() -> None:
            context = ssl.create_default_context(cafile=str(cert))
            with Conn(srv.host, port, tls=context) as c:
                assert c.cmd("HELP:QUIT").code == 110
            done.set()

        threading.Thread(target=talk, daemon=True).start()
        assert done.wait(20)
        for c in [*stalled, half]:
            c.close()
    finally:
        srv.stop()


# -- the cap on password hashes ------------------------------------------------------------


class CountingAccounts:
    """Stands in for the account service: each SUBS "hashes" for 0.2 s."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.threads: set[str] = set()
        self.lock = threading.Lock()
        self.subscribed = 0
        self.subscribed_before_login = -1

    def subscribe(self, name: str, password: str, comment: str, address: str = "") -> None:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.threads.add(threading.current_thread().name)
        time.sleep(0.2)  # the hash's own time, in which other SUBS may come
        with self.lock:
            self.running -= 1
            self.subscribed += 1

    def check_active(self, name: str) -> None:
        pass

    def login(self, name: str, password: str):  # type: ignore[no-untyped-def]
        from ajedrez.domain.accounts import Caller

        with self.lock:
            self.subscribed_before_login = self.subscribed
        return Caller(1, name)


class NoGames:
    """Stands in for the game service, which SUBS never uses."""


class NobodyCounted:
    """Stands in for the presence of logged-in sessions (``domain/presence.py``), which
    needs a database: a login is never capped, a logout changes nothing."""

    def arrive(self, user_id: int, name: str = "") -> None:
        pass

    def depart(self, user_id: int) -> int:
        return 0

    def vacate(self) -> int:
        return 0


def test_password_hashes_are_capped() -> None:
    import asyncio

    from ajedrez.espol.connection import Connection
    from ajedrez.server.reactor import Listener, Reactor, make_service

    accounts = CountingAccounts()

    async def scenario() -> list[bytes]:
        limits = Limits(max_subscription_hashes=2, subs_per_address=100)
        service = make_service(accounts, NoGames(), None, limits, command_threads=16)  # type: ignore[arg-type]
        reactor = Reactor(service, "127.0.0.1", [Listener("plain", Connection, 0)], limits)
        (_, host, port), *_ = await reactor.start()

        async def subscribe(i: int) -> bytes:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(f"SUBS:cap{i}:secret:\r\n".encode())
            header = await reader.readexactly(6)
            writer.close()
            return header

        headers = await asyncio.gather(*(subscribe(i) for i in range(8)))
        reactor.stop()
        await reactor.serve_until_stopped()
        return headers

    headers = asyncio.run(scenario())
    assert all(h[:3] == b"103" for h in headers), headers
    assert accounts.most == 2  # 8 at once, 16 threads free, yet never more than 2 hashing
    # ...and always the same 2 threads, so at most 2 allocator arenas keep argon2 buffers.
    assert len(accounts.threads) == 2, accounts.threads


def test_a_login_does_not_queue_behind_subscription_hashes() -> None:
    import asyncio

    from ajedrez.espol.connection import Connection
    from ajedrez.server.reactor import Listener, Reactor, make_service

    accounts = CountingAccounts()

    async def scenario() -> bytes:
        limits = Limits(max_subscription_hashes=1, subs_per_address=100)
        service = make_service(
            accounts,  # type: ignore[arg-type]
            NoGames(),  # type: ignore[arg-type]
            None,  # type: ignore[arg-type]
            limits,
            command_threads=16,
            presence=NobodyCounted(),  # type: ignore[arg-type]
        )
        reactor = Reactor(service, "127.0.0.1", [Listener("plain", Connection, 0)], limits)
        (_, host, port), *_ = await reactor.start()
        flood = []
        for i in range(10):  # 10 SUBS of 0.2 s each, one at a time: 2 s of hashing
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(f"SUBS:flood{i}:secret:\r\n".encode())
            flood.append((reader, writer))

        def flood_waits() -> bool:  # one SUBS hashes, the nine others wait their turn
            conns = reactor._connections
            return len(conns) == 10 and all(c.busy for c in conns) and accounts.running == 1

        assert await wait_for_async(flood_waits)
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"USER:ana\r\nPASS:secret\r\n")
        await reader.readexactly(6 + 3)  # 101 ana
        header = await reader.readexactly(6)
        for r, w in flood:
            await r.readexactly(6)
            w.close()
        writer.close()
        reactor.stop()
        await reactor.serve_until_stopped()
        return header

    header = asyncio.run(scenario())
    assert header[:3] == b"102", header
    # The login was checked while most of the flood still waited for its hash.
    assert 0 <= accounts.subscribed_before_login <= 3, accounts.subscribed_before_login


# -- graceful stop ---------------------------------------------------------------------------


def test_sigterm_lets_a_command_in_progress_finish(database_url: str, new_user) -> None:  # type: ignore[no-untyped-def]
    name = new_user()
    srv = start_server(database_url, "--login-delay-base", "3")
    _failed_login(srv, name)
    with srv.connect() as busy, srv.connect() as idle:
        assert idle.cmd("HELP:QUIT").code == 110
        assert busy.cmd(f"USER:{name}").code == 101
        busy.send(f"PASS:{PASSWORD}")  # in progress: waits 3 s for its throttle slot
        assert wait_for(lambda: f"delaying a login of {name!r}" in srv.log_text())
        srv.proc.terminate()
        assert idle.is_closed(timeout=2)  # idle sessions end at once
        r = busy.reply()  # the command in progress still completes and answers
        assert (r.code, r.text) == (102, name)
        assert busy.is_closed(timeout=10)
    assert srv.proc.wait(15) == 0
    assert wait_for(lambda: "server stopped" in srv.log_text())
