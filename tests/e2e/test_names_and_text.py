"""Names and text that mislead: names unique regardless of case, no new name that looks
like an option or a path, no stored text that can forge a line of the admin's listings;
over the protocol, through ajedrez-admin and across the upgrade that brought the rules,
on the store under test."""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import insert, select, text

from ajedrez.admin.cli import main
from ajedrez.domain.accounts import Accounts
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.passwords import hash_password
from ajedrez.espol import fields as values
from ajedrez.store.db import Database
from ajedrez.store.migrate import alembic_config, upgrade
from ajedrez.store.models import Subscription, User
from tests.support.common import PASSWORD, unique_name
from tests.support.store import insert_users, private_schema

# Each can forge or hide part of a row: reversed text, invisible text, a new line.
MISLEADING = ["\u202e", "\u200b", "\u200d", "\ufeff", "\u2028", "\u2029", "\t", "\x1b"]
OPTION_LIKE = ["-h", "--debug", "..", ".hidden", "-", "--"]


@pytest.fixture
def cli(monkeypatch, capsys) -> Callable[..., tuple[int, str, str]]:
    """ajedrez-admin's main() in this process, standard input not a terminal:
    cli(url, *args, stdin=...) -> (status, stdout, stderr)."""

    def run(url: str, *args: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        try:
            status = main(["--database-url", url, *args])
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
        out, err = capsys.readouterr()
        return status, out, err

    return run


def one_error(err: str, *words: str) -> None:
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("ajedrez-admin: "), err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])


def user(database: Database, name: str):  # type: ignore[no-untyped-def]
    with database.engine.connect() as conn:
        return conn.execute(select(User).where(User.name == name)).first()


def insert_request(database: Database, name: str, comment: str = "", key: bool = True) -> None:
    """A pending request stored as an older server may have left it."""
    with database.engine.begin() as conn:
        conn.execute(
            insert(Subscription).values(
                name=name,
                name_key=name.lower() if key else None,
                password_hash=hash_password(PASSWORD),
                comment=comment,
                requested_at=int(time.time()),
            )
        )


# -- field syntax ----------------------------------------------------------------------


@pytest.mark.parametrize("char", [*MISLEADING, "\x00", "\x7f", "\x85", "\u2066"])
def test_a_comment_refuses_control_format_and_separator_characters(char):
    with pytest.raises(ValueError, match="invalid comment") as e:
        values.comentario(f"Ana{char}Pérez")
    assert e.value.args[0].isprintable()


@pytest.mark.parametrize("comment", ["", "Ana Pérez", "José Ñandú", "名前", "♞ 1. e4!", "a b"])
def test_a_comment_keeps_ordinary_text(comment):
    assert values.comentario(comment) == comment


@pytest.mark.parametrize("name", OPTION_LIKE)
def test_a_new_name_may_not_start_with_a_dash_or_a_dot(name):
    assert values.usuario(name) == name  # an existing account of that name still logs in
    with pytest.raises(ValueError, match=r"may not start with '-' or '\.'"):
        values.new_usuario(name)


@pytest.mark.parametrize("name", ["ana", "a-b", "a.b", "_x", "9lives", "Ana.P-2"])
def test_ordinary_new_names(name):
    assert values.new_usuario(name) == name


def test_escaped_shows_what_cannot_be_printed():
    assert values.escaped("Ana Pérez 名前") == "Ana Pérez 名前"
    assert values.escaped("a\u202eb\u2028c\td\U000e0001") == "a\\u202eb\\u2028c\\u0009d\\U000e0001"


# -- over the protocol -----------------------------------------------------------------


def test_subs_refuses_a_name_that_differs_only_in_case(server, new_user):
    taken = new_user("Cs")
    with server.connect() as c:
        for name in (taken.upper(), taken.lower(), taken):
            r = c.cmd(f"SUBS:{name}:clave:")
            assert r.code == 816, (name, r)
            spelling = "" if name == taken else f" (as '{taken}')"
            assert r.text == f"the name '{name}' is taken{spelling}", r


def test_subs_refuses_a_name_requested_already_in_another_case(server, db):
    name = unique_name("Rq")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:clave:").code == 103
        r = c.cmd(f"SUBS:{name.swapcase()}:clave:")
        assert r.code == 816, r
        assert f"'{name.swapcase()}' has been requested already (as '{name}')" in r.text, r
    with db.engine.connect() as conn:
        keys = conn.scalars(
            select(Subscription.name_key).where(Subscription.name_key == name.lower())
        ).all()
    assert keys == [name.lower()]


@pytest.mark.parametrize("name", OPTION_LIKE)
def test_subs_refuses_a_name_starting_with_a_dash_or_a_dot(server, name):
    with server.connect() as c:
        r = c.cmd(f"SUBS:{name}:clave:")
        assert r.code == 802, r
        assert r.text == f"invalid user name '{name}': a new name may not start with '-' or '.'"
        assert c.cmd("HELP:QUIT").code == 110  # a refused SUBS leaves the session usable


@pytest.mark.parametrize("char", MISLEADING)
def test_subs_refuses_a_comment_that_could_forge_a_row(server, char):
    with server.connect() as c:
        r = c.cmd(f"SUBS:{unique_name('cm')}:clave:Ana{char}Pérez")
        assert r.code == 802, r
        assert r.text.startswith("SUBS: invalid comment: "), r
        assert values.escaped(char) in r.text


def test_existing_names_with_a_dash_or_in_other_case_keep_working(server, db, login):
    """Only where a name is created do the new rules apply: an account left from before
    logs in, is challenged, and login still compares names exactly."""
    dashed, dotted, upper = f"-{unique_name('h')}", f".{unique_name('d')}", unique_name("Up")
    insert_users(db, [dashed, dotted, upper], hash_password(PASSWORD))
    me = login(dashed)
    assert me.cmd(f"JUEG:{dotted}").code == 200
    assert login(dotted).cmd(f"ACEP:B:{dashed}").code == 202
    with server.connect() as c:
        assert c.cmd(f"USER:{upper.lower()}").code == 814
    with server.connect() as c:
        assert c.cmd(f"USER:{upper}").code == 101


# -- ajedrez-admin ---------------------------------------------------------------------


def test_users_add_refuses_a_name_that_differs_only_in_case(cli, database_url, new_user, db):
    taken = new_user("Ad")
    # No password given: the name is refused first, before a password is asked for.
    status, _, err = cli(database_url, "users", "add", taken.upper(), stdin="")
    assert status == 1
    one_error(err, f"the name '{taken.upper()}' is taken (as '{taken}')")
    assert user(db, taken.upper()) is None


def test_users_add_refuses_a_name_requested_in_another_case(cli, database_url, accounts, db):
    name = unique_name("Pq")
    accounts.subscribe(name, "clave", "")
    status, _, err = cli(database_url, "users", "add", name.upper(), stdin="x\n")
    assert status == 1
    one_error(err, f"(as '{name}')")
    assert user(db, name.upper()) is None


def test_users_add_sets_the_name_key(cli, database_url, db):
    name = unique_name("Key")
    assert cli(database_url, "users", "add", name, stdin="x\n")[0] == 0
    assert user(db, name).name_key == name.lower()


@pytest.mark.parametrize("name", OPTION_LIKE)
def test_users_add_refuses_a_name_starting_with_a_dash_or_a_dot(cli, database_url, db, name):
    status, _, err = cli(database_url, "users", "add", "--", name, stdin="x\n")
    assert status == 2
    one_error(err, "may not start with '-' or '.'")
    assert user(db, name) is None


@pytest.mark.parametrize("char", MISLEADING)
def test_users_add_refuses_a_comment_that_could_forge_a_row(cli, database_url, db, char):
    name = unique_name("cmt")
    status, _, err = cli(database_url, "users", "add", name, "--comment", f"a{char}b", stdin="x\n")
    assert status == 2
    one_error(err, "invalid comment")
    assert user(db, name) is None


def test_subs_approve_refuses_a_request_whose_name_is_taken_in_another_case(
    cli, database_url, accounts, db
):
    name = unique_name("Ap")
    accounts.subscribe(name, "clave", "")
    insert_users(db, [name.upper()], hash_password(PASSWORD))
    status, _, err = cli(database_url, "subs", "approve", name)
    assert status == 1
    one_error(err, f"the name '{name}' is taken (as '{name.upper()}'): reject the request")
    assert user(db, name) is None
    assert cli(database_url, "subs", "reject", name)[0] == 0


def test_subs_approve_sets_the_name_key(cli, database_url, accounts, db):
    name = unique_name("Ak")
    accounts.subscribe(name, "clave", "")
    assert cli(database_url, "subs", "approve", name)[0] == 0
    assert user(db, name).name_key == name.lower()


def test_a_name_taken_meanwhile_in_another_case_is_a_clear_refusal(db, monkeypatch):
    """The unique index is the last word: a clash that no check saw in time (another
    session inserted between check and insert) still gets 816 naming the spelling."""
    from ajedrez.domain import accounts as module

    name = unique_name("Race")
    insert_users(db, [name.upper()], hash_password(PASSWORD))
    checks = iter([None])  # the first check in the transaction sees nothing

    real = module._check_name_free

    def late(conn, n, *, requests=True):  # type: ignore[no-untyped-def]
        if next(checks, "real") is None:
            return None
        return real(conn, n, requests=requests)

    monkeypatch.setattr(module, "_check_name_free", late)
    with pytest.raises(Failure) as e:
        module.Accounts(db)._create_user(name, "x", "")
    assert e.value.kind is Refusal.NAME_TAKEN
    assert e.value.reason == f"the name '{name}' is taken (as '{name.upper()}')"


def test_users_remove_takes_a_dashed_name_after_double_dash(cli, database_url, db):
    name = f"-{unique_name('z')}"
    insert_users(db, [name], hash_password(PASSWORD))
    status, out, _ = cli(database_url, "users", "remove", name)
    # Without '--' the name is an option: not acted on.
    assert status == 2 and user(db, name).active
    status, out, _ = cli(database_url, "users", "remove", "-h")
    assert status == 0 and "'--'" in out and user(db, name).active
    status, out, err = cli(database_url, "users", "remove", "--", name)
    assert (status, err) == (0, ""), err
    assert out.startswith(f"user {name} removed")
    assert not user(db, name).active


def test_users_passwd_and_subs_take_a_dashed_name_after_double_dash(cli, database_url, db):
    name = f"--{unique_name('d')}"
    insert_users(db, [name], "old hash")
    assert cli(database_url, "users", "passwd", "--", name, stdin="new\n")[0] == 0
    assert user(db, name).password_hash != "old hash"
    request = f"-{unique_name('r')}"
    insert_request(db, request)
    status, _, err = cli(database_url, "subs", "approve", "--", request)
    assert status == 1
    one_error(err, "may not start with '-' or '.'", "reject the request")
    assert cli(database_url, "subs", "reject", "--", request)[0] == 0


@pytest.mark.parametrize("area", [("users", "remove"), ("users", "passwd"), ("subs", "approve")])
def test_the_help_says_how_to_name_a_dashed_account(cli, database_url, area):
    status, out, _ = cli(database_url, *area, "--help")
    assert status == 0
    assert "-- -h" in " ".join(out.split())


@pytest.fixture
def private(own_db) -> tuple[str, Database]:
    return own_db


def test_listings_escape_what_old_rows_hold(cli, private):
    """Text stored before it was refused is shown escaped: one line per row, nothing
    reversed, hidden or broken."""
    url, database = private
    forged = "Ana\u202eanaJ\u200b\u2028bob  closed  2026-01-01 00:00  0  fake\u2029\x1b[2J"
    with database.engine.begin() as conn:
        conn.execute(
            insert(User).values(
                name="ana",
                name_key="ana",
                password_hash="x",
                comment=forged,
                active=True,
                admitted_at=0,
                changed_at=0,
                wins=0,
            )
        )
    insert_request(database, "carla", forged)
    with database.write() as tx:
        tx.audit("root\u202e", "users add", "ana", forged)
    expect = "Ana\\u202eanaJ\\u200b\\u2028bob  closed  2026-01-01 00:00  0  fake\\u2029\\u001b[2J"
    for listing, rows in ((("users", "list"), 1), (("subs", "list"), 1), (("audit",), 1)):
        status, out, err = cli(url, *listing)
        assert (status, err) == (0, ""), err
        assert all(line.isprintable() for line in out.split("\n")), out
        assert len(out.splitlines()) == 1 + rows, out
        assert out.rstrip("\n").endswith(expect), out
    assert "root\\u202e" in cli(url, "audit")[1]


def test_games_list_escapes_player_names(cli, private):
    url, database = private
    accounts = Accounts(database)
    accounts.add_user("ana", PASSWORD)
    accounts.add_user("bob", PASSWORD)
    with database.engine.begin() as conn:
        conn.execute(text("UPDATE users SET name = :n WHERE name = 'bob'"), {"n": "b\u2028ob"})
    from ajedrez.domain.games import Games

    ana = accounts.login("ana", PASSWORD)
    Games(database).challenge(ana.id, "b\u2028ob")
    bob = accounts.login("b\u2028ob", PASSWORD)
    Games(database).accept(bob.id, "B", "ana")
    status, out, _ = cli(url, "games", "list")
    assert status == 0
    assert len(out.splitlines()) == 2 and "b\\u2028ob" in out, out


# -- the upgrade that brought names unique regardless of case ----------------------------


@pytest.fixture
def at_0003(tmp_path: Path) -> Iterator[tuple[str, Database]]:
    """A database on the store under test, at revision 0003 (names compared exactly)."""
    url = os.environ.get("AJEDREZ_TEST_DATABASE_URL")
    drop: Callable[[], None] | None = None
    if url and not url.startswith("sqlite"):
        url, drop = private_schema(url)
    else:
        url = f"sqlite:///{tmp_path / 'at0003.sqlite3'}"
    database = Database(url)
    cfg = alembic_config()
    with database.engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0003")
        conn.commit()
    yield url, database
    database.dispose()
    if drop is not None:
        drop()


def test_upgrade_keeps_clashing_accounts_and_tells_the_admin(cli, at_0003):
    url, database = at_0003
    hashed = hash_password(PASSWORD)
    with database.engine.begin() as conn:
        # One at a time, oldest first: the ids give the order.
        for name in ["Ana", "bob", "ana", "ANA", "Bob", "carla"]:
            conn.execute(
                text(
                    "INSERT INTO users (name, password_hash, comment, active, admitted_at,"
                    " changed_at, wins) VALUES (:n, :h, '', :a, 0, 0, 0)"
                ),
                {"n": name, "h": hashed, "a": True},
            )
        for name in ["Dora", "dora"]:
            conn.execute(
                text(
                    "INSERT INTO subscriptions (name, password_hash, comment, requested_at)"
                    " VALUES (:n, :h, '', 0)"
                ),
                {"n": name, "h": hashed},
            )
    status, out, err = cli(url, "db", "upgrade")
    assert (status, err) == (0, ""), err
    assert out.splitlines()[1:] == [
        "accounts whose names differ only in case (all keep working; the first holds the name):",
        "  Ana, ana, ANA",
        "  bob, Bob",
    ]
    with database.engine.connect() as conn:
        keys = dict(conn.execute(text("SELECT name, name_key FROM users")).all())
        requests = dict(conn.execute(text("SELECT name, name_key FROM subscriptions")).all())
    assert keys == {
        "Ana": "ana",
        "ana": None,
        "ANA": None,
        "bob": "bob",
        "Bob": None,
        "carla": "carla",
    }
    assert requests == {"Dora": "dora", "dora": None}

    status, out, _ = cli(url, "users", "list")
    assert status == 0
    names = [line.split()[0] for line in out.splitlines()[1:-1]]
    assert sorted(names) == sorted(["Ana*", "ana*", "ANA*", "bob*", "Bob*", "carla"])
    assert out.splitlines()[-1] == "* names that differ only in case: Ana = ana = ANA; bob = Bob"

    accounts = Accounts(database)
    for name in ("Ana", "ana", "ANA", "Bob"):  # every old account still logs in, exactly
        assert accounts.login(name, PASSWORD).name == name
    for new in ("aNa", "BOB", "Carla"):
        status, _, err = cli(url, "users", "add", new, stdin="x\n")
        assert status == 1, (new, err)
        one_error(err, f"the name '{new}' is taken (as '")
    for new in ("ana", "DORA"):  # an exact old name, a pending request in another case
        with pytest.raises(Failure, match=r"taken|requested already"):
            accounts.subscribe(new, "clave", "")
    assert cli(url, "subs", "approve", "Dora")[:3:2] == (0, "")
    status, _, err = cli(url, "subs", "approve", "dora")
    assert status == 1
    one_error(err, "the name 'dora' is taken (as 'Dora'): reject the request")
    # The shared listing outlives the upgrade: db upgrade tells it again.
    assert "  Ana, ana, ANA" in cli(url, "db", "upgrade")[1]
    upgrade(database)
