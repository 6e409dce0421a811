"""Fixtures: a real database and a real server process, spoken to over TCP.

``AJEDREZ_TEST_DATABASE_URL`` selects the database (PostgreSQL in CI); without it each
test run uses a fresh SQLite file. On PostgreSQL each run works in a schema of its own,
dropped at the end. When the variable is set and the database cannot be
reached, the run fails: it never silently falls back or skips.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import create_engine, event, make_url, text

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from tests.espol import Conn

ROOT = Path(__file__).resolve().parent.parent
LISTENING = re.compile(r"listening on (\S+):(\d+)")


def _private_schema(url: str) -> tuple[str, Callable[[], None]]:
    """A schema of this run's own on PostgreSQL, so concurrent runs never collide.

    Returns the URL whose connections use it (``search_path``) and a function that drops it.
    Connecting raises, failing the run, when the server is unreachable.
    """
    schema = f"test_{uuid.uuid4().hex[:12]}"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    engine.dispose()

    def drop() -> None:
        cleanup = create_engine(url)
        with cleanup.begin() as conn:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        cleanup.dispose()

    scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    return scoped.render_as_string(hide_password=False), drop


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = os.environ.get("AJEDREZ_TEST_DATABASE_URL")
    if url and not url.startswith("sqlite"):
        scoped, drop = _private_schema(url)
        yield scoped
        drop()
    elif url:
        yield url
    else:
        yield f"sqlite:///{tmp_path_factory.mktemp('db') / 'ajedrez-test.sqlite3'}"


@pytest.fixture(scope="session")
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    upgrade(database)
    yield database
    database.dispose()


@pytest.fixture
def own_db(tmp_path: Path) -> Iterator[tuple[str, Database]]:
    """A database of this test's own on the store under test, for what would disturb the
    shared one (a purge removes every finished game): (URL, Database at head)."""
    url = os.environ.get("AJEDREZ_TEST_DATABASE_URL")
    drop: Callable[[], None] | None = None
    if url and not url.startswith("sqlite"):
        url, drop = _private_schema(url)
    else:
        url = f"sqlite:///{tmp_path / 'own.sqlite3'}"
    database = Database(url)
    upgrade(database)
    yield url, database
    database.dispose()
    if drop is not None:
        drop()


@pytest.fixture(scope="session")
def accounts(db: Database) -> Accounts:
    return Accounts(db)


@pytest.fixture(scope="session")
def games(db: Database) -> Games:
    return Games(db)


@dataclass
class ServerProcess:
    proc: subprocess.Popen[str]
    host: str
    port: int
    database_url: str
    log: list[str] = field(default_factory=list)

    def connect(self, timeout: float = 20.0, source: str | None = None) -> Conn:
        return Conn(self.host, self.port, timeout, source=source)

    def log_text(self) -> str:
        return "\n".join(self.log)

    def stop(self, timeout: float = 15.0) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout)


def start_server(
    database_url: str, *extra: str, env: dict[str, str] | None = None
) -> ServerProcess:
    """Start ``python -m ajedrez`` on a free port and wait until it listens."""
    cmd = [
        sys.executable,
        "-m",
        "ajedrez",
        "--database-url",
        database_url,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        # Every test's clients come from 127.0.0.1 and share one database: the caps on
        # SUBS per address would soon refuse them. The tests of those caps set their own
        # (a later option overrides an earlier one).
        *("--subs-per-address", "1000000", "--max-pending-per-address", "1000000"),
        *extra,
    ]
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines: list[str] = []
    found = threading.Event()
    address: list[tuple[str, int]] = []

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            m = LISTENING.search(line)
            if m and not found.is_set():
                address.append((m.group(1), int(m.group(2))))
                found.set()
        found.set()

    threading.Thread(target=drain, daemon=True).start()
    if not found.wait(60) or not address:
        proc.kill()
        raise RuntimeError("server did not start:\n" + "\n".join(lines))
    host, port = address[0]
    return ServerProcess(proc, host, port, database_url, lines)


@pytest.fixture(scope="session")
def server(database_url: str, db: Database) -> Iterator[ServerProcess]:
    srv = start_server(database_url)
    yield srv
    srv.stop()


_counter = itertools.count()
_run = uuid.uuid4().hex[:6]


def unique_name(prefix: str = "u") -> str:
    """A user name no other test (or earlier run on the same database) uses."""
    return f"{prefix}{_run}{next(_counter)}"[:32]


PASSWORD = "correct horse battery"


@pytest.fixture
def new_user(accounts: Accounts) -> Callable[..., str]:
    """Create an active account directly through the service; returns its name."""

    def make(prefix: str = "u", password: str = PASSWORD, comment: str = "") -> str:
        name = unique_name(prefix)
        accounts.add_user(name, password, comment)
        return name

    return make


@pytest.fixture
def login(server: ServerProcess) -> Iterator[Callable[..., Conn]]:
    """Open a connection and log in; every connection is closed after the test."""
    opened: list[Conn] = []

    def do_login(name: str, password: str = PASSWORD) -> Conn:
        conn = server.connect()
        opened.append(conn)
        r = conn.cmd(f"USER:{name}")
        assert r.code == 101, r
        r = conn.cmd(f"PASS:{password}")
        assert r.kind == "S", r
        return conn

    yield do_login
    for conn in opened:
        conn.close()


def admin(
    database_url: str, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``ajedrez-admin`` as a script would (a separate process, standard input not a
    terminal: never the terminal pytest may have been started from, where it would ask)."""
    return subprocess.run(
        [sys.executable, "-m", "ajedrez.admin.cli", "--database-url", database_url, *args],
        cwd=ROOT,
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
        capture_output=True,
        text=True,
        timeout=120,
    )


def count_commits(db: Database) -> list[int]:
    """A one-item list that counts the transactions ``db`` commits from now on."""
    commits = [0]

    @event.listens_for(db.engine, "commit")
    def _on_commit(_conn) -> None:  # type: ignore[no-untyped-def]
        commits[0] += 1

    return commits


def wait_for(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture(scope="session")
def tls_certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key."""
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def tls_port(srv: ServerProcess) -> int:
    """The port of a server's TLS listener, from its log."""
    assert wait_for(lambda: "listening with TLS on" in srv.log_text())
    m = re.search(r"listening with TLS on \S+:(\d+)", srv.log_text())
    assert m
    return int(m.group(1))


def insert_users(db: Database, names: list[str], password_hash: str) -> None:
    """Many active accounts at once, sharing one hash: hashing each would cost ~40 ms."""
    from sqlalchemy import insert

    from ajedrez.store.models import User

    now = int(time.time())
    rows = [
        {
            "name": n,
            "name_key": n.lower(),
            "password_hash": password_hash,
            "comment": "",
            "active": True,
            "admitted_at": now,
            "changed_at": now,
            "wins": 0,
        }
        for n in names
    ]
    with db.engine.begin() as conn:
        conn.execute(insert(User), rows)
