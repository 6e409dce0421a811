"""ajedrez-admin (AdmChess): every command, and every error as one line on stderr with a
non-zero status (1 refused, 2 usage, 3 database) and no traceback (contract section 5).
The accounts commands are in test_admin_users.py, the games commands in test_admin_games.py.

Most cases call ``ajedrez.admin.cli.main`` in this process (the same code the program runs, and
much faster); the error classes are also checked through the real program in a subprocess.
``games purge`` only ever runs on a private SQLite database: on the shared one it would
remove finished games other tests are looking at.
"""

from __future__ import annotations

import getpass
import io
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata

import pytest

from ajedrez.admin.cli import main
from ajedrez.domain.accounts import Accounts
from ajedrez.store.db import Database
from ajedrez.store.migrate import is_current
from ajedrez.store.tx import Tx
from ajedrez.store.urls import redact
from tests.support.admin import (
    Result,
    answered,
    assert_error,
    assert_ok,
    audit_rows,
    on_terminal,
    pid,
    tcp_login,
    user_row,
)
from tests.support.common import PASSWORD, ROOT, unique_name
from tests.support.server import admin

UNREACHABLE_PG = "postgresql+psycopg://postgres@127.0.0.1:1/test"


# -- db upgrade ----------------------------------------------------------------------------


def test_db_upgrade_is_idempotent(cli, db):
    for _ in range(2):
        r = cli("db", "upgrade")
        assert_ok(r)
        assert r.out == "database schema is up to date\n"


def test_db_upgrade_creates_a_new_sqlite_file(cli, tmp_path):
    path = tmp_path / "a" / "b" / "new.sqlite3"
    url = f"sqlite:///{path}"
    r = cli("db", "upgrade", "--create", url=url)
    assert_ok(r)
    assert r.out == f"new database created at {path}\ndatabase schema is up to date\n"
    assert path.exists()
    database = Database(url, create=False)
    try:
        assert is_current(database)
    finally:
        database.dispose()
    assert_ok(cli("users", "list", url=url))
    r = cli("db", "upgrade", "--create", url=url)  # there already: nothing to create
    assert_ok(r)
    assert r.out == "database schema is up to date\n"


def test_db_upgrade_does_not_create_a_database_unasked(cli, tmp_path):
    path = tmp_path / "mistyped.sqlite3"
    r = cli("db", "upgrade", url=f"sqlite:///{path}")
    assert_error(r, 3, f"no database file at {path}", "--create")
    assert r.out == ""
    assert not path.exists()


def test_db_upgrade_on_a_terminal_asks_before_creating(cli, tmp_path):
    path = tmp_path / "new.sqlite3"
    url = f"sqlite:///{path}"
    for answer in ("n\n", "", "whatever\n"):
        r = cli("db", "upgrade", url=url, tty=True, stdin=answer)
        assert_error(answered(r), 1, "not confirmed")
        assert "Create a new, empty database there? [y/N]" in r.err
        assert not path.exists()
    r = cli("db", "upgrade", url=url, tty=True, stdin="y\n")
    assert r.status == 0, r
    assert r.out == f"new database created at {path}\ndatabase schema is up to date\n"
    assert_ok(cli("users", "list", url=url))


def test_db_upgrade_on_a_terminal_needs_the_directory(cli, tmp_path):
    path = tmp_path / "mistyped" / "new.sqlite3"
    r = cli("db", "upgrade", url=f"sqlite:///{path}", tty=True, stdin="y\n")
    assert_error(r, 3, f"nor a directory {path.parent}", "--create")
    assert "[y/N]" not in r.err  # refused without a question
    assert not path.parent.exists()


def test_db_upgrade_asks_on_a_real_terminal(tmp_path):
    path = tmp_path / "new.sqlite3"
    status, shown = on_terminal(f"sqlite:///{path}", "db", "upgrade", answers=(("[y/N] ", "y"),))
    assert status == 0, shown
    assert f"new database created at {path}" in shown
    assert path.exists()


# -- the audit trail -----------------------------------------------------------------------


def test_every_change_is_audited(cli, db, new_user, accounts, games):
    me = getpass.getuser()
    start = int(time.time())
    added, approved, rejected = unique_name("aud"), unique_name("aud"), unique_name("aud")
    secret, other_secret = f"la clave {added}", f"otra clave {added}"
    r = cli("users", "add", added, "--comment", "Ana", "--password-stdin", stdin=secret + "\n")
    assert_ok(r)
    assert_ok(cli("users", "passwd", added, stdin=other_secret + "\n"))
    # Through the service: the server limits SUBS per address, and other tests use them.
    accounts.subscribe(approved, "clave uno", "")
    accounts.subscribe(rejected, "clave dos", "")
    assert_ok(cli("subs", "approve", approved))
    assert_ok(cli("subs", "reject", rejected))
    opponent = new_user()
    games.challenge(accounts.login(opponent, PASSWORD).id, added)
    game_id = games.accept(accounts.login(added, other_secret).id, "N", opponent)
    assert_ok(cli("users", "remove", added))
    # Refused changes changed nothing, and leave no trace.
    assert_error(cli("users", "add", approved, stdin="x\n"), 1)
    assert_error(cli("users", "remove", added), 1)
    assert_error(cli("subs", "approve", rejected), 1)
    # Nor do changes made other than through ajedrez-admin (a player's UNSU, the service).
    assert audit_rows(db, opponent) == []

    rows = audit_rows(db, added, approved, rejected)
    assert [(row.actor, row.action, row.target, row.detail) for row in rows] == [
        (me, "users add", added, "Ana"),
        (me, "users passwd", added, ""),
        (me, "subs approve", approved, ""),
        (me, "subs reject", rejected, ""),
        (me, "users remove", added, f"active games forfeited: {pid(game_id)}"),
    ]
    assert all(start <= row.at <= time.time() for row in rows)

    r = cli("audit")
    assert_ok(r)
    assert r.out.splitlines()[0].split()[:4] == ["WHEN", "(UTC)", "WHO", "ACTION"]
    mine = [line.split()[2:6] for line in r.out.splitlines() if added in line.split()]
    assert mine == [
        [me, "users", "add", added],
        [me, "users", "passwd", added],
        [me, "users", "remove", added],
    ]
    last = cli("audit", "--limit", "2")
    assert_ok(last)
    assert [line.split()[4:6] for line in last.out.splitlines()[1:]] == [
        ["reject", rejected],
        ["remove", added],
    ]
    for text in (r.out, last.out, *(row.detail for row in rows)):
        assert "clave" not in text


def test_a_change_and_its_record_are_one_transaction(cli, db, monkeypatch):
    def fail(*_args: object) -> None:
        raise RuntimeError("the audit trail cannot be written")

    monkeypatch.setattr(Tx, "audit", fail)
    name = unique_name("aud")
    r = cli("users", "add", name, stdin="x\n")
    assert_error(r, 3, "the audit trail cannot be written")
    assert user_row(db, name) is None


def test_audit_when_empty(cli, private_db):
    url, _ = private_db
    r = cli("audit", url=url)
    assert_ok(r)
    assert r.out == "no changes recorded\n"


@pytest.mark.parametrize("limit", ["0", "-1", "x", "1.5"])
def test_audit_bad_limit(cli, limit):
    assert_error(cli("audit", f"--limit={limit}"), 2)


# -- small things --------------------------------------------------------------------------


def test_games_export_takes_a_bare_number(cli, new_user, accounts, games):
    white, black = new_user(), new_user()
    games.challenge(accounts.login(black, PASSWORD).id, white)
    game_id = games.accept(accounts.login(white, PASSWORD).id, "B", black)
    full = cli("games", "export", pid(game_id))
    assert_ok(full)
    assert f'[White "{white}"]' in full.out
    for form in (str(game_id), f"p{game_id}", f"P{game_id}", f"{game_id:07d}"):
        r = cli("games", "export", form)
        assert_ok(r)
        assert r.out == full.out
    for bad in ("P12345678", "12345678", "x12", "P", "1 2", "\uff11"):
        assert_error(cli("games", "export", bad), 2, "invalid game id")


def test_version(cli):
    r = cli("--version")
    assert r.status == 0, r
    assert r.out == f"ajedrez-admin {metadata.version('ajedrez')}\n"


# -- database URLs -------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["bogus", "nonsense", "foo://x", "postgres://u:secreto@h/d"])
def test_not_a_database_url(cli, url):
    r = cli("users", "list", url=url)
    assert_error(r, 3, "not a database URL", "(from --database-url)", "sqlite:///")
    assert "secreto" not in r.err


def test_not_a_database_url_from_the_environment(monkeypatch, capsys):
    monkeypatch.setenv("AJEDREZ_DATABASE_URL", "nonsense")
    monkeypatch.setattr(sys, "stdin", io.StringIO())
    status = main(["users", "list"])
    out, err = capsys.readouterr()
    assert_error(Result(status, out, err), 3, "'nonsense' (from AJEDREZ_DATABASE_URL)")


@pytest.mark.parametrize(
    "url, shown",
    [
        ("bogus", "bogus"),
        ("postgresql://u:secreto@h/d", "postgresql://u:***@h/d"),
        ("postgresql://u:sec@reto@h/d", "postgresql://u:***@h/d"),  # '@' unescaped
        ("postgresql:/u:secreto@h/d", "***@h/d"),
        ("u:secreto@h", "***@h"),
        ("//u:secreto@h", "//***@h"),
    ],
)
def test_redact_never_fails_nor_shows_a_password(url, shown):
    assert redact(url) == shown


# -- database errors -----------------------------------------------------------------------


@pytest.mark.parametrize("args", [("users", "list"), ("db", "upgrade"), ("subs", "list")])
def test_unreachable_database(cli, args):
    assert_error(cli(*args, url=UNREACHABLE_PG), 3)


@pytest.mark.parametrize(
    "args",
    [
        ("users", "list"),
        ("users", "add", "ana", "--password-stdin"),
        ("users", "remove", "ana", "--yes"),
        ("subs", "list"),
        ("games", "purge", "--yes"),
        ("audit",),
    ],
)
@pytest.mark.parametrize("tty", [False, True])
def test_sqlite_path_without_file(cli, tmp_path, args, tty):
    path = tmp_path / "none.sqlite3"
    r = cli(*args, stdin="x\ny\n", url=f"sqlite:///{path}", tty=tty)
    assert_error(r, 3, f"no database file at {path} (from --database-url)", "db upgrade --create")
    assert not path.exists()


def test_sqlite_file_without_schema(cli, tmp_path):
    path = tmp_path / "empty.sqlite3"
    path.touch()
    assert_error(cli("users", "list", url=f"sqlite:///{path}"), 3, "db upgrade")


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("users",),
        ("users", "frobnicate"),
        ("frobnicate", "list"),
        ("users", "add"),
        ("users", "remove"),
        ("subs", "approve"),
        ("users", "remove", "a", "b"),
    ],
)
def test_usage_errors(cli, args):
    assert_error(cli(*args), 2)


# -- the real program ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def program_runs(database_url, db):
    """Run the real program once per exit-status class, the runs in parallel (each costs
    about a second of start-up)."""
    existing = unique_name("prog")
    Accounts(db).add_user(existing, PASSWORD)
    added = unique_name("prog")
    cases = {
        "add": ((database_url, "users", "add", added, "--password-stdin"), "pw\n"),
        "unreachable": ((UNREACHABLE_PG, "users", "list"), None),
        "usage": ((database_url, "users", "frobnicate"), None),
        "duplicate": ((database_url, "users", "add", existing, "--password-stdin"), "x\n"),
    }
    with ThreadPoolExecutor(len(cases)) as pool:
        futures = {
            key: pool.submit(admin, args[0], *args[1:], stdin=stdin)
            for key, (args, stdin) in cases.items()
        }
        results = {key: f.result() for key, f in futures.items()}
    # The listing runs after the add has finished.
    results["list"] = admin(database_url, "users", "list")
    return {"results": results, "added": added}


def test_program_success(program_runs, server):
    add = program_runs["results"]["add"]
    assert add.returncode == 0 and add.stderr == "", add
    added = program_runs["added"]
    lst = program_runs["results"]["list"]
    assert lst.returncode == 0 and lst.stderr == ""
    assert any(line.split()[:2] == [added, "active"] for line in lst.stdout.splitlines())
    assert tcp_login(server, added, "pw") == (101, 102)


@pytest.mark.parametrize(
    "case, status",
    [
        ("unreachable", 3),
        ("usage", 2),
        ("duplicate", 1),
    ],
)
def test_program_errors(program_runs, case, status):
    r = program_runs["results"][case]
    assert_error(r, status)
    assert r.stdout == ""


@pytest.fixture(scope="module")
def bad_url_runs():
    """The real programs given a malformed database URL, run in parallel."""
    admin_cmd = [sys.executable, "-m", "ajedrez.admin.cli"]
    cases = {
        "option": ([*admin_cmd, "--database-url", "bogus", "users", "list"], {}),
        "environment": ([*admin_cmd, "users", "list"], {"AJEDREZ_DATABASE_URL": "nonsense"}),
        "server": ([sys.executable, "-m", "ajedrez", "--database-url", "bogus", "--port", "0"], {}),
    }

    def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            cmd,
            cwd=ROOT,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )

    with ThreadPoolExecutor(len(cases)) as pool:
        futures = {key: pool.submit(run, *case) for key, case in cases.items()}
        return {key: f.result() for key, f in futures.items()}


@pytest.mark.parametrize(
    "case, words",
    [
        ("option", ("'bogus' (from --database-url)",)),
        ("environment", ("'nonsense' (from AJEDREZ_DATABASE_URL)",)),
    ],
)
def test_program_not_a_database_url(bad_url_runs, case, words):
    r = bad_url_runs[case]
    assert_error(r, 3, "not a database URL", *words)
    assert r.stdout == ""


def test_server_not_a_database_url(bad_url_runs):
    r = bad_url_runs["server"]
    assert r.returncode == 1, r
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip("\n").split("\n")
    assert len(lines) == 1, r.stderr
    assert "ERROR" in lines[0]
    assert "cannot open the database: not a database URL: 'bogus'" in lines[0]
