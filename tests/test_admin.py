"""ajedrez-admin (AdmChess): every command, and every error as one line on stderr with a
non-zero status (1 refused, 2 usage, 3 database) and no traceback (contract section 5).

Most cases call ``admin.cli.main`` in this process (the same code the program runs, and
much faster); the error classes are also checked through the real program in a subprocess.
``games purge`` only ever runs on a private SQLite database: on the shared one it would
remove finished games other tests are looking at.
"""

from __future__ import annotations

import io
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select

from admin.cli import main
from ajedrez.service import Accounts, Games
from ajedrez.service.games import MoveRecord
from ajedrez.storage.db import Database
from ajedrez.storage.migrate import is_current, upgrade
from ajedrez.storage.models import Move, User
from tests.conftest import PASSWORD, admin, unique_name

UNREACHABLE_PG = "postgresql+psycopg://postgres@127.0.0.1:1/test"


@dataclass
class Result:
    status: int
    out: str
    err: str


@pytest.fixture
def cli(database_url, monkeypatch, capsys):
    """Run ajedrez-admin's main() in-process: cli(*args, stdin=..., url=...)."""

    def run(*args: str, stdin: str = "", url: str | None = None) -> Result:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        try:
            status = main(["--database-url", url or database_url, *args])
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
        out, err = capsys.readouterr()
        return Result(status, out, err)

    return run


def assert_ok(r: Result) -> None:
    assert r.status == 0, r
    assert r.err == "", r


def assert_error(r, status: int, *words: str) -> None:
    """Exactly one line on stderr, the given status, no traceback."""
    code = r.status if isinstance(r, Result) else r.returncode
    err = r.err if isinstance(r, Result) else r.stderr
    assert code == status, r
    assert "Traceback" not in err, err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith("ajedrez-admin: "), err
    assert len(lines[0]) > len("ajedrez-admin: ")
    for word in words:
        assert word in lines[0], (word, lines[0])


def listed(r: Result, name: str) -> list[str] | None:
    """The whitespace-split row of ``name`` in a listing, or None."""
    for line in r.out.splitlines()[1:]:
        cols = line.split()
        if cols and cols[0] == name:
            return cols
    return None


def user_row(db, name: str):
    with db.engine.connect() as conn:
        return conn.execute(select(User).where(User.name == name)).first()


def tcp_login(server, name: str, password: str):
    """(USER reply code, PASS reply code or None) over a fresh connection."""
    with server.connect() as c:
        r = c.cmd(f"USER:{name}")
        if r.code != 101:
            return r.code, None
        return r.code, c.cmd(f"PASS:{password}").code


# -- db upgrade ----------------------------------------------------------------------------


def test_db_upgrade_is_idempotent(cli):
    for _ in range(2):
        r = cli("db", "upgrade")
        assert_ok(r)
        assert r.out == "database schema is up to date\n"


def test_db_upgrade_creates_a_new_sqlite_file(cli, tmp_path):
    path = tmp_path / "a" / "b" / "new.sqlite3"
    url = f"sqlite:///{path}"
    assert_ok(cli("db", "upgrade", url=url))
    assert path.exists()
    database = Database(url, create=False)
    try:
        assert is_current(database)
    finally:
        database.dispose()
    assert_ok(cli("users", "list", url=url))


# -- users add / list ----------------------------------------------------------------------


def test_users_add_with_comment(cli, server, db):
    name = unique_name("adm")
    r = cli("users", "add", name, "--password-stdin", "--comment", "Ana María", stdin="Clave 1\n")
    assert_ok(r)
    assert name in r.out
    row = user_row(db, name)
    assert row.active is True and row.comment == "Ana María"
    assert "Clave 1" not in row.password_hash
    assert tcp_login(server, name, "Clave 1") == (101, 102)
    cols = listed(cli("users", "list"), name)
    assert cols is not None
    assert cols[1] == "active"
    assert cols[-2:] == ["Ana", "María"]


def test_users_add_without_comment(cli, db):
    name = unique_name("adm")
    assert_ok(cli("users", "add", name, "--password-stdin", stdin=PASSWORD + "\n"))
    assert user_row(db, name).comment == ""


@pytest.mark.parametrize("stdin", ["first\nsecond\n", "first\r\n", "first"])
def test_users_add_reads_the_first_line(cli, server, stdin):
    name = unique_name("adm")
    assert_ok(cli("users", "add", name, "--password-stdin", stdin=stdin))
    assert tcp_login(server, name, "first") == (101, 102)


def test_users_add_duplicate(cli, new_user):
    name = new_user()
    r = cli("users", "add", name, "--password-stdin", stdin="x\n")
    assert_error(r, 1, name)


def test_users_add_name_of_closed_user(cli, new_user, accounts):
    name = new_user()
    accounts.remove_user(name)
    assert_error(cli("users", "add", name, "--password-stdin", stdin="x\n"), 1)


def test_users_add_name_with_pending_request(cli, server, db):
    name = unique_name("pend")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:clave:").code == 103
    assert_error(cli("users", "add", name, "--password-stdin", stdin="x\n"), 1)
    assert user_row(db, name) is None


@pytest.mark.parametrize(
    "name, stdin, extra",
    [
        ("bad name", "x\n", ()),
        ("a" * 33, "x\n", ()),
        ("año", "x\n", ()),
        ("", "x\n", ()),
        (None, "", ()),  # empty standard input: no password
        (None, "\n", ()),
        (None, "a:b\n", ()),
        (None, "x" * 129 + "\n", ()),
        (None, "x\n", ("--comment", "a:b")),
        (None, "x\n", ("--comment", "c" * 201)),
    ],
)
def test_users_add_bad_values(cli, db, name, stdin, extra):
    name = unique_name("bad") if name is None else name
    r = cli("users", "add", name, "--password-stdin", *extra, stdin=stdin)
    assert_error(r, 2)
    if name:
        assert user_row(db, name) is None


def test_users_add_needs_password_stdin(cli, db):
    name = unique_name("adm")
    assert_error(cli("users", "add", name), 2)
    assert user_row(db, name) is None


def test_users_list(cli, new_user, accounts):
    active = new_user(comment="hola")
    closed = new_user()
    accounts.remove_user(closed)
    r = cli("users", "list")
    assert_ok(r)
    assert r.out.splitlines()[0].split()[:2] == ["NAME", "STATUS"]
    a = listed(r, active)
    c = listed(r, closed)
    assert a is not None and c is not None
    assert a[1] == "active" and a[-1] == "hola"
    assert c[1] == "closed"


# -- users remove / passwd -----------------------------------------------------------------


def test_users_remove(cli, server, login, new_user, db):
    name = new_user()
    watcher = login(new_user())
    r = cli("users", "remove", name)
    assert_ok(r)
    assert user_row(db, name).active is False
    assert tcp_login(server, name, PASSWORD) == (814, None)
    assert listed(cli("users", "list"), name)[1] == "closed"
    parts = watcher.cmd_all("JAUT:0")
    assert name not in ",".join(p.text for p in parts).split(",")
    assert_error(cli("users", "remove", name), 1, name)


def test_users_remove_forfeits_active_games(cli, new_user, accounts, games, db):
    white, black = new_user(), new_user()
    w = accounts.login(white, PASSWORD)
    b = accounts.login(black, PASSWORD)
    games.challenge(w.id, black)
    game_id = games.accept(b.id, "N", white)  # black accepts, playing black
    third = new_user()
    games.challenge(b.id, third)  # an open challenge by the leaver disappears
    t = accounts.login(third, PASSWORD)
    assert games.challengers_since(t.id, 0)[1] == [black]
    assert_ok(cli("users", "remove", black))
    st = games.status(w.id, game_id)
    assert (st.status, st.winner) == (2, 1)  # finished, white won
    assert st.req_black == 3  # the leaver counts as resigned
    assert user_row(db, white).wins == 1
    assert games.challengers_since(t.id, 0)[1] == []


def test_users_remove_unknown(cli):
    assert_error(cli("users", "remove", unique_name("nobody")), 1)


def test_users_remove_bad_name(cli):
    assert_error(cli("users", "remove", "bad name"), 2)


def test_users_passwd(cli, server, new_user):
    name = new_user()
    assert_ok(cli("users", "passwd", name, "--password-stdin", stdin="nueva clave\n"))
    assert tcp_login(server, name, "nueva clave") == (101, 102)
    assert tcp_login(server, name, PASSWORD) == (101, 815)


def test_users_passwd_unknown(cli):
    r = cli("users", "passwd", unique_name("nobody"), "--password-stdin", stdin="x\n")
    assert_error(r, 1)


@pytest.mark.parametrize("stdin", ["", "\n", "a:b\n", "x" * 129 + "\n"])
def test_users_passwd_bad_password(cli, server, new_user, stdin):
    name = new_user()
    assert_error(cli("users", "passwd", name, "--password-stdin", stdin=stdin), 2)
    assert tcp_login(server, name, PASSWORD) == (101, 102)


def test_users_passwd_needs_password_stdin(cli, new_user):
    assert_error(cli("users", "passwd", new_user()), 2)


# -- subscription requests -----------------------------------------------------------------


def subscribe(server, name: str, password: str, comment: str = "") -> None:
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:{password}:{comment}").code == 103


def test_subs_list(cli, server):
    name = unique_name("req")
    subscribe(server, name, "clave", "Juan Pérez")
    r = cli("subs", "list")
    assert_ok(r)
    assert r.out.splitlines()[0].split()[0] == "NAME"
    cols = listed(r, name)
    assert cols is not None and cols[-2:] == ["Juan", "Pérez"]
    assert "clave" not in r.out.split(name, 1)[1].splitlines()[0]


def test_subs_approve_keeps_the_subs_password(cli, server, login, db):
    name = unique_name("req")
    subscribe(server, name, "la clave de SUBS", "nuevo")
    assert tcp_login(server, name, "la clave de SUBS") == (814, None)
    r = cli("subs", "approve", name)
    assert_ok(r)
    assert listed(cli("subs", "list"), name) is None
    row = user_row(db, name)
    assert row.active is True and row.comment == "nuevo"
    assert tcp_login(server, name, "la clave de SUBS") == (101, 102)
    assert tcp_login(server, name, "otra") == (101, 815)
    c = login(name, "la clave de SUBS")
    parts = c.cmd_all("JAUT:0")
    assert name in ",".join(p.text for p in parts).split(",")
    assert_error(cli("subs", "approve", name), 1, name)


def test_subs_approve_unknown(cli):
    assert_error(cli("subs", "approve", unique_name("nobody")), 1)


def test_subs_approve_existing_user_name(cli, new_user):
    assert_error(cli("subs", "approve", new_user()), 1)


def test_subs_reject(cli, server, db):
    name = unique_name("req")
    subscribe(server, name, "clave")
    assert_ok(cli("subs", "reject", name))
    assert listed(cli("subs", "list"), name) is None
    assert user_row(db, name) is None
    assert tcp_login(server, name, "clave") == (814, None)
    assert_error(cli("subs", "reject", name), 1, name)
    subscribe(server, name, "otra")  # the name is free to be requested again


def test_subs_reject_unknown(cli):
    assert_error(cli("subs", "reject", unique_name("nobody")), 1)


@pytest.mark.parametrize("verb", ["approve", "reject"])
def test_subs_bad_name(cli, verb):
    assert_error(cli("subs", verb, "bad name"), 2)


# -- games ---------------------------------------------------------------------------------


def test_games_list_on_shared_database(cli):
    r = cli("games", "list")
    assert_ok(r)
    assert r.out.splitlines()[0].split()[:3] == ["GAME", "WHITE", "BLACK"]


@pytest.fixture
def private_db(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'games.sqlite3'}"
    database = Database(url)
    upgrade(database)
    yield url, database
    database.dispose()


def test_games_list_and_purge(cli, private_db):
    url, database = private_db
    accounts, games = Accounts(database), Games(database)
    for name in ("ana", "bea", "carla"):
        accounts.add_user(name, PASSWORD)
    ana, bea, carla = (accounts.login(n, PASSWORD) for n in ("ana", "bea", "carla"))
    games.challenge(ana.id, "bea")
    finished = games.accept(bea.id, "B", "ana")  # bea white, ana black
    games.play(bea.id, finished, MoveRecord(1, "e2e4", 0, "1228", 0))
    games.play(ana.id, finished, MoveRecord(2, "e7e5", 0, "5236", 0))
    games.resign(bea.id, finished, "ana")  # black wins
    games.challenge(carla.id, "ana")
    active = games.accept(ana.id, "N", "carla")  # carla white, ana black

    r = cli("games", "list", url=url)
    assert_ok(r)
    rows = {line.split()[0]: line.split() for line in r.out.splitlines()[1:]}
    assert set(rows) == {f"P{finished:07d}", f"P{active:07d}"}
    f = rows[f"P{finished:07d}"]
    assert f[1:6] == ["bea", "ana", "finished", "0-1", "2"]
    a = rows[f"P{active:07d}"]
    assert a[1:6] == ["carla", "ana", "active", "*", "0"]

    r = cli("games", "purge", url=url)
    assert_ok(r)
    assert r.out == "1 finished game(s) removed\n"
    rows = [line.split()[0] for line in cli("games", "list", url=url).out.splitlines()[1:]]
    assert rows == [f"P{active:07d}"]
    with database.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Move)) == 0
    assert games.status(ana.id, active).status == 0
    assert cli("games", "purge", url=url).out == "0 finished game(s) removed\n"


# -- database errors -----------------------------------------------------------------------


@pytest.mark.parametrize("args", [("users", "list"), ("db", "upgrade"), ("subs", "list")])
def test_unreachable_database(cli, args):
    assert_error(cli(*args, url=UNREACHABLE_PG), 3)


def test_sqlite_path_without_file(cli, tmp_path):
    path = tmp_path / "missing" / "none.sqlite3"
    r = cli("users", "list", url=f"sqlite:///{path}")
    assert_error(r, 3)
    assert not path.exists()
    r = cli("users", "add", "ana", "--password-stdin", stdin="x\n", url=f"sqlite:///{path}")
    assert_error(r, 3)
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
