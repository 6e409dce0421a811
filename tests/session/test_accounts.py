"""Accounts through the session in process: JAUT, SUBS and UNSU (docs/protocol.md section
4). A wrong password in UNSU is a failed login: it closes the session."""

from __future__ import annotations

import re

from tests.support.common import PASSWORD, unique_name
from tests.support.session import frame

FECHA = r"[0-9]{11}"


def test_jaut_lists_active_users_sorted_with_the_caller(login, user):
    ana = user("ja")
    parts = login(ana).all("JAUT:0")
    assert {p.code for p in parts} == {204}
    stamp = parts[0].text[:11]
    assert re.fullmatch(FECHA, stamp)
    names = []
    for p in parts:
        assert p.text.startswith(stamp + ",")
        names += p.text[12:].split(",")
    assert ana in names and names == sorted(names)


def test_jaut_nothing_since(login, user):
    r = login(user()).cmd("JAUT:99999999999")
    assert r.code == 201 and re.fullmatch(FECHA, r.text)


def test_subs_before_and_after_login(connect, login, user):
    name = unique_name("s")
    c = connect()
    assert c.raw(f"SUBS:{name}:a secret:a comment") == b"1030\x00\x00"
    assert not c.closed
    assert c.cmd(f"SUBS:{name.upper()}:a secret:").code == 816  # taken, in any case
    assert login(user()).cmd(f"SUBS:{user()}:a secret:").code == 816  # an account's
    assert not c.closed


def test_unsu_wrong_password_closes(login, connect, user):
    name = user()
    c = login(name)
    assert c.raw(f"UNSU:{name}:not the password") == frame(815, "wrong password; closing")
    assert c.closed
    assert connect().code(f"USER:{name}") == 101  # the account is still there


def test_unsu_naming_another_user(login, user):
    name, other = user(), user()
    c = login(name)
    assert c.cmd(f"UNSU:{other}:{PASSWORD}").code == 808
    assert not c.closed


def test_unsu_closes_the_account_and_forfeits_its_games(game, connect):
    assert game.b.raw(f"UNSU:{game.black}:{PASSWORD}") == frame(104)
    assert game.b.closed
    assert connect().code(f"USER:{game.black}") == 814
    fields = game.w.cmd(f"STAT:{game.pid}").text.split(":")
    assert fields[4:8] == ["2", "1", "0", "3"]  # finished, white won, the leaver resigned
    assert game.w.cmd(f"JUEG:{game.black}").code == 814
