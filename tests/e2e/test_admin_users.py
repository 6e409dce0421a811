"""ajedrez-admin's accounts: users add, list, remove and passwd, and the subscription
requests (subs list, approve, reject), each error one line on stderr with a non-zero status
(contract section 5). Most cases call ajedrez.admin.cli.main in this process.
"""

from __future__ import annotations

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.tokens import Tokens, secret_hash
from tests.support.admin import (
    Terminal,
    answered,
    assert_error,
    assert_ok,
    audit_rows,
    listed,
    on_terminal,
    pid,
    tcp_login,
    user_row,
)
from tests.support.common import PASSWORD, unique_name
from tests.support.moves import status

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
    assert games.challengers_since(t.id, 0)[1] == [(black, "none")]
    r = cli("users", "remove", black)
    assert_ok(r)
    assert r.out == f"user {black} removed; 1 active game forfeited: {pid(game_id)}\n"
    st = status(games, w.id, game_id)
    assert (st.status, st.ganador) == (2, 1)  # finished, white won
    assert st.solicitud_negras == 3  # the leaver counts as resigned
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
    assert [row.detail for row in audit_rows(accounts.store, leaver)] == [
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


# -- users tokens / revoke-tokens ----------------------------------------------------------


def test_users_tokens_and_revoke_tokens(cli, server, new_user, db):
    name = new_user()
    me = Accounts(db).login(name, PASSWORD)
    tokens = Tokens(db)
    first, secret1 = tokens.create(me.id, "ana's laptop")
    _, secret2 = tokens.create(me.id, "desk")
    _, secret3 = tokens.create(me.id, "phone")

    r = cli("users", "tokens", name)
    assert_ok(r)
    assert "ana's laptop" in r.out and "desk" in r.out and "phone" in r.out
    assert secret1 not in r.out and secret_hash(secret1) not in r.out

    assert_ok(r := cli("users", "revoke-tokens", name, "--id", str(first)))
    assert r.out == f"1 login token of {name} revoked\n"
    assert tcp_token_login(server, name, secret1) == 854
    assert tcp_token_login(server, name, secret2) == 102  # the others still log in
    assert_error(cli("users", "revoke-tokens", name, "--id", str(first)), 1, "no token")

    assert_ok(r := cli("users", "revoke-tokens", name))
    assert r.out == f"2 login tokens of {name} revoked\n"
    assert tcp_token_login(server, name, secret3) == 854
    assert cli("users", "tokens", name).out == f"{name} has no login tokens\n"
    done = [(r.action, r.detail) for r in audit_rows(db, name)]
    assert done[-2:] == [
        ("users revoke-tokens", f"token {first}"),
        ("users revoke-tokens", "all: 2"),
    ]

    assert_error(cli("users", "tokens", unique_name("nobody")), 1, "no user")
    assert_error(cli("users", "revoke-tokens", "bad name"), 2)


def tcp_token_login(server, name: str, secret: str) -> int:  # type: ignore[no-untyped-def]
    with server.connect() as c:
        c.send(f"FICH:{name}:{secret}")
        return int(c.reply().code)
