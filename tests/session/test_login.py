"""Login through the session, in process: USER, PASS, and what is refused before it
(docs/protocol.md section 3). Every failure of USER or PASS, and any command that needs
a login, closes the session."""

from __future__ import annotations

import pytest

from tests.support.common import PASSWORD
from tests.support.session import frame


def test_user_then_pass_reply_exact_bytes(connect, user):
    name = user("ana")
    c = connect()
    assert c.raw(f"USER:{name}\r\n") == b"1010" + len(name).to_bytes(2, "big") + name.encode()
    assert c.raw(f"PASS:{PASSWORD}\r\n") == b"1020" + len(name).to_bytes(2, "big") + name.encode()
    assert not c.closed
    assert c.cmd("JAUT:99999999999").code == 201  # logged in


def test_unknown_user_closes(connect):
    c = connect()
    r = c.cmd("USER:nobody_at_all")
    assert r.code == 814 and not r.more and "nobody_at_all" in r.text
    assert c.closed


def test_wrong_password_closes(connect, user):
    name = user()
    c = connect()
    assert c.raw(f"USER:{name}") == frame(101, name)
    assert c.raw("PASS:not the password") == frame(815, "wrong password")
    assert c.closed


def test_pass_without_user_closes(connect):
    c = connect()
    r = c.cmd(f"PASS:{PASSWORD}")
    assert r.code == 806 and r.text
    assert c.closed


def test_failed_user_forgets_the_previous_one(connect, user):
    name = user()
    c = connect()
    assert c.code(f"USER:{name}") == 101
    assert c.code("USER:no_such_user_here") == 814
    assert c.closed


def test_second_user_replaces_the_first(connect, user):
    first, second = user("a"), user("b", password="another secret")
    c = connect()
    assert c.code(f"USER:{first}") == 101
    assert c.raw(f"USER:{second}") == frame(101, second)
    assert c.raw("PASS:another secret") == frame(102, second)


def test_names_are_compared_exactly(connect, user):
    name = user("Cased")
    c = connect()
    assert c.code(f"USER:{name.lower()}") == 814
    assert c.closed


def test_user_and_pass_after_login_keep_the_session(login, user):
    name = user()
    c = login(name)
    assert c.cmd(f"USER:{name}").code == 807
    assert c.cmd(f"PASS:{PASSWORD}").code == 807
    assert not c.closed
    assert c.cmd("JAUT:99999999999").code == 201


@pytest.mark.parametrize(
    "line",
    [
        "JUEG:bea",
        "TRAN:0",
        "ACEP:B:bea",
        "DECL:bea",
        "PPEN:0",
        "SOLI",
        "BAJA:0",
        "JAUT:0",
        "SRNK",
        "STAT:P0000001",
        "SPAR:P0000001:0",
        "JGDA:P0000001:1:e2e4:0:1228:0",
        "TBLS:P0000001:bea",
        "RTBL:P0000001:S:bea",
        "REND:P0000001:bea",
        "FINP:P0000001:bea",
        "PGNX:P0000001",
        "UNSU:ana:clave",
        "JAUT",  # a wrong field count still needs a login first
        "STAT:P1",  # and so does a malformed field
    ],
)
def test_command_before_login_is_refused_and_closes(connect, line):
    c = connect()
    r = c.cmd(line)
    assert r.code == 805, r
    assert r.text.startswith(line.split(":")[0]) and "login" in r.text
    assert c.closed


def test_command_between_user_and_pass_closes(connect, user):
    c = connect()
    assert c.code(f"USER:{user()}") == 101
    assert c.code("JAUT:0") == 805
    assert c.closed


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"ABCD", 800),
        (b"quit", 800),  # command codes are case-sensitive
        (b"USER", 801),
        (b"USER:a:b", 801),
        (b"USER:not a name", 802),
        (b"PASS", 801),
        (b"USER:\xff\xfe", 804),
    ],
)
def test_bad_line_before_login_closes(connect, line, code):
    c = connect()
    r = c.cmd(line)
    assert r.code == code, r
    assert r.text and "\n" not in r.text
    assert c.closed


def test_help_subs_and_overlong_before_login_keep_the_session(connect):
    c = connect()
    assert c.all("HELP")[0].code == 110
    assert c.code("HELP:NOPE") == 802
    assert c.code("SUBS:-bad:secret:") == 802  # a failing SUBS does not close either
    outcome = c.session.overlong(2048)
    assert outcome.replies == [frame(803, "line longer than 2048 bytes; it was discarded")]
    assert not outcome.close
    assert not c.closed
    assert c.raw("QUIT") == b""
    assert c.closed
