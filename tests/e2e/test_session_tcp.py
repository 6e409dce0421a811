"""The session over real TCP: framing, login rules, SUBS, UNSU, JAUT, HELP and QUIT
(contract sections 1, 2, 3 and the session rows of section 4)."""

from __future__ import annotations

import re
import socket
import struct
import time

import pytest
from sqlalchemy import select

from ajedrez.domain.passwords import hash_password, verify
from ajedrez.store.models import Subscription, User
from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.espol import Conn, Reply
from tests.support.store import insert_users

FAR_FUTURE = "99999999999"
FECHA_RE = re.compile(r"[0-9]{11}")
USUARIO_RE = re.compile(r"[A-Za-z0-9_.\-]{1,32}")
LOGIN_COMMANDS = [
    "JUEG:bea",
    "TRAN:0",
    "ACEP:B:bea",
    "PPEN:0",
    "JAUT:0",
    "SRNK",
    "STAT:P0000001",
    "SPAR:P0000001:0",
    "JGDA:P0000001:1:e2e4:0:1228:0",
    "TBLS:P0000001:bea",
    "TBLs:P0000001:bea",
    "RTBL:P0000001:S:bea",
    "RTBS:P0000001:S:bea",
    "REND:P0000001:bea",
    "FINP:P0000001:bea",
    "UNSU:ana:clave",
    "JAUT",  # a wrong field count is still "needs a login"
    "JAUT:abc",  # so is a malformed field
]


# -- helpers -------------------------------------------------------------------------------


def raw_reply(c: Conn) -> tuple[bytes, bytes]:
    """(6-byte header, data) read straight off the stream, without interpretation."""
    header = c._read_exact(6)
    (length,) = struct.unpack("!H", header[4:6])
    return header, c._read_exact(length)


def assert_failure(r: Reply, code: int) -> None:
    assert r.code == code, r
    assert not r.more
    assert r.text.strip(), "a failure carries a reason"
    assert "\n" not in r.text and "\r" not in r.text, "the reason is one line"


def assert_usable(c: Conn) -> None:
    """The connection answers the next command (HELP works logged in or not)."""
    r = c.cmd("HELP:QUIT")
    assert r.code == 110, r
    assert r.text.startswith("QUIT")


def assert_logged_in(c: Conn) -> None:
    r = c.cmd(f"JAUT:{FAR_FUTURE}")
    assert r.code == 201, r


def vanish(c: Conn) -> None:
    """Close with a TCP reset, as a crashed client or a dropped link would."""
    c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


def jaut(c: Conn, fecha: str) -> tuple[str, list[str], list[Reply]]:
    """(fecha, names, parts) of a JAUT answer, checking its framing."""
    parts = c.cmd_all(f"JAUT:{fecha}")
    if parts[0].code == 201:
        assert len(parts) == 1 and FECHA_RE.fullmatch(parts[0].text), parts
        return parts[0].text, [], parts
    stamp = parts[0].text[:11]
    assert FECHA_RE.fullmatch(stamp), parts[0].text[:20]
    names: list[str] = []
    for i, p in enumerate(parts):
        assert p.code == 204, p
        assert p.more == (i < len(parts) - 1)
        assert len(p.data) <= 4096
        assert p.text.startswith(stamp + ","), p.text[:20]
        names.extend(p.text[len(stamp) + 1 :].split(","))
    return stamp, names, parts


def user_row(db, name: str):
    with db.engine.connect() as conn:
        return conn.execute(select(User).where(User.name == name)).first()


def subscription_row(db, name: str):
    with db.engine.connect() as conn:
        return conn.execute(select(Subscription).where(Subscription.name == name)).first()


def new_connection_login(server, name: str, password: str = PASSWORD) -> Conn:
    c = server.connect()
    assert c.cmd(f"USER:{name}").code == 101
    assert c.cmd(f"PASS:{password}").code == 102
    return c


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


# -- after login: bad lines keep the connection -------------------------------------------


@pytest.mark.parametrize(
    "line, code",
    [
        ("ABCD", 800),
        ("quit", 800),
        ("Quit", 800),
        ("jaut:0", 800),
        ("Help", 800),
        ("QUI", 800),
        ("", 800),
        ("JAUT", 801),
        ("JAUT:0:0", 801),
        ("JAUT:0::", 801),
        ("QUIT:x", 801),
        ("HELP:JGDA:x", 801),
        ("UNSU:ana", 801),
        ("SUBS:ana:clave", 801),
        ("RTBS", 801),  # the alias is known: a count failure, not an unknown code
        ("TBLs:P0000001", 801),
        ("JAUT:x", 802),
        ("HELP:ZZZZ", 802),
        ("UNSU:bad name:clave", 802),
        ("SUBS:ana:clave:" + "c" * 201, 802),
    ],
)
def test_bad_line_after_login_keeps_connection(login, new_user, line, code):
    c = login(new_user())
    assert_failure(c.cmd(line), code)
    assert_logged_in(c)


@pytest.mark.parametrize(
    "fecha",
    [
        "",
        "123456789012",
        "000000000000",
        "-1",
        "+1",
        "1a",
        "a1",
        " 1",
        "1 ",
        "1.5",
        "0x1",
        "\uff11\uff12",
    ],
)
def test_fecha_syntax_errors(login, new_user, fecha):
    c = login(new_user())
    assert_failure(c.cmd(f"JAUT:{fecha}"), 802)
    assert_logged_in(c)


@pytest.mark.parametrize("raw", [b"JAUT:\xff\r\n", b"\xfe\xff\r\n", b"SUBS:a\xc3:b:\n"])
def test_non_utf8_after_login_keeps_connection(login, new_user, raw):
    c = login(new_user())
    c.send_raw(raw)
    assert_failure(c.reply(), 804)
    assert_logged_in(c)


def test_bare_lf_terminator(login, new_user):
    c = login(new_user())
    c.send_raw(b"JAUT:" + FAR_FUTURE.encode() + b"\n")
    assert c.reply().code == 201
    c.send_raw(b"HELP:QUIT\n")
    assert c.reply().code == 110


def test_line_at_the_length_limit_is_a_line(login, new_user):
    c = login(new_user())
    line = b"JAUT:" + b"1" * (2048 - 5)
    assert len(line) == 2048
    c.send_raw(line + b"\r\n")
    assert_failure(c.reply(), 802)  # a line, judged on its field: not 803
    c.send_raw(line + b"\n")
    assert_failure(c.reply(), 802)
    assert_logged_in(c)


@pytest.mark.parametrize("term", [b"\r\n", b"\n"])
def test_line_over_the_limit_is_discarded(login, new_user, term):
    c = login(new_user())
    c.send_raw(b"JAUT:" + b"1" * (2049 - 5) + term)
    assert_failure(c.reply(), 803)
    assert_logged_in(c)


def test_overlong_line_in_pieces_stays_in_step(login, new_user):
    c = login(new_user())
    # The tail of the long line looks like a command: it must not be executed.
    c.send_raw(b"HELP:" + b"A" * 3000)
    time.sleep(0.05)
    c.send_raw(b"B" * 3000)
    time.sleep(0.05)
    c.send_raw(b"QUIT\r\nHELP:JAUT\r\n")
    assert_failure(c.reply(), 803)
    r = c.reply()
    assert (r.code, r.more) == (110, False)
    assert r.text.startswith("JAUT")
    assert_logged_in(c)


def test_huge_line_reported_once(login, new_user):
    c = login(new_user())
    c.send_raw(b"X" * 300_000 + b"\r\n" + f"JAUT:{FAR_FUTURE}\r\n".encode())
    assert_failure(c.reply(), 803)
    assert c.reply().code == 201
    assert_logged_in(c)


def test_pipelined_commands_in_one_packet(server, new_user):
    name = new_user()
    with server.connect() as c:
        c.send_raw(
            f"USER:{name}\r\nPASS:{PASSWORD}\r\nJAUT:0\r\nHELP:QUIT\r\nABCD\r\n"
            f"JAUT:{FAR_FUTURE}\r\nQUIT\r\n".encode()
        )
        assert (c.reply().code, c.reply().code) == (101, 102)
        parts = c.replies()
        assert {p.code for p in parts} == {204}
        assert name in ",".join(p.text for p in parts).split(",")
        assert c.reply().code == 110
        assert_failure(c.reply(), 800)
        assert c.reply().code == 201
        assert c.is_closed()


def test_pipelined_after_failed_login_nothing_more_runs(server):
    name = unique_name("pipe")
    with server.connect() as c:
        c.send_raw(f"USER:{unique_name('nobody')}\r\nSUBS:{name}:clave:\r\nHELP\r\n".encode())
        assert_failure(c.reply(), 814)
        assert c.is_closed()
    with server.connect() as c:  # the SUBS after the failure was never carried out
        assert c.cmd(f"SUBS:{name}:clave:").code == 103


def test_command_codes_are_case_sensitive_before_quit(login, new_user):
    c = login(new_user())
    assert_failure(c.cmd("quit"), 800)
    assert_logged_in(c)
    c.send("QUIT")
    assert c.is_closed()


@pytest.mark.parametrize("line", ["QUIT", "QUIT:"])
def test_quit_after_login_no_reply(login, new_user, line):
    c = login(new_user())
    c.send(line)
    assert c.is_closed()


# -- clients that vanish -------------------------------------------------------------------


def test_client_vanishing_mid_line_does_not_affect_others(server, login, new_user):
    name = new_user()
    other = login(name)
    for partial in (b"SUBS:vanish", b"JAUT:0", b"USER:", b"\xff\xfe", b"X" * 4000):
        c = server.connect()
        c.send_raw(partial)
        vanish(c)
        c = server.connect()
        c.send_raw(partial)
        c.close()
    assert_logged_in(other)
    _, names, _ = jaut(other, "0")
    assert name in names
    with new_connection_login(server, name) as again:
        assert_logged_in(again)
    assert server.proc.poll() is None


def test_client_vanishing_mid_command_does_not_affect_others(server, login, new_user):
    name = new_user()
    other = login(name)
    log_start = len(server.log)
    for _ in range(3):
        c = new_connection_login(server, name)
        c.send("JAUT:0\r\nHELP\r\nJAUT:0")  # leaves without reading the answers
        vanish(c)
    assert_logged_in(other)
    assert server.proc.poll() is None
    assert wait_for(lambda: len(server.log) > log_start)  # at least the logins
    assert "Traceback" not in "\n".join(server.log[log_start:])


# -- SUBS ----------------------------------------------------------------------------------


def test_subs_stores_a_hashed_request(server, db):
    name = unique_name("subs")
    pw = "Secreto-" + unique_name("pw")
    with server.connect() as c:
        r = c.cmd(f"SUBS:{name}:{pw}:Ana María, Guayaquil")
        assert (r.code, r.data) == (103, b"")
        assert_usable(c)  # before login SUBS does not end the session
    row = subscription_row(db, name)
    assert row is not None
    assert row.comment == "Ana María, Guayaquil"
    assert row.password_hash != pw and pw not in row.password_hash
    assert verify(pw, row.password_hash)[0]
    assert not verify(pw + "x", row.password_hash)[0]
    assert user_row(db, name) is None


def test_subs_longest_valid_line(server, db):
    """32-character name, 128-character password, 200-character comment, all multi-byte
    where allowed: well under the line limit, stored exactly."""
    name = unique_name("long").ljust(32, "L")
    pw = "\U0001f511" * 128
    comment = "\u00f1" * 100 + "\U0001f600" * 100
    line = f"SUBS:{name}:{pw}:{comment}"
    assert len(line.encode()) < 2048
    with server.connect() as c:
        assert c.cmd(line).code == 103
    row = subscription_row(db, name)
    assert row.comment == comment
    assert verify(pw, row.password_hash)[0]


def test_subs_hash_is_salted(server, db):
    a, b = unique_name("salt"), unique_name("salt")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{a}:same password:").code == 103
        assert c.cmd(f"SUBS:{b}:same password:").code == 103
    assert subscription_row(db, a).password_hash != subscription_row(db, b).password_hash


def test_subs_names_unique_regardless_of_case(server, new_user, db):
    name = new_user("case")
    variant = name.upper()
    with server.connect() as c:
        r = c.cmd(f"SUBS:{variant}:clave:")
        assert_failure(r, 816)
        assert r.text == f"the name '{variant}' is taken (as '{name}')"
        assert_failure(c.cmd(f"SUBS:{name}:clave:"), 816)
        assert c.cmd(f"USER:{variant}").code == 814  # login compares names exactly
    assert subscription_row(db, variant) is None
    assert subscription_row(db, name) is None


def test_subs_trailing_colon_is_an_empty_comment(server, db):
    name = unique_name("subs")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:clave:").code == 103
    assert subscription_row(db, name).comment == ""


def test_subs_comment_trailing_colon_ignored(server, db):
    name = unique_name("subs")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:clave:hola:").code == 103
    assert subscription_row(db, name).comment == "hola"


def test_subs_after_login(login, new_user, db):
    c = login(new_user())
    name = unique_name("subs")
    r = c.cmd(f"SUBS:{name}:clave:amigo")
    assert (r.code, r.data) == (103, b"")
    assert subscription_row(db, name).comment == "amigo"
    assert_logged_in(c)


def test_subs_name_of_active_user_taken(server, new_user, db):
    name = new_user()
    with server.connect() as c:
        assert_failure(c.cmd(f"SUBS:{name}:clave:"), 816)
        assert_usable(c)
    assert subscription_row(db, name) is None


def test_subs_name_of_inactive_user_taken(server, new_user, accounts, db):
    name = new_user()
    accounts.remove_user(name)
    with server.connect() as c:
        assert_failure(c.cmd(f"SUBS:{name}:clave:"), 816)
        assert_usable(c)
    assert subscription_row(db, name) is None


def test_subs_requested_twice(server, db):
    name = unique_name("twice")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:clave:first").code == 103
    with server.connect() as c:
        assert_failure(c.cmd(f"SUBS:{name}:other:second"), 816)
        assert_usable(c)
    assert subscription_row(db, name).comment == "first"


def test_password_never_in_clear(server, db, accounts):
    """Neither the database nor the server log holds a password in clear."""
    name = unique_name("clear")
    pw_subs = "ClearSubs-" + unique_name("p")
    pw_user = "ClearUser-" + unique_name("p")
    pw_wrong = "ClearWrong-" + unique_name("p")
    user = unique_name("clear")
    accounts.add_user(user, pw_user, "")
    with server.connect() as c:
        assert c.cmd(f"SUBS:{name}:{pw_subs}:").code == 103
    with server.connect() as c:
        assert c.cmd(f"USER:{user}").code == 101
        assert c.cmd(f"PASS:{pw_user}").code == 102
    with server.connect() as c:
        assert c.cmd(f"USER:{user}").code == 101
        assert_failure(c.cmd(f"PASS:{pw_wrong}"), 815)
    assert wait_for(lambda: f"subscription request for '{name}'" in server.log_text())
    assert wait_for(lambda: f"failed login for '{user}'" in server.log_text())
    log = server.log_text()
    for pw in (pw_subs, pw_user, pw_wrong):
        assert pw not in log
    with db.engine.connect() as conn:
        rows = [*conn.execute(select(User.__table__)), *conn.execute(select(Subscription))]
    dump = "\n".join(repr(tuple(r)) for r in rows)
    assert name in dump and user in dump
    for pw in (pw_subs, pw_user, pw_wrong):
        assert pw not in dump


# -- UNSU ----------------------------------------------------------------------------------


def test_unsu_closes_the_account(server, login, new_user, db):
    name = new_user()
    watcher = login(new_user())
    c = login(name)
    c.send(f"UNSU:{name}:{PASSWORD}")
    assert raw_reply(c) == (b"1040\x00\x00", b"")
    assert c.is_closed()
    row = user_row(db, name)
    assert row is not None and row.active is False
    with server.connect() as again:
        assert_failure(again.cmd(f"USER:{name}"), 814)
        assert again.is_closed()
    _, names, _ = jaut(watcher, "0")
    assert name not in names


def test_unsu_trailing_colon(login, new_user, db):
    name = new_user()
    c = login(name)
    assert c.cmd(f"UNSU:{name}:{PASSWORD}:").code == 104
    assert c.is_closed()
    assert user_row(db, name).active is False


def test_unsu_naming_another_user(login, new_user, db):
    name = new_user()
    other = new_user()
    c = login(name)
    assert_failure(c.cmd(f"UNSU:{other}:{PASSWORD}"), 808)
    assert_failure(c.cmd(f"UNSU:{unique_name('nobody')}:{PASSWORD}"), 808)
    assert_logged_in(c)
    assert user_row(db, other).active is True
    assert user_row(db, name).active is True


def test_unsu_wrong_password(login, new_user, db):
    name = new_user()
    c = login(name)
    assert_failure(c.cmd(f"UNSU:{name}:wrong password"), 815)
    assert c.is_closed()  # a failed login: no second guess on this session
    assert user_row(db, name).active is True


def test_unsu_keeps_subscription_name_taken(server, login, new_user):
    name = new_user()
    c = login(name)
    assert c.cmd(f"UNSU:{name}:{PASSWORD}").code == 104
    with server.connect() as s:
        assert_failure(s.cmd(f"SUBS:{name}:clave:"), 816)


# -- JAUT ----------------------------------------------------------------------------------


def test_jaut_all(login, new_user):
    name = new_user()
    other = new_user()
    c = login(name)
    stamp, names, parts = jaut(c, "0")
    assert parts[0].code == 204
    assert {name, other} <= set(names)
    assert abs(int(stamp) - time.time()) < 3600
    assert all(USUARIO_RE.fullmatch(n) for n in names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize("fecha", ["0", "00000000000", "1", "0000000001"])
def test_jaut_short_fecha_forms(login, new_user, fecha):
    name = new_user()
    c = login(name)
    _, names, _ = jaut(c, fecha)
    assert name in names


def test_jaut_nothing_since(login, new_user):
    c = login(new_user())
    r = c.cmd(f"JAUT:{FAR_FUTURE}")
    assert (r.code, r.more) == (201, False)
    assert FECHA_RE.fullmatch(r.text)
    assert abs(int(r.text) - time.time()) < 3600


def test_jaut_since_fecha(login, new_user, accounts):
    old = new_user()
    c = login(old)
    time.sleep(1.1)  # fechas are whole seconds: let the clock pass old's stamp
    since, _, _ = jaut(c, FAR_FUTURE)
    fresh = new_user()
    gone = new_user()
    accounts.remove_user(gone)
    stamp, names, _ = jaut(c, since)
    assert fresh in names
    assert old not in names
    assert gone not in names
    assert int(stamp) >= int(since)


def test_jaut_lists_active_users_only(login, new_user, accounts):
    c = login(new_user())
    gone = new_user()
    kept = new_user()
    accounts.remove_user(gone)
    _, names, _ = jaut(c, "0")
    assert kept in names
    assert gone not in names


def test_jaut_sync_round_trip(login, new_user):
    c = login(new_user())
    stamp, _, _ = jaut(c, "0")
    later = new_user()
    _, names, _ = jaut(c, stamp)
    assert later in names


@pytest.fixture(scope="module")
def many_users(db) -> list[str]:
    """200 active users with 32-character names: over 6,600 bytes of JAUT records."""
    base = unique_name("mp")
    names = [f"{base}-{i:03d}".ljust(32, "z") for i in range(200)]
    assert all(len(n) == 32 and USUARIO_RE.fullmatch(n) for n in names)
    insert_users(db, names, hash_password(PASSWORD))
    return names


def test_jaut_multi_part(login, many_users):
    c = login(many_users[0])
    c.send("JAUT:0")
    # Read the raw stream: each header's flag byte and length must hold exactly.
    raws = []
    while True:
        header, data = raw_reply(c)
        raws.append((header, data))
        assert header[:3] == b"204"
        assert header[3:4] in (b"0", b"1")
        assert struct.unpack("!H", header[4:6])[0] == len(data) <= 4096
        if header[3:4] == b"0":
            break
    assert len(raws) >= 2
    stamp = raws[0][1][:11].decode()
    assert FECHA_RE.fullmatch(stamp)
    records: list[str] = []
    for _, data in raws:
        text = data.decode("utf-8")
        assert text.startswith(stamp + ",")
        part = text[12:].split(",")
        assert all(USUARIO_RE.fullmatch(rec) for rec in part), "a record was cut"
        records.extend(part)
    assert set(many_users) <= set(records)
    assert len(records) == len(set(records))
    assert_logged_in(c)  # the stream is in step after the last part


def test_jaut_multi_part_through_client(login, many_users):
    c = login(many_users[1])
    _, names, parts = jaut(c, "1")
    assert len(parts) >= 2
    assert set(many_users) <= set(names)


# -- HELP ----------------------------------------------------------------------------------

COMMANDS = [
    *("USER", "PASS", "SUBS", "UNSU", "HELP", "QUIT", "JUEG", "TRAN", "ACEP", "PPEN"),
    *("JAUT", "SRNK", "STAT", "SPAR", "JGDA", "TBLS", "RTBL", "REND", "FINP"),
]


def test_help_lists_every_command(login, new_user):
    c = login(new_user())
    parts = c.cmd_all("HELP")
    assert all(p.code == 110 for p in parts)
    text = "\n".join(p.text for p in parts)
    lines = text.split("\n")
    assert "\r" not in text
    starts = {line.split(" ", 1)[0].split(":", 1)[0] for line in lines}
    for name in COMMANDS:
        assert name in starts, name
    assert any(line.startswith("JGDA:<partida>:<#jugada>:<jugada>:") for line in lines)
    assert any(line.startswith("SUBS:<usuario>:<password>:<comentario>") for line in lines)


@pytest.mark.parametrize("line", ["HELP:JGDA", "HELP:JGDA:"])
def test_help_one_command(server, line):
    with server.connect() as c:
        r = c.cmd(line)
        assert (r.code, r.more) == (110, False)
        assert "\n" not in r.text
        assert r.text.startswith(
            "JGDA:<partida>:<#jugada>:<jugada>:<reverso>:<posicion>:<promocion>"
        )


@pytest.mark.parametrize("topic, start", [("UNSU", "UNSU:<usuario>:<password>"), ("QUIT", "QUIT")])
def test_help_topic_after_login(login, new_user, topic, start):
    c = login(new_user())
    r = c.cmd(f"HELP:{topic}")
    assert r.code == 110
    assert r.text.startswith(start)
    assert "\n" not in r.text


def test_help_with_empty_topic_is_the_full_list(server):
    with server.connect() as c:
        full = "\n".join(p.text for p in c.cmd_all("HELP"))
        assert "\n".join(p.text for p in c.cmd_all("HELP:")) == full


@pytest.mark.parametrize("topic", ["jgda", "ZZZZ"])
def test_help_unknown_topic(login, new_user, topic):
    c = login(new_user())
    assert_failure(c.cmd(f"HELP:{topic}"), 802)
    assert_logged_in(c)
