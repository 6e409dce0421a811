"""ajedrez-admin (AdmChess): every command, and every error as one line on stderr with a
non-zero status (1 refused, 2 usage, 3 database) and no traceback (contract section 5).

Most cases call ``ajedrez.admin.cli.main`` in this process (the same code the program runs, and
much faster); the error classes are also checked through the real program in a subprocess.
``games purge`` only ever runs on a private SQLite database: on the shared one it would
remove finished games other tests are looking at.
"""

from __future__ import annotations

import getpass
import io
import os
import pty
import select as select_fds
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import metadata

import pytest
from sqlalchemy import func, select, update

from ajedrez.admin.cli import main
from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games, MoveRecord
from ajedrez.store import audit
from ajedrez.store.db import Database, redact
from ajedrez.store.eager import blocking
from ajedrez.store.migrate import is_current
from ajedrez.store.models import AdminAudit, Game, Move, User
from tests.support.common import PASSWORD, ROOT, unique_name
from tests.support.server import admin

UNREACHABLE_PG = "postgresql+psycopg://postgres@127.0.0.1:1/test"


@dataclass
class Result:
    status: int
    out: str
    err: str
    prompts: list[str] = field(default_factory=list)  # getpass's, on a terminal


class Terminal(io.StringIO):
    """Standard input as a terminal, holding what the operator types."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def cli(database_url, monkeypatch, capsys):
    """Run ajedrez-admin's main() in-process: cli(*args, stdin=..., url=...). With
    ``tty=True`` standard input is a terminal and ``typed`` what is typed at getpass's
    prompts (then end of input)."""

    def run(
        *args: str,
        stdin: str = "",
        url: str | None = None,
        tty: bool = False,
        typed: tuple[str, ...] = (),
    ) -> Result:
        monkeypatch.setattr(sys, "stdin", Terminal(stdin) if tty else io.StringIO(stdin))
        prompts: list[str] = []
        answers = iter(typed)

        def fake_getpass(prompt: str = "Password: ", stream: object = None) -> str:
            prompts.append(prompt)
            try:
                return next(answers)
            except StopIteration:
                raise EOFError from None

        monkeypatch.setattr(getpass, "getpass", fake_getpass)
        capsys.readouterr()
        try:
            status = main(["--database-url", url or database_url, *args])
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
        out, err = capsys.readouterr()
        return Result(status, out, err, prompts)

    return run


def on_terminal(url: str, *args: str, answers: tuple[tuple[str, str], ...] = ()):
    """Run the real program on a terminal of its own (a pty, its controlling terminal):
    for each (prompt, line) of ``answers``, wait for the prompt, then type the line.
    Returns (exit status, all the terminal showed)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            os.chdir(ROOT)
            argv = [sys.executable, "-m", "ajedrez.admin.cli", "--database-url", url, *args]
            os.execv(sys.executable, argv)
        finally:
            os._exit(127)
    shown = b""
    deadline = time.monotonic() + 60

    def read_more() -> bool:
        nonlocal shown
        ready, _, _ = select_fds.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no output in time; so far: {shown!r}"
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the program has ended and closed the terminal
            return False
        shown += chunk
        return bool(chunk)

    try:
        seen = 0
        for prompt, line in answers:
            while prompt.encode() not in shown[seen:]:
                assert read_more(), f"ended before {prompt!r}: {shown!r}"
            seen = shown.index(prompt.encode(), seen) + len(prompt)
            os.write(fd, line.encode() + b"\n")
        while read_more():
            pass
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return os.waitstatus_to_exitcode(status), shown.decode().replace("\r\n", "\n")


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


def answered(r: Result) -> Result:
    """``r`` with only the stderr after its last question: what came of the answer."""
    return Result(r.status, r.out, r.err.rsplit("[y/N] ", 1)[-1].lstrip("\n"), r.prompts)


def listed(r: Result, name: str) -> list[str] | None:
    """The whitespace-split row of ``name`` in a listing, or None."""
    for line in r.out.splitlines()[1:]:
        cols = line.split()
        if cols and cols[0] == name:
            return cols
    return None


def audit_rows(db, *targets: str):
    """The audit trail's rows about ``targets``, oldest first."""
    with db.engine.connect() as conn:
        return conn.execute(
            select(AdminAudit).where(AdminAudit.target.in_(targets)).order_by(AdminAudit.id)
        ).all()


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


@pytest.mark.parametrize("flag", [(), ("--password-stdin",)])
def test_users_add_without_a_password(cli, db, flag):
    name = unique_name("adm")
    for stdin in ("", "\n"):
        assert_error(cli("users", "add", name, *flag, stdin=stdin), 2, "no password given")
    assert user_row(db, name) is None


def test_users_add_reads_stdin_without_the_flag(cli, server):
    name = unique_name("adm")
    assert_ok(cli("users", "add", name, stdin="sin bandera\n"))
    assert tcp_login(server, name, "sin bandera") == (101, 102)


@pytest.mark.parametrize("flag", [(), ("--password-stdin",)])
def test_users_add_on_a_terminal_asks_twice(cli, server, flag):
    name = unique_name("adm")
    r = cli("users", "add", name, *flag, tty=True, typed=("en la terminal", "en la terminal"))
    assert_ok(r)
    assert r.prompts == [f"new password for {name}: ", "the same password again: "]
    assert "en la terminal" not in r.out
    assert tcp_login(server, name, "en la terminal") == (101, 102)


@pytest.mark.parametrize(
    "typed, words",
    [
        (("una clave", "otra clave"), ("differ",)),
        (("una clave",), ("differ",)),  # end of input at the second question
        ((), ("no password given",)),
        (("",), ("no password given",)),
        (("a:b",), ("invalid password",)),
    ],
)
def test_users_add_on_a_terminal_refused(cli, db, typed, words):
    name = unique_name("adm")
    r = cli("users", "add", name, tty=True, typed=typed)
    assert_error(r, 2, *words)
    assert user_row(db, name) is None


def test_users_add_on_a_real_terminal_does_not_echo(database_url, server):
    name = unique_name("pty")
    secret = f"nadie la ve {name}"
    status, shown = on_terminal(
        database_url,
        "users",
        "add",
        name,
        answers=((f"new password for {name}: ", secret), ("the same password again: ", secret)),
    )
    assert status == 0, shown
    assert f"user {name} added" in shown
    assert "nadie" not in shown
    assert tcp_login(server, name, secret) == (101, 102)


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
    r = cli("users", "remove", name)  # not on a terminal: no question
    assert_ok(r)
    assert r.out == f"user {name} removed; no active games\n"
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
    r = cli("users", "remove", black)
    assert_ok(r)
    assert r.out == f"user {black} removed; 1 active game forfeited: {pid(game_id)}\n"
    st = blocking(lambda: games.status(w.id, game_id))
    assert (st.status, st.ganador) == (2, 1)  # finished, white won
    assert st.req_black == 3  # the leaver counts as resigned
    assert user_row(db, white).wins == 1
    assert games.challengers_since(t.id, 0)[1] == []


def test_users_remove_unknown(cli):
    assert_error(cli("users", "remove", unique_name("nobody")), 1)


def test_users_remove_bad_name(cli):
    assert_error(cli("users", "remove", "bad name"), 2)


def test_users_remove_names_every_forfeited_game(cli, new_user, accounts, games):
    leaver = new_user()
    ids = []
    for _ in range(2):
        other = new_user()
        games.challenge(accounts.login(other, PASSWORD).id, leaver)
        ids.append(games.accept(accounts.login(leaver, PASSWORD).id, "B", other))
    r = cli("users", "remove", leaver)
    assert_ok(r)
    both = f"{pid(ids[0])}, {pid(ids[1])}"
    assert r.out == f"user {leaver} removed; 2 active games forfeited: {both}\n"
    assert [row.detail for row in audit_rows(accounts.db, leaver)] == [
        f"active games forfeited: {both}"
    ]


def test_users_remove_on_a_terminal_asks(cli, db, new_user):
    name = new_user()
    for answer in ("n\n", "", "no\n"):
        r = cli("users", "remove", name, tty=True, stdin=answer)
        assert f"close the account of {name}?" in r.err
        assert_error(answered(r), 1, "not confirmed")
        assert user_row(db, name).active is True
    r = cli("users", "remove", name, tty=True, stdin="y\n")
    assert r.status == 0, r
    assert r.out == f"user {name} removed; no active games\n"
    assert user_row(db, name).active is False


def test_users_remove_with_yes_does_not_ask(cli, db, new_user):
    name = new_user()
    r = cli("users", "remove", name, "--yes", tty=True)
    assert_ok(r)
    assert user_row(db, name).active is False


def test_users_remove_unknown_is_refused_before_asking(cli):
    r = cli("users", "remove", unique_name("nobody"), tty=True, stdin="y\n")
    assert_error(r, 1, "no active user")
    assert "[y/N]" not in r.err


def test_interrupted_question(cli, db, new_user, monkeypatch):
    name = new_user()

    def interrupt(*_args: object) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(Terminal, "readline", interrupt)
    r = cli("users", "remove", name, tty=True)
    assert_error(answered(r), 1, "interrupted")
    assert user_row(db, name).active is True


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


def test_users_passwd_without_a_password(cli, new_user):
    assert_error(cli("users", "passwd", new_user()), 2, "no password given")


def test_users_passwd_on_a_terminal(cli, server, new_user):
    name = new_user()
    r = cli("users", "passwd", name, tty=True, typed=("nueva clave", "nueva clave"))
    assert_ok(r)
    assert len(r.prompts) == 2
    assert tcp_login(server, name, "nueva clave") == (101, 102)
    r = cli("users", "passwd", name, tty=True, typed=("otra clave", "otra distinta"))
    assert_error(r, 2, "differ")
    assert tcp_login(server, name, "nueva clave") == (101, 102)


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


def test_subs_list_when_none_is_pending(cli, private_db):
    url, _ = private_db
    r = cli("subs", "list", url=url)
    assert_ok(r)
    assert r.out == "no pending subscriptions\n"


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

    monkeypatch.setattr(audit, "record", fail)
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


# -- games ---------------------------------------------------------------------------------


def test_games_list_on_shared_database(cli):
    r = cli("games", "list")
    assert_ok(r)
    assert r.out.splitlines()[0].split()[:3] == ["GAME", "WHITE", "BLACK"]


@pytest.fixture
def private_db(own_db):
    """(URL, Database) of the test's own, on the store under test: for purges."""
    return own_db


def test_games_list_and_purge(cli, private_db):
    url, database = private_db
    accounts, games = Accounts(database), Games(database)
    for name in ("ana", "bea", "carla"):
        accounts.add_user(name, PASSWORD)
    ana, bea, carla = (accounts.login(n, PASSWORD) for n in ("ana", "bea", "carla"))
    games.challenge(ana.id, "bea")
    finished = games.accept(bea.id, "B", "ana")  # bea white, ana black
    blocking(lambda: games.play(bea.id, finished, MoveRecord(1, "e2e4", 0, "1228", 0)))
    blocking(lambda: games.play(ana.id, finished, MoveRecord(2, "e7e5", 0, "5236", 0)))
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

    r = cli("games", "purge", url=url)  # not on a terminal: no question
    assert_ok(r)
    assert r.out == "1 finished game removed\n"
    rows = [line.split()[0] for line in cli("games", "list", url=url).out.splitlines()[1:]]
    assert rows == [f"P{active:07d}"]
    with database.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Move)) == 0
    assert blocking(lambda: games.status(ana.id, active)).status == 0
    assert cli("games", "purge", url=url).out == "no finished games removed\n"


DAY = 86400


def purge_setup(database: Database) -> tuple[int, int, int]:
    """Two finished games, 40 and 2 days ago, and an active one: (old, recent, active)."""
    accounts, games = Accounts(database), Games(database)
    for name in ("ana", "bea", "carla", "dora"):
        accounts.add_user(name, PASSWORD)
    ana, bea, carla, dora = (accounts.login(n, PASSWORD) for n in ("ana", "bea", "carla", "dora"))

    def finished(opponent, days_ago: int) -> int:
        games.challenge(ana.id, opponent.name)
        gid = games.accept(opponent.id, "B", "ana")
        games.resign(opponent.id, gid, "ana")
        with database.engine.begin() as conn:
            conn.execute(
                update(Game)
                .where(Game.id == gid)
                .values(finished_at=int(time.time()) - days_ago * DAY)
            )
        return gid

    old, recent = finished(bea, 40), finished(carla, 2)
    games.challenge(dora.id, "ana")
    return old, recent, games.accept(ana.id, "N", "dora")


def game_ids(cli, url: str) -> list[str]:
    r = cli("games", "list", url=url)
    assert_ok(r)
    return [line.split()[0] for line in r.out.splitlines()[1:]]


def pid(game_id: int) -> str:
    return f"P{game_id:07d}"


def test_games_purge_dry_run(cli, private_db):
    url, database = private_db
    old, recent, active = purge_setup(database)
    everything = game_ids(cli, url)
    assert everything == [pid(old), pid(recent), pid(active)]

    r = cli("games", "purge", "--dry-run", url=url)
    assert_ok(r)
    lines = r.out.splitlines()
    assert lines[0] == "would remove 2 finished games"
    assert lines[1].split()[:3] == ["GAME", "WHITE", "BLACK"]
    assert [line.split()[:5] for line in lines[2:]] == [
        [pid(old), "bea", "ana", "finished", "0-1"],
        [pid(recent), "carla", "ana", "finished", "0-1"],
    ]
    r = cli("games", "purge", "--dry-run", "--older-than", "30d", url=url)
    assert_ok(r)
    lines = r.out.splitlines()
    assert lines[0].startswith("would remove 1 finished game (finished before ")
    assert [line.split()[0] for line in lines[2:]] == [pid(old)]
    r = cli("games", "purge", "--dry-run", "--older-than", "60d", url=url)
    assert_ok(r)
    assert r.out.startswith("would remove no finished games (finished before ")
    assert len(r.out.splitlines()) == 1
    # On a terminal too, a dry run asks nothing and removes nothing.
    assert_ok(cli("games", "purge", "--dry-run", url=url, tty=True))
    assert game_ids(cli, url) == everything


def test_games_purge_older_than(cli, private_db):
    url, database = private_db
    _, recent, active = purge_setup(database)
    r = cli("games", "purge", "--older-than", "30d", url=url)
    assert_ok(r)
    assert r.out.startswith("1 finished game removed (finished before ")
    assert game_ids(cli, url) == [pid(recent), pid(active)]
    r = cli("games", "purge", "--older-than", "72h", url=url)
    assert_ok(r)
    assert r.out.startswith("no finished games removed")
    r = cli("games", "purge", "--older-than", "2820m", url=url)  # 47 hours
    assert_ok(r)
    assert r.out.startswith("1 finished game removed")
    assert game_ids(cli, url) == [pid(active)]


@pytest.mark.parametrize(
    "value", ["30", "d", "=-1d", "1w", "1.5d", "1234567d", "30 d", "\uff13\uff10d", "=30D"]
)
def test_games_purge_bad_duration(cli, private_db, value):
    url, database = private_db
    purge_setup(database)
    option = f"--older-than{value}" if value.startswith("=") else "--older-than"
    args = (option,) if value.startswith("=") else (option, value)
    assert_error(cli("games", "purge", *args, url=url), 2, "duration")
    assert len(game_ids(cli, url)) == 3


def test_games_purge_on_a_terminal_asks(cli, private_db):
    url, database = private_db
    active = purge_setup(database)[2]
    for answer in ("n\n", ""):
        r = cli("games", "purge", url=url, tty=True, stdin=answer)
        assert "remove 2 finished games and their moves? [y/N]" in r.err
        assert_error(answered(r), 1, "not confirmed")
        assert len(game_ids(cli, url)) == 3
    r = cli("games", "purge", "--older-than", "30d", url=url, tty=True, stdin="y\n")
    assert r.status == 0, r
    assert "remove 1 finished game (finished before " in r.err
    assert r.out.startswith("1 finished game removed")
    r = cli("games", "purge", "--yes", url=url, tty=True)
    assert_ok(r)  # nothing asked
    assert r.out == "1 finished game removed\n"
    r = cli("games", "purge", url=url, tty=True)
    assert_ok(r)  # nothing to remove, nothing to ask
    assert r.out == "no finished games removed\n"
    assert game_ids(cli, url) == [pid(active)]


def test_games_purge_is_audited(cli, private_db):
    url, database = private_db
    old, recent, _ = purge_setup(database)
    assert_ok(cli("games", "purge", "--dry-run", url=url))
    assert audit.entries(database) == []  # a dry run changes nothing
    assert_ok(cli("games", "purge", url=url))
    [entry] = audit.entries(database)
    assert (entry.actor, entry.action) == (getpass.getuser(), "games purge")
    assert pid(old) in entry.detail and pid(recent) in entry.detail
    r = cli("audit", url=url)
    assert_ok(r)
    assert r.out.splitlines()[-1].split()[2:5] == [getpass.getuser(), "games", "purge"]


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
