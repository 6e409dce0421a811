"""Challenges through the session in process: JUEG, TRAN, ACEP, DECL, SOLI, BAJA, and PPEN
of the games they make (docs/protocol.md section 4)."""

from __future__ import annotations

import re

from tests.support.session import frame

FECHA = r"[0-9]{11}"
FAR_FUTURE = "99999999999"


def test_challenge_listed_then_accepted(login, user):
    ana, bob = user("ana"), user("bob")
    a, b = login(ana), login(bob)
    assert a.raw(f"JUEG:{bob}") == b"2000\x00\x00"
    listed = b.cmd("TRAN:0")
    assert listed.code == 200 and re.fullmatch(rf"{FECHA},{ana}", listed.text), listed
    accepted = b.cmd(f"ACEP:N:{ana}")  # bob plays black
    assert accepted.code == 202 and re.fullmatch(r"P[0-9]{7}", accepted.text)
    assert b.raw(f"ACEP:N:{ana}").startswith(b"822")  # the challenge was consumed
    ppen = a.cmd("PPEN:0")  # ana's game, bob plays black (N), active
    assert re.fullmatch(rf"{FECHA},{accepted.text}:{bob}:N:0", ppen.text), ppen
    assert b.cmd("PPEN:0").text.endswith(f",{accepted.text}:{ana}:B:0")


def test_tran_since_a_later_fecha_is_nodata(login, user):
    a = login(user())
    r = a.cmd(f"TRAN:{FAR_FUTURE}")
    assert r.code == 201 and re.fullmatch(FECHA, r.text)
    r = a.cmd(f"PPEN:{FAR_FUTURE}")
    assert r.code == 201 and re.fullmatch(FECHA, r.text)


def test_challenge_failures(login, user):
    ana, bob = user(), user()
    a = login(ana)
    assert a.cmd(f"JUEG:{ana}").code == 817
    assert a.cmd("JUEG:no_such_user_x").code == 814
    assert a.code(f"JUEG:{bob}") == 200
    assert a.cmd(f"JUEG:{bob}").code == 820  # an open challenge exists
    b = login(bob)
    assert b.cmd(f"JUEG:{ana}").code == 820  # whoever made it
    assert b.code(f"ACEP:B:{ana}") == 202
    assert a.cmd(f"JUEG:{bob}").code == 821  # one active game per opponent
    assert not a.closed and not b.closed


def test_accept_without_a_challenge(login, user):
    a = login(user())
    assert a.cmd(f"ACEP:B:{user()}").code == 822


def test_decline_and_withdraw(login, user):
    ana, bob = user(), user()
    a, b = login(ana), login(bob)
    assert a.code(f"JUEG:{bob}") == 200
    assert b.raw(f"DECL:{ana}") == frame(213)  # declined by the one challenged
    assert b.cmd(f"ACEP:B:{ana}").code == 822
    assert a.code(f"JUEG:{bob}") == 200
    assert a.raw(f"DECL:{bob}") == frame(213)  # withdrawn by the challenger
    assert a.cmd(f"DECL:{bob}").code == 822  # none left
    baja = a.cmd("BAJA:0")
    assert baja.code == 215 and re.fullmatch(rf"{FECHA},R:{bob},R:{bob}", baja.text), baja


def test_soli_lists_open_challenges_both_ways(login, user):
    ana, bob, carla = user(), user(), user()
    a = login(ana)
    assert a.raw("SOLI") == frame(216)  # none: empty data
    assert a.code(f"JUEG:{bob}") == 200
    assert login(carla).code(f"JUEG:{ana}") == 200
    assert a.raw("SOLI") == frame(216, f"E:{bob},R:{carla}")
