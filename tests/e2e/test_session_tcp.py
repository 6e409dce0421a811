"""The session over real TCP after login: bad lines keep the connection, pipelining, clients
that vanish, HELP and QUIT (contract sections 1, 2 and the session rows of section 4). Login
is in test_session_login.py, SUBS, UNSU and JAUT in test_session_accounts.py."""

from __future__ import annotations

import time

import pytest

from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.tcp import (
    FAR_FUTURE,
    assert_failure,
    assert_logged_in,
    jaut,
    new_connection_login,
    vanish,
)

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
    assert_failure(c.reply(), 803)  # reported once the piece is over the limit: it was read
    c.send_raw(b"B" * 3000)
    # Nothing answers this piece (the line is reported already): a pause, so that the
    # server reads it apart from the command-like tail below.
    time.sleep(0.05)  # no reply to wait for: real time keeps the pieces apart
    c.send_raw(b"QUIT\r\nHELP:JAUT\r\n")
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
