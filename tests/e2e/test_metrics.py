"""The HTTP listener for operators (docs/operations.md, "Health and metrics"): /healthz and
/metrics of a real server process, in one process and with ``--workers 2``, on the store
under test. Each test has a database of its own, so the counts are exact."""

from __future__ import annotations

import asyncio
import gzip
import http.client
import os
import re
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import create_engine, make_url, text

from ajedrez.domain.accounts import Accounts
from ajedrez.server.monitor import Checks, WebServer, monitor_app
from ajedrez.server.prefork import open_listener
from ajedrez.store.db import Database
from ajedrez.store.migrate import head_revision, upgrade
from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.databases import fresh_database, on_postgres
from tests.support.espol import Conn
from tests.support.play import Match, challenge_and_accept
from tests.support.server import ServerProcess, start_server

MONITOR = re.compile(r"health and metrics on http://(\S+?):(\d+)/healthz")

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@dataclass
class Monitored:
    srv: ServerProcess
    base: str  # http://host:port
    db: Database
    opened: list[Conn]

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.base + path, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def samples(self) -> Samples:
        status, body = self.get("/metrics")
        assert status == 200, body
        out: Samples = {}
        for family in text_string_to_metric_families(body):
            for s in family.samples:
                out[(s.name, frozenset(s.labels.items()))] = s.value
        return out

    def value(self, name: str, **labels: str) -> float:
        return self.samples().get((name, frozenset(labels.items())), 0.0)

    def login(self, name: str) -> Conn:
        conn = self.srv.connect()
        self.opened.append(conn)
        assert conn.cmd(f"USER:{name}").code == 101
        r = conn.cmd(f"PASS:{PASSWORD}")
        assert r.kind == "S", r
        return conn

    def user(self) -> str:
        name = unique_name("m")
        Accounts(self.db).add_user(name, PASSWORD, "")
        return name


def _monitored(own_db: tuple[str, Database], *extra: str) -> Iterator[Monitored]:
    url, db = own_db
    srv = start_server(url, "--metrics-port", "0", *extra)
    found: list[re.Match[str]] = []
    assert wait_for(
        lambda: bool(found.extend(filter(None, map(MONITOR.search, srv.log))) or found)
    ), srv.log_text()
    host, port = found[0].group(1), int(found[0].group(2))
    m = Monitored(srv, f"http://{host}:{port}", db, [])
    try:
        yield m
    finally:
        for conn in m.opened:
            conn.close()
        srv.stop()


@pytest.fixture(params=[1, 2], ids=["one-process", "workers-2"])
def monitored(request: pytest.FixtureRequest, own_db: tuple[str, Database]) -> Iterator[Monitored]:
    yield from _monitored(own_db, "--workers", str(request.param))


def test_healthz_says_ok_while_the_database_answers_at_head(monitored: Monitored) -> None:
    assert monitored.get("/healthz") == (200, "ok\n")
    assert monitored.get("/nothing")[0] == 404


def _request(
    m: Monitored, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    host, port = m.base.removeprefix("http://").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_the_listener_answers_in_plain_text_to_what_it_does_not_serve(
    own_db: tuple[str, Database],
) -> None:
    """404 and 405 in its own words, HEAD as GET without the body, /metrics in the
    format and encoding the scraper asks for."""
    plain = "text/plain; charset=utf-8"
    for m in _monitored(own_db):
        status, headers, body = _request(m, "GET", "/healthz")
        assert (status, headers["content-type"], body) == (200, plain, b"ok\n")
        status, headers, body = _request(m, "HEAD", "/healthz")
        assert (status, headers["content-type"], body) == (200, plain, b"")
        assert _request(m, "GET", "/healthz?from=lb")[2] == b"ok\n"

        status, headers, body = _request(m, "GET", "/nothing")
        assert (status, headers["content-type"]) == (404, plain)
        assert body == b"not found: try /healthz or /metrics\n"
        assert _request(m, "HEAD", "/nothing")[0] == 404

        for method, path in [("POST", "/healthz"), ("PUT", "/metrics"), ("DELETE", "/x")]:
            status, headers, body = _request(m, method, path)
            assert (status, headers["allow"], body) == (405, "GET, HEAD", b"only GET and HEAD\n")

        status, headers, body = _request(m, "HEAD", "/metrics")
        assert (status, body) == (200, b"")
        assert headers["content-type"].startswith("text/plain; version=0.0.4")
        status, headers, body = _request(m, "GET", "/metrics", {"Accept-Encoding": "gzip"})
        assert (status, headers["content-encoding"]) == (200, "gzip")
        assert b"ajedrez_moves_committed_total" in gzip.decompress(body)
        accept = {"Accept": "application/openmetrics-text; version=1.0.0"}
        status, headers, body = _request(m, "GET", "/metrics", accept)
        assert headers["content-type"].startswith("application/openmetrics-text")
        assert body.endswith(b"# EOF\n")
        assert "health and metrics" in m.srv.log_text()
        assert "GET /healthz" not in m.srv.log_text()  # no access log


def test_the_listener_serves_on_a_running_loop_too(tmp_path: Path) -> None:
    """What another HTTP front end reuses: the monitor's application on the caller's loop,
    a health check that raises answered as a failure, and a stop that lets the port go."""

    def broken() -> tuple[bool, str]:
        raise RuntimeError("no database here\nsecond line")

    async def scenario() -> tuple[int, str]:
        checks = Checks(broken, str(tmp_path))
        server = WebServer(monitor_app(checks), open_listener("127.0.0.1", 0, 8))
        await server.start()
        host, port = server.address
        try:
            url = f"http://{host}:{port}/healthz"

            def get() -> tuple[int, str]:
                try:
                    with urllib.request.urlopen(url, timeout=10) as r:
                        return r.status, r.read().decode()
                except urllib.error.HTTPError as e:
                    return e.code, e.read().decode()

            return await asyncio.get_running_loop().run_in_executor(None, get)
        finally:
            await server.stop()
            checks.close()
            with socket.socket() as s:
                assert s.connect_ex((host, port)) != 0

    assert asyncio.run(scenario()) == (503, "health check failed: no database here\n")


def test_one_scrape_counts_what_every_process_did(monitored: Monitored) -> None:
    """Moves, games, commands, replies, logins, connections and events, with ``--workers
    2`` spread over both workers (each connection goes to whichever accepts it)."""
    m = monitored
    white, black, watcher = m.user(), m.user(), m.user()

    bad = m.srv.connect()
    m.opened.append(bad)
    assert bad.cmd(f"USER:{white}").code == 101
    assert bad.cmd("PASS:not-the-password").code == 815

    streams = [m.login(white), m.login(black)]
    for s in streams:
        assert s.cmd("EVEN").code == 219
    game = challenge_and_accept(white, m.login(white), black, m.login(black))
    assert isinstance(game, Match)
    game.play("e4", "e5", "Nf3", "Nc6")
    assert game.w.cmd(f"REND:{game.pid}:{black}").kind == "S"
    lurker = m.login(watcher)  # a connection that only logs in
    open_now = len(m.opened)  # the failed login's was closed by the server

    def counted() -> bool:
        return (
            m.value("ajedrez_moves_committed_total") == 4
            and m.value("ajedrez_games_ended_total", reason="resignation") == 1
        )

    assert wait_for(counted), m.samples()
    s = m.samples()

    def v(name: str, **labels: str) -> float:
        return s.get((name, frozenset(labels.items())), 0.0)

    assert v("ajedrez_games_started_total") == 1
    assert v("ajedrez_timeouts_total") == 0
    assert v("ajedrez_commands_total", command="JGDA") == 4
    assert v("ajedrez_command_seconds_count", command="JGDA") == 4
    assert v("ajedrez_command_seconds_bucket", command="JGDA", le="+Inf") == 4
    assert v("ajedrez_replies_total", code="208") == 4
    assert v("ajedrez_replies_total", code="815") == 1
    assert v("ajedrez_login_failures_total") == 1
    assert v("ajedrez_commands_total", command="PASS") == 6
    # Two streams each got the four moves (FIN_DE_TURNO), the resignation and the end.
    assert v("ajedrez_events_delivered_total", mode="live") >= 2 * 6
    assert v("ajedrez_event_lag_seconds_count") == v("ajedrez_events_delivered_total", mode="live")
    assert v("ajedrez_connections_opened_total", protocol="espol") == open_now
    assert wait_for(lambda: m.value("ajedrez_connections", protocol="espol") == open_now - 1)
    assert v("ajedrez_store_errors_total", where="command") == 0

    lurker.close()
    for conn in m.opened:
        conn.close()
    assert wait_for(lambda: m.value("ajedrez_connections", protocol="espol") == 0)


def test_healthz_fails_when_the_schema_is_not_the_releases(
    own_db: tuple[str, Database],
) -> None:
    for m in _monitored(own_db):
        with m.db.engine.begin() as c:
            c.execute(text("UPDATE alembic_version SET version_num = '0007'"))
        status, body = m.get("/healthz")
        assert status == 503
        assert "0007" in body and str(head_revision()) in body and "db upgrade" in body
        with m.db.engine.begin() as c:
            c.execute(text("UPDATE alembic_version SET version_num = '0099'"))
        status, body = m.get("/healthz")
        assert status == 503 and "upgraded by a newer release (revision 0099" in body
        with m.db.engine.begin() as c:
            c.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": head_revision()})
        assert m.get("/healthz") == (200, "ok\n")


@contextmanager
def database_down(url: str) -> Iterator[None]:
    """The database at ``url`` does not answer until the block ends. PostgreSQL: it takes
    no connection and its sessions are ended. SQLite: its path names a directory (the file
    set aside, its -wal and -shm left in place), which no new connection can open, root's
    neither."""
    if on_postgres():
        name = make_url(url).database
        shared = create_engine(
            os.environ["AJEDREZ_TEST_DATABASE_URL"], isolation_level="AUTOCOMMIT"
        )
        assert name and name != shared.url.database  # never the database other tests use
        try:
            with shared.connect() as c:
                c.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
                c.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d"
                    ),
                    {"d": name},
                )
            try:
                yield
            finally:
                with shared.connect() as c:
                    c.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true'))
        finally:
            shared.dispose()
        return
    path = Path(make_url(url).database or "")
    aside = path.with_name(path.name + ".aside")
    path.rename(aside)
    path.mkdir()
    try:
        yield
    finally:
        path.rmdir()
        aside.rename(path)


# SQLite: a process reads through the connections it holds open, which go on reading the
# file whatever becomes of its path, and a lock of another process does not stop a read in
# WAL mode (SQLite's shared-memory locks would, but only after ten seconds of retries). Only
# the master of --workers, which opens a new connection for each check, meets a failure
# there that no mock makes.
@pytest.mark.parametrize("workers", [1, 2] if on_postgres() else [2], ids=lambda n: f"workers-{n}")
def test_healthz_fails_while_the_database_does_not_answer(workers: int, tmp_path: Path) -> None:
    with fresh_database(tmp_path, "health") as url:
        db = Database(url)
        try:
            upgrade(db)
            for m in _monitored((url, db), "--workers", str(workers)):
                assert m.get("/healthz") == (200, "ok\n")
                with database_down(url):
                    for _ in range(2):  # the pool's connections lost, then no new one
                        status, body = m.get("/healthz")
                        assert status == 503, body
                        assert body.startswith("the database does not answer: "), body
                        assert body.count("\n") == 1 and body.endswith("\n"), body
                assert wait_for(lambda m=m: m.get("/healthz") == (200, "ok\n"), timeout=30)
                assert m.srv.proc.poll() is None, m.srv.log_text()
        finally:
            db.dispose()


def test_the_listener_is_off_unless_a_port_is_given(server: ServerProcess) -> None:
    assert "health and metrics" not in server.log_text()


def test_a_metrics_port_in_use_stops_the_server_at_start(own_db: tuple[str, Database]) -> None:
    url, _db = own_db
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            start_server(url, "--metrics-port", str(port))
