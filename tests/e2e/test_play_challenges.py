"""Challenges and what a player may read over TCP: JUEG, TRAN, ACEP, DECL, PPEN, and who may
read a game with STAT, SPAR and PGNX.

Contract sections 2 and 4 and docs/protocol.md. Every test uses fresh users, so tests are
independent of each other although the database is shared.
"""

from __future__ import annotations

import time

import chess
import pytest
from sqlalchemy import insert, select, update

from ajedrez.store.models import Game, GameRequest, User
from tests.support.common import unique_name
from tests.support.play import (
    FECHA,
    FOOLS_MATE,
    KNIGHT_SHUFFLE,
    PID,
    Match,
    challenge_and_accept,
    db_changed_at,
    draw_by_agreement,
    finish_by_resignation,
    raw_move,
    records,
    since_answer,
    spar,
    spar_record,
    start_match,
    stat,
    user_id,
)
from tests.support.store import insert_users

# == challenges: JUEG, TRAN, ACEP, DECL ====================================================


def test_challenge_is_listed_then_accepted_as_white(login, new_user, db):
    a, b = new_user("ch"), new_user("ch")
    ca, cb = login(a), login(b)
    r = ca.cmd(f"JUEG:{b}")
    assert (r.code, r.text) == (200, "")

    _, names = since_answer(cb.cmd_all("TRAN:0"), 200)
    assert names == [a]
    # TRAN lists challenges made *to* me: the challenger has none.
    r = ca.cmd("TRAN:0")
    assert r.code == 201 and FECHA.fullmatch(r.text)

    r = cb.cmd(f"ACEP:B:{a}")
    assert r.code == 202 and PID.fullmatch(r.text), r
    pid = r.text
    changed = f"{db_changed_at(db, pid):011d}"
    assert cb.cmd(f"STAT:{pid}").text == f"{pid}:{b}:{a}:{changed}:0:0:0:0:B:1"
    assert ca.cmd(f"STAT:{pid}").text == f"{pid}:{b}:{a}:{changed}:0:0:0:0:N:1"

    # The challenge was consumed.
    assert cb.cmd("TRAN:0").code == 201
    assert cb.cmd(f"ACEP:B:{a}").code == 822
    # The accepter plays white and moves first; the challenger may not.
    m = Match(pid, b, a, cb, ca)
    assert ca.cmd(raw_move(pid, 1, "e2e4")).code == 834
    m.play("e4")
    st = stat(ca, pid)
    assert st.next_ply == 2
    assert int(st.fecha) == db_changed_at(db, pid) >= int(changed)


def test_accept_as_black(login, new_user):
    a, b = new_user("ch"), new_user("ch")
    ca, cb = login(a), login(b)
    assert ca.cmd(f"JUEG:{b}").code == 200
    r = cb.cmd(f"ACEP:N:{a}")
    assert r.code == 202
    st = stat(cb, r.text)
    assert (st.white, st.black, st.color) == (a, b, "N")
    assert stat(ca, r.text).color == "B"


def test_challenge_failures(login, new_user, accounts):
    a, b, gone = new_user("cf"), new_user("cf"), new_user("cf")
    ca, cb = login(a), login(b)
    accounts.remove_user(gone)

    assert ca.cmd(f"JUEG:{unique_name('nobody')}").code == 814
    assert ca.cmd(f"JUEG:{gone}").code == 814
    assert ca.cmd(f"JUEG:{a}").code == 817
    assert ca.cmd(f"JUEG:{b}").code == 200
    assert ca.cmd(f"JUEG:{b}").code == 820  # the same challenge again
    assert cb.cmd(f"JUEG:{a}").code == 820  # the other way round
    pid = cb.cmd(f"ACEP:B:{a}").text
    assert PID.fullmatch(pid)
    assert ca.cmd(f"JUEG:{b}").code == 821  # one active game per pair
    assert cb.cmd(f"JUEG:{a}").code == 821
    # Malformed lines fail and the session goes on.
    assert ca.cmd("JUEG:bad name").code == 802
    assert ca.cmd("JUEG").code == 801
    assert ca.cmd(f"JUEG:{b}:3d:1:{a}").code == 801
    assert ca.cmd(f"JUEG:{b}:3d:{a}").code == 802  # privada is 1 or 0
    assert ca.cmd(f"JUEG:{b}:{a}").code == 802  # not a time control
    # Once the game is over the two may play again.
    assert cb.cmd(f"REND:{pid}:{a}").code == 211
    assert ca.cmd(f"JUEG:{b}").code == 200
    assert cb.cmd(f"ACEP:N:{a}").code == 202


def test_accept_failures(login, new_user):
    a, b, c = new_user("af"), new_user("af"), new_user("af")
    ca, cb, cc = login(a), login(b), login(c)
    assert cb.cmd(f"ACEP:B:{a}").code == 822  # no challenge at all
    assert cb.cmd(f"ACEP:B:{unique_name('nobody')}").code == 822
    assert ca.cmd(f"JUEG:{b}").code == 200
    assert ca.cmd(f"ACEP:B:{b}").code == 822  # the challenger cannot accept its own
    assert cc.cmd(f"ACEP:B:{a}").code == 822  # the challenge is to b, not to c
    assert cb.cmd(f"ACEP:X:{a}").code == 802
    assert cb.cmd("ACEP:B").code == 801
    assert cb.cmd(f"ACEP:N:{a}").code == 202
    assert cb.cmd(f"ACEP:N:{a}").code == 822  # consumed


def test_accept_while_a_game_is_active(login, new_user, db):
    """821 on ACEP: a challenge that exists while the two already play (it cannot arise
    through JUEG, so it is written into the table directly)."""
    m = start_match(login, new_user, prefix="ag")
    white_id, black_id = user_id(db, m.white), user_id(db, m.black)
    with db.engine.begin() as c:
        c.execute(
            insert(GameRequest).values(
                challenger_id=white_id,
                challenged_id=black_id,
                user_lo=min(white_id, black_id),
                user_hi=max(white_id, black_id),
                created_at=int(time.time()),
            )
        )
    assert m.b.cmd(f"ACEP:B:{m.white}").code == 821
    st = stat(m.b, m.pid)
    assert (st.status, st.white, st.black) == (0, m.white, m.black)
    m.play("e4")


def test_decline_and_withdraw(login, new_user):
    a, b = new_user("dc"), new_user("dc")
    ca, cb = login(a), login(b)
    # b declines a's challenge
    assert ca.cmd(f"JUEG:{b}").code == 200
    r = cb.cmd(f"DECL:{a}")
    assert (r.code, r.text) == (213, "")
    assert cb.cmd("TRAN:0").code == 201
    assert cb.cmd(f"ACEP:B:{a}").code == 822
    assert ca.cmd(f"DECL:{b}").code == 822
    # a challenges again, then withdraws it
    assert ca.cmd(f"JUEG:{b}").code == 200
    assert since_answer(cb.cmd_all("TRAN:0"), 200)[1] == [a]
    r = ca.cmd(f"DECL:{b}")
    assert (r.code, r.text) == (213, "")
    assert cb.cmd("TRAN:0").code == 201
    assert cb.cmd(f"ACEP:B:{a}").code == 822
    # nothing to decline
    assert ca.cmd(f"DECL:{b}").code == 822
    assert ca.cmd(f"DECL:{a}").code == 822
    assert ca.cmd(f"DECL:{unique_name('nobody')}").code == 822
    assert ca.cmd("DECL:bad name").code == 802
    # DECL does not touch an active game
    assert cb.cmd(f"JUEG:{a}").code == 200
    pid = ca.cmd(f"ACEP:B:{b}").text
    assert ca.cmd(f"DECL:{b}").code == 822
    assert stat(ca, pid).status == 0


def test_tran_fecha_and_order(login, new_user, db):
    me = new_user("tf")
    cm = login(me)
    first, _ = since_answer(cm.cmd_all("TRAN:0"), 200)
    assert abs(int(first) - time.time()) < 3600  # the server's clock, as a fecha

    x, y = new_user("tf"), new_user("tf")
    assert login(x).cmd(f"JUEG:{me}").code == 200
    assert login(y).cmd(f"JUEG:{me}").code == 200
    fecha, names = since_answer(cm.cmd_all("TRAN:0"), 200)
    with db.engine.connect() as c:
        rows = c.execute(
            select(User.name, GameRequest.created_at)
            .join(GameRequest, GameRequest.challenger_id == User.id)
            .where(GameRequest.challenged_id == user_id(db, me))
        ).all()
    assert names == [n for n, _ in sorted(rows, key=lambda r: (r[1], r[0]))]  # oldest first
    assert set(names) == {x, y}
    assert int(fecha) >= max(r[1] for r in rows)
    # 0 written with 11 digits is the same as 0
    assert since_answer(cm.cmd_all("TRAN:00000000000"), 200)[1] == names

    # A challenge made after the fecha I got is in the next answer.
    z = new_user("tf")
    assert login(z).cmd(f"JUEG:{me}").code == 200
    _, later = since_answer(cm.cmd_all(f"TRAN:{fecha}"), 200)
    assert z in later and set(later) <= {x, y, z}

    # An old challenge is not listed for a later fecha.
    with db.engine.begin() as c:
        c.execute(
            update(GameRequest)
            .where(GameRequest.challenger_id == user_id(db, x))
            .values(created_at=1000)
        )
    _, since_2000 = since_answer(cm.cmd_all("TRAN:2000"), 200)
    assert x not in since_2000 and {y, z} == set(since_2000)
    assert since_answer(cm.cmd_all("TRAN:0"), 200)[1][0] == x

    # A fecha in the future: nothing, and the server's own fecha comes back.
    r = cm.cmd("TRAN:99999999999")
    assert r.code == 201 and FECHA.fullmatch(r.text) and r.text < "99999999999"
    assert cm.cmd("TRAN:123456789012").code == 802
    assert cm.cmd("TRAN:abc").code == 802
    assert cm.cmd("TRAN").code == 801


def test_tran_multipart(login, new_user, db, games):
    me = new_user("tm")
    cm = login(me)
    with db.engine.connect() as c:
        hash_ = c.execute(select(User.password_hash).where(User.name == me)).scalar_one()
    names = [(unique_name("tm") + "_" * 32)[:32] for _ in range(150)]
    insert_users(db, names, hash_)
    for n in names:
        games.challenge(user_id(db, n), me)

    parts = cm.cmd_all("TRAN:0")
    assert len(parts) >= 2
    fecha = parts[0].text[:11]
    got = records(parts, 200, prefix=fecha)
    assert sorted(got) == sorted(names)
    assert len(got) == len(set(got))


# == PPEN ====================================================================================


def test_ppen_lists_my_games_with_the_opponents_colour(login, new_user, db):
    a, b, c = new_user("pp"), new_user("pp"), new_user("pp")
    ca, cb, cc = login(a), login(b), login(c)
    r = ca.cmd("PPEN:0")
    assert r.code == 201 and FECHA.fullmatch(r.text)

    m1 = challenge_and_accept(a, ca, b, cb)  # a white
    m2 = challenge_and_accept(c, cc, a, ca)  # a black
    fecha, recs = since_answer(ca.cmd_all("PPEN:0"), 203)
    assert recs == sorted([f"{m1.pid}:{b}:N:0", f"{m2.pid}:{c}:B:0"])
    assert since_answer(cb.cmd_all("PPEN:0"), 203)[1] == [f"{m1.pid}:{a}:B:0"]
    assert since_answer(cc.cmd_all("PPEN:0"), 203)[1] == [f"{m2.pid}:{a}:N:0"]
    assert int(fecha) >= db_changed_at(db, m2.pid)

    # A finished game is still listed, with status 2.
    finish_by_resignation(m1, chess.BLACK)
    _, recs = since_answer(ca.cmd_all(f"PPEN:{fecha}"), 203)
    assert f"{m1.pid}:{b}:N:2" in recs

    # Only games changed since the fecha are listed.
    with db.engine.begin() as conn:
        conn.execute(update(Game).where(Game.id == m2.game_id).values(changed_at=1000))
    _, recs = since_answer(ca.cmd_all("PPEN:2000"), 203)
    assert recs == [f"{m1.pid}:{b}:N:2"]
    fecha, _ = since_answer(ca.cmd_all("PPEN:2000"), 203)
    m2.play("e4")  # a move changes the game
    _, recs = since_answer(ca.cmd_all(f"PPEN:{fecha}"), 203)
    assert f"{m2.pid}:{c}:B:0" in recs
    r = ca.cmd("PPEN:99999999999")
    assert r.code == 201 and FECHA.fullmatch(r.text)
    assert ca.cmd("PPEN:x").code == 802


@pytest.mark.parametrize(
    "change",
    ["move", "offer", "decline", "accept", "resign", "claim", "mate"],
)
def test_every_kind_of_change_shows_in_ppen(change, login, new_user, db):
    """Docs: any move, draw offer or answer, resignation, claim or ending changes a game."""
    m = start_match(login, new_user, prefix="pc")
    if change == "decline":
        assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 209
    if change == "claim":
        m.play(*KNIGHT_SHUFFLE, *KNIGHT_SHUFFLE)
    if change == "mate":
        m.play(*FOOLS_MATE[:3])
    with db.engine.begin() as conn:
        conn.execute(update(Game).where(Game.id == m.game_id).values(changed_at=1000))
    _, recs = since_answer(m.b.cmd_all("PPEN:2000"), 203)
    assert recs == []
    commands = {
        "move": lambda: m.send("e4"),
        "offer": lambda: m.w.cmd(f"TBLS:{m.pid}:{m.black}"),
        "decline": lambda: m.b.cmd(f"RTBL:{m.pid}:N:{m.white}"),
        "accept": lambda: draw_by_agreement(m),
        "resign": lambda: m.w.cmd(f"REND:{m.pid}:{m.black}"),
        "claim": lambda: m.w.cmd(f"FINP:{m.pid}:{m.black}"),
        "mate": lambda: m.send("Qh4#"),
    }
    reply = commands[change]()
    assert reply is None or reply.kind == "S", reply
    _, recs = since_answer(m.b.cmd_all("PPEN:2000"), 203)
    status = 0 if change in ("move", "offer", "decline") else 2
    assert recs == [f"{m.pid}:{m.white}:B:{status}"]


def test_ppen_multipart(login, new_user):
    me, opp = new_user("ppen_multipart_me_"), new_user("ppen_multipart_op_")
    cm, co = login(me), login(opp)
    pids = []
    for i in range(120):
        white, w, black, b = (me, cm, opp, co) if i % 2 else (opp, co, me, cm)
        m = challenge_and_accept(white, w, black, b)
        draw_by_agreement(m)
        pids.append((m.pid, "N" if white == me else "B"))
    parts = cm.cmd_all("PPEN:0")
    assert len(parts) >= 2
    fecha = parts[0].text[:11]
    got = records(parts, 203, prefix=fecha)
    assert got == [f"{pid}:{opp}:{color}:2" for pid, color in sorted(pids)]


# == STAT, SPAR and PGNX: who may read what ================================================


def test_read_access(login, new_user):
    m = start_match(login, new_user, prefix="ra")
    other = login(new_user("ra"))
    for conn in (m.w, m.b):
        assert conn.cmd("STAT:P9999999").code == 830
        assert conn.cmd("SPAR:P9999999:0").code == 830
        assert conn.cmd("PGNX:P9999999").code == 830
    assert other.cmd(f"STAT:{m.pid}").code == 831
    assert other.cmd(f"SPAR:{m.pid}:0").code == 831
    assert other.cmd(f"PGNX:{m.pid}").code == 831
    # malformed
    assert m.w.cmd("STAT:P123").code == 802
    assert m.w.cmd("STAT:p0000001").code == 802
    assert m.w.cmd("STAT").code == 801
    assert m.w.cmd(f"SPAR:{m.pid}:x").code == 802
    assert m.w.cmd(f"SPAR:{m.pid}:-1").code == 802
    assert m.w.cmd(f"SPAR:{m.pid}").code == 801
    # no moves yet
    assert m.w.cmd(f"SPAR:{m.pid}:0").code == 839
    m.play("e4", "e5")
    e4, e5 = chess.Move.from_uci("e2e4"), chess.Move.from_uci("e7e5")
    assert spar(m.b, m.pid, 0) == [spar_record(1, e4), spar_record(2, e5)]
    assert spar(m.w, m.pid, 1) == [spar_record(2, e5)]
    assert spar(m.w, m.pid, 0) == ["1:e2e4:0:1228:0", "2:e7e5:0:5236:0"]
    assert m.w.cmd(f"SPAR:{m.pid}:0:").code == 207  # a trailing ':' is ignored
    assert m.w.cmd(f"SPAR:{m.pid}:2").code == 839
    assert m.w.cmd(f"SPAR:{m.pid}:50").code == 839
    assert other.cmd(f"SPAR:{m.pid}:0").code == 831
    # Still readable once finished; still not by others.
    finish_by_resignation(m, chess.WHITE)
    assert len(spar(m.w, m.pid, 0)) == 2
    assert stat(m.b, m.pid).status == 2
    assert other.cmd(f"STAT:{m.pid}").code == 831
    assert other.cmd(f"SPAR:{m.pid}:0").code == 831


def test_game_commands_on_unknown_and_foreign_games(login, new_user):
    m = start_match(login, new_user, prefix="gf")
    x = new_user("gf")
    cx = login(x)
    lines = [
        "JGDA:{p}:1:e2e4:0:1228:0",
        "TBLS:{p}:{o}",
        "TBLs:{p}:{o}",
        "RTBL:{p}:S:{o}",
        "RTBS:{p}:N:{o}",
        "REND:{p}:{o}",
        "FINP:{p}:{o}",
    ]
    for line in lines:
        assert m.w.cmd(line.format(p="P9999999", o=m.black)).code == 830, line
        assert cx.cmd(line.format(p=m.pid, o=m.white)).code == 831, line
    st = stat(m.w, m.pid)
    assert (st.status, st.sol_white, st.sol_black, st.next_ply) == (0, 0, 0, 1)
