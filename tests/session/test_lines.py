"""Lines after login, through the session in process: HELP, QUIT, unknown commands, wrong
field counts and malformed fields. After login every bad line gets a one-line failure and
the session goes on (docs/protocol.md sections 1 and 3)."""

from __future__ import annotations

import pytest

from ajedrez.espol.commands import SPECS
from tests.support.session import frame


@pytest.fixture
def me(login, user):
    return login(user())


def test_help_lists_every_command(me):
    parts = me.all("HELP")
    assert {p.code for p in parts} == {110}
    assert [p.more for p in parts] == [True] * (len(parts) - 1) + [False]
    lines = "\n".join(p.text for p in parts).split("\n")
    for name in SPECS:
        assert any(line.startswith(name) for line in lines), name


def test_help_one_command(me):
    r = me.cmd("HELP:JGDA")
    assert r.code == 110 and r.text.startswith("JGDA") and "\n" not in r.text


def test_help_unknown_topic(me):
    assert me.raw("HELP:NOPE") == frame(802, "HELP: no command 'NOPE'")
    assert not me.closed


@pytest.mark.parametrize("line", ["ABCD", "quit", "JGDAX:1", "XXXX:a:b"])
def test_unknown_command_keeps_the_session(me, line):
    r = me.cmd(line)
    assert r.code == 800 and line.split(":")[0] in r.text
    assert not me.closed


@pytest.mark.parametrize(
    "line",
    [
        "JUEG",
        "JUEG:a:3d:1:x",
        "TRAN",
        "TRAN:0:1:x",
        "SOLI:1:x",
        "ACEP:B:ana:3d:x",
        "RELJ",
        "LICE",
        "LICE:I:3:x",
        "ACEP:B",
        "STAT",
        "STAT:P0000001:1:2",
        "SPAR:P0000001",
        "JGDA:P0000001:1:e2e4:0:1228",
        "JGDA:P0000001:1:e2e4:0:1228:0:9",
        "TBLS:P0000001",
        "RTBL:P0000001:S",
        "REND:P0000001",
        "FINP:P0000001",
        "PGNX",
        "UNSU:a",
        "SRNK:x",
    ],
)
def test_wrong_field_count(me, line):
    r = me.cmd(line)
    assert r.code == 801, r
    assert r.text and "\n" not in r.text
    assert not me.closed


@pytest.mark.parametrize(
    "line",
    [
        "TRAN:abc",
        "TRAN:123456789012",
        "PPEN:-1",
        "JUEG:bad name",
        "ACEP:X:bob",
        "ACEP:b:bob",
        "STAT:P123",
        "STAT:p0000001",
        "SPAR:P0000001:x",
        "JGDA:P0000001:1:e2e2:0:1212:0",  # the same square twice
        "JGDA:P0000001:1:e2e4:2:1228:0",  # reverso 0 or 1
        "JGDA:P0000001:1:e2e4:0:12:0",
        "JGDA:P0000001:1:e2e4:0:1228:1",  # no such promotion code
        "JGDA:P0000001:1:E2E4:0:1228:0",
        "RTBL:P0000001:Q:bob",
    ],
)
def test_malformed_field(me, line):
    r = me.cmd(line)
    assert r.code == 802, r
    assert r.text and "\n" not in r.text
    assert not me.closed


def test_non_utf8_line_keeps_the_session(me):
    assert me.cmd(b"JUEG:\xc3\x28").code == 804
    assert not me.closed


def test_trailing_colon_is_ignored_when_no_field_is_missing(me):
    assert me.cmd("SRNK:").code == 205
    assert me.cmd("JAUT:99999999999:").code == 201


def test_an_empty_optional_field_is_as_if_left_out(login, user):
    """An ESPOL 1995 client's trailing ':' on the commands that gained an optional field
    gets what it always got."""
    ana, bob = user("a"), user("b")
    a, b = login(ana), login(bob)
    assert a.raw(f"JUEG:{bob}:") == frame(200)
    tran = b.cmd("TRAN:0:")
    assert tran.code == 200 and tran.text.endswith(f",{ana}")  # names alone
    assert b.raw("SOLI:") == frame(216, f"R:{ana}")
    accepted = b.cmd(f"ACEP:N:{ana}:")
    assert accepted.code == 202
    relj = a.cmd(f"RELJ:{accepted.text}")
    assert relj.text.split(":")[2:] == ["none", "0", "0", "-", "0", "0", "0", ""]  # no clock
    assert a.cmd("LICE:E:").code == 218


def test_quit_after_login_has_no_reply(me):
    assert me.raw("QUIT") == b""
    assert me.closed
