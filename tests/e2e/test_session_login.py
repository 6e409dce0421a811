"""The session over real TCP up to login: reply framing, the login rules, what is refused
before it (contract sections 1, 2, 3)."""

from __future__ import annotations

import struct

import pytest

from tests.support.common import PASSWORD, unique_name
from tests.support.tcp import (
    LOGIN_COMMANDS,
    assert_failure,
    assert_logged_in,
    assert_usable,
    jaut,
    raw_reply,
)

# -- reply framing -------------------------------------------------------------------------


def test_user_and_pass_reply_bytes_exactly(server, new_user):
    name = new_user()
    with server.connect() as c:
        c.send(f"USER:{name}")
        header, data = raw_reply(c)
        assert header == b"1010" + struct.pack("!H", len(name))
        assert data == name.encode()
        c.send(f"PASS:{PASSWORD}")
        header, data = raw_reply(c)
        assert header == b"1020" + struct.pack("!H", len(name))
        assert data == name.encode()


def test_subs_reply_is_an_empty_103(server):
    with server.connect() as c:
        c.send(f"SUBS:{unique_name('sb')}:secreto:")
        assert raw_reply(c) == (b"1030\x00\x00", b"")


def test_failure_reply_header(server):
    with server.connect() as c:
        c.send("ABCD")
        header, data = raw_reply(c)
        assert header[:4] == b"8000"
        assert struct.unpack("!H", header[4:6])[0] == len(data) > 0
        data.decode("utf-8")
        assert c.is_closed()


def test_length_counts_utf8_bytes(server, new_user):
    """A reason echoing non-ASCII text keeps the stream in step (length in bytes)."""
    with server.connect() as c:
        r = c.cmd("SUBS:ñandú_ñandú:clave:")
        assert_failure(r, 802)
        assert_usable(c)


def test_help_reply_framing(server):
    with server.connect() as c:
        c.send("HELP")
        header, data = raw_reply(c)
        assert header[:4] == b"1100"
        assert struct.unpack("!H", header[4:6])[0] == len(data) <= 4096


# -- before login --------------------------------------------------------------------------


@pytest.mark.parametrize("line", LOGIN_COMMANDS)
def test_command_before_login_fails_and_closes(server, line):
    with server.connect() as c:
        assert_failure(c.cmd(line), 805)
        assert c.is_closed()


def test_command_after_user_before_pass_fails_and_closes(server, new_user):
    name = new_user()
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        assert_failure(c.cmd("JAUT:0"), 805)
        assert c.is_closed()


@pytest.mark.parametrize("line", ["ABCD", "quit", "Help", "user:ana", "QUI", "QUITT", "12AB", ""])
def test_unknown_code_before_login_closes(server, line):
    with server.connect() as c:
        assert_failure(c.cmd(line), 800)
        assert c.is_closed()


@pytest.mark.parametrize("raw", [b"USER:\xff\xfe\r\n", b"\xc3(\r\n", b"\x80\x80\x80\x80\n"])
def test_non_utf8_before_login_closes(server, raw):
    with server.connect() as c:
        c.send_raw(raw)
        assert_failure(c.reply(), 804)
        assert c.is_closed()


@pytest.mark.parametrize(
    "line, code",
    [
        ("USER", 801),
        ("USER:a:b", 801),
        ("USER:", 802),
        ("USER:ana maria", 802),
        ("USER:" + "a" * 33, 802),
        ("USER:año", 802),
        ("PASS", 801),
        ("PASS:", 802),
    ],
)
def test_bad_user_or_pass_syntax_closes(server, line, code):
    with server.connect() as c:
        assert_failure(c.cmd(line), code)
        assert c.is_closed()


def test_bad_pass_syntax_after_user_closes(server, new_user):
    name = new_user()
    for line, code in [("PASS:", 802), ("PASS:a:b", 801), ("PASS:" + "x" * 129, 802)]:
        with server.connect() as c:
            assert c.cmd(f"USER:{name}").code == 101
            assert_failure(c.cmd(line), code)
            assert c.is_closed()


def test_unknown_user_closes(server):
    with server.connect() as c:
        assert_failure(c.cmd(f"USER:{unique_name('nobody')}"), 814)
        assert c.is_closed()


def test_user_names_compared_exactly(server, new_user):
    name = new_user("case")
    with server.connect() as c:
        assert_failure(c.cmd(f"USER:{name.upper()}"), 814)
        assert c.is_closed()


def test_inactive_user_closes(server, new_user, accounts):
    name = new_user()
    accounts.remove_user(name)
    with server.connect() as c:
        assert_failure(c.cmd(f"USER:{name}"), 814)
        assert c.is_closed()


def test_pending_subscription_is_not_a_user(server):
    name = unique_name("pend")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:{PASSWORD}:").code == 103
    with server.connect() as c:
        assert_failure(c.cmd(f"USER:{name}"), 814)
        assert c.is_closed()


def test_wrong_password_closes(server, new_user):
    name = new_user()
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        assert_failure(c.cmd("PASS:not the password"), 815)
        assert c.is_closed()


def test_password_is_not_trimmed(server, new_user):
    name = new_user(password=" spaced out ")
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        assert_failure(c.cmd("PASS:spaced out"), 815)
        assert c.is_closed()
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        r = c.cmd("PASS: spaced out ")
        assert (r.code, r.text) == (102, name)


def test_unicode_password(server, new_user):
    pw = "contraseña ñandú 🔑"
    name = new_user(password=pw)
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        r = c.cmd(f"PASS:{pw}")
        assert (r.code, r.text) == (102, name)
        assert_logged_in(c)


def test_user_closed_between_user_and_pass(server, new_user, accounts):
    name = new_user()
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        accounts.remove_user(name)
        assert_failure(c.cmd(f"PASS:{PASSWORD}"), 814)
        assert c.is_closed()


def test_pass_without_user_closes(server):
    with server.connect() as c:
        assert_failure(c.cmd(f"PASS:{PASSWORD}"), 806)
        assert c.is_closed()


def test_pass_with_trailing_colon(server, new_user):
    name = new_user()
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        r = c.cmd(f"PASS:{PASSWORD}:")
        assert (r.code, r.text) == (102, name)


def test_user_with_trailing_colon(server, new_user):
    name = new_user()
    with server.connect() as c:
        r = c.cmd(f"USER:{name}:")
        assert (r.code, r.text) == (101, name)


def test_second_user_replaces_the_first(server, new_user):
    first = new_user()
    second = new_user(password="otra clave")
    with server.connect() as c:
        assert c.cmd(f"USER:{first}").code == 101
        assert c.cmd(f"USER:{second}").code == 101
        r = c.cmd("PASS:otra clave")
        assert (r.code, r.text) == (102, second)


def test_failed_second_user_closes(server, new_user):
    name = new_user()
    with server.connect() as c:
        assert c.cmd(f"USER:{name}").code == 101
        assert_failure(c.cmd(f"USER:{unique_name('nobody')}"), 814)
        assert c.is_closed()


def test_help_before_login(server):
    with server.connect() as c:
        parts = c.cmd_all("HELP")
        assert all(p.code == 110 for p in parts)
        assert_usable(c)


@pytest.mark.parametrize("line, code", [("HELP:ZZZZ", 802), ("HELP:JG", 802), ("HELP:A:B", 801)])
def test_failing_help_before_login_keeps_connection(server, new_user, line, code):
    name = new_user()
    with server.connect() as c:
        assert_failure(c.cmd(line), code)
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102


@pytest.mark.parametrize(
    "line, code",
    [
        ("SUBS:ana", 801),
        ("SUBS:ana:clave", 801),
        ("SUBS:ana:clave:a:b", 801),
        ("SUBS:ana maria:clave:", 802),
        ("SUBS::clave:", 802),
        ("SUBS:ana::", 802),
        ("SUBS:ana:" + "x" * 129 + ":", 802),
        ("SUBS:ana:clave:" + "c" * 201, 802),
    ],
)
def test_failing_subs_before_login_keeps_connection(server, new_user, line, code):
    name = new_user()
    with server.connect() as c:
        assert_failure(c.cmd(line), code)
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102


@pytest.mark.parametrize("line", ["QUIT", "QUIT:"])
def test_quit_before_login(server, line):
    with server.connect() as c:
        c.send(line)
        assert c.is_closed()


def test_overlong_line_before_login_keeps_connection(server, new_user):
    name = new_user()
    with server.connect() as c:
        c.send_raw(b"USER:" + b"a" * 5000 + b"\r\n")
        assert_failure(c.reply(), 803)
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102


# -- login ---------------------------------------------------------------------------------


def test_login_replies(server, new_user):
    name = new_user()
    with server.connect() as c:
        r = c.cmd(f"USER:{name}")
        assert (r.code, r.more, r.text) == (101, False, name)
        r = c.cmd(f"PASS:{PASSWORD}")
        assert (r.code, r.more, r.text) == (102, False, name)
        assert_logged_in(c)


def test_user_and_pass_again_after_login(login, new_user):
    name = new_user()
    other = new_user()
    c = login(name)
    assert_failure(c.cmd(f"USER:{name}"), 807)
    assert_failure(c.cmd(f"USER:{other}"), 807)
    assert_failure(c.cmd(f"PASS:{PASSWORD}"), 807)
    assert_failure(c.cmd("PASS:wrong"), 807)
    assert_logged_in(c)


def test_several_sessions_of_one_user(server, login, new_user):
    name = new_user()
    a = login(name)
    b = login(name)
    c = login(name)
    for conn in (a, b, c):
        _, names, _ = jaut(conn, "0")
        assert name in names
    a.send("QUIT")
    assert a.is_closed()
    assert_logged_in(b)
    assert_logged_in(c)
