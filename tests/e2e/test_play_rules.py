"""The rules of correspondence play over TCP: challenges, moves, endings, draws, ranking.

Contract sections 2 and 4 and docs/protocol.md. Every test uses fresh users, so tests are
independent of each other although the database is shared.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import chess
import pytest
from sqlalchemy import func, insert, select, text, update

from ajedrez.store.models import Game, GameRequest, User
from tests.support.common import PASSWORD, unique_name
from tests.support.play import (
    FECHA,
    PID,
    Match,
    challenge_and_accept,
    db_fen,
    jgda,
    jugada,
    move_rows,
    pgnx,
    posicion,
    read_pgn,
    records,
    since_answer,
    spar,
    spar_record,
    start_match,
    stat,
    user_id,
    wins,
)
from tests.support.server import admin
from tests.support.store import insert_users

FOOLS_MATE = ("f3", "e5", "g4", "Qh4#")


def _line(moves: str) -> tuple[str, ...]:
    return tuple(moves.split())


LOYD_STALEMATE = _line(
    "e3 a5 Qh5 Ra6 Qxa5 h5 h4 Rah6 Qxc7 f6 Qxd7+ Kf7 Qxb7 Qd3 Qxb8 Qh7 Qxc8 Kg6 Qe6"
)
# Found by a capture-first random playout; ends with K+B against a bare king.
INSUFFICIENT = _line(
    "e2e3 g7g5 c2c4 b8a6 b2b4 a6b4 g2g4 b4a2 a1a2 g8f6 a2a7 a8a7 b1a3 a7a3 c1a3 f6g4 "
    "a3e7 g4h2 e7g5 d8g5 h1h2 g5g1 h2h7 g1f2 e1f2 h8h7 d2d3 h7h3 f1h3 c7c5 h3d7 c8d7 "
    "f2e1 f8g7 d3d4 g7d4 e3d4 c5d4 d1d4 d7a4 d4a7 b7b5 c4b5 a4b5 a7f7 e8f7"
)
KNIGHT_SHUFFLE = ("Nf3", "Nf6", "Ng1", "Ng8")


def raw_move(pid: str, ply: int, uci: str, *, pos: str | None = None, promo: int = 0) -> str:
    """A JGDA line for any coordinate move, legal or not (posicion computed unless given)."""
    move = chess.Move.from_uci(uci)
    return f"JGDA:{pid}:{ply}:{uci}:0:{pos or posicion(move)}:{promo}"


def db_changed_at(db, pid: str) -> int:  # type: ignore[no-untyped-def]
    with db.engine.connect() as c:
        return c.execute(select(Game.changed_at).where(Game.id == int(pid[1:]))).scalar_one()


def assert_unchanged(m: Match, db) -> None:  # type: ignore[no-untyped-def]
    """Nothing was stored: the server is where the local board is."""
    assert stat(m.w, m.pid).next_ply == m.ply
    assert len(move_rows(db, m.pid)) == len(m.board.move_stack)
    assert db_fen(db, m.pid) == m.board.fen()


def finish_by_resignation(m: Match, loser: chess.Color) -> None:
    r = m.conn(loser).cmd(f"REND:{m.pid}:{m.name(not loser)}")
    assert (r.code, r.text) == (211, ""), r


def draw_by_agreement(m: Match) -> None:
    assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 209
    assert m.b.cmd(f"RTBL:{m.pid}:S:{m.white}").code == 210


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
    assert ca.cmd(f"JUEG:{b}:{a}").code == 801
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


# == JGDA: rejections ========================================================================


def test_turn_and_ply_checks(login, new_user, db):
    m = start_match(login, new_user, prefix="tp")
    assert m.b.cmd(raw_move(m.pid, 1, "e7e5")).code == 834  # black at ply 1
    assert m.b.cmd(raw_move(m.pid, 2, "e7e5")).code == 834  # not black's turn at all
    assert m.w.cmd(raw_move(m.pid, 0, "e2e4")).code == 835
    assert m.w.cmd(raw_move(m.pid, 2, "e2e4")).code == 835
    assert m.w.cmd(raw_move(m.pid, 3, "e2e4")).code == 835
    assert m.w.cmd(raw_move(m.pid, 99999, "e2e4")).code == 835
    assert_unchanged(m, db)
    m.play("e4")
    assert m.w.cmd(raw_move(m.pid, 3, "d2d4")).code == 834  # white's next ply, too early
    assert m.w.cmd(raw_move(m.pid, 2, "d2d4")).code == 834
    assert m.b.cmd(raw_move(m.pid, 1, "e7e5")).code == 835  # stale
    assert m.b.cmd(raw_move(m.pid, 3, "e7e5")).code == 835  # ahead
    assert_unchanged(m, db)
    m.play("e5")
    assert_unchanged(m, db)


@pytest.mark.parametrize(
    "line",
    [
        "JGDA:{p}:1:e2e4:0:1228",  # too few fields
        "JGDA:{p}:1:e2e4:0:1228:0:0",  # too many
        "JGDA:{p}:1",
    ],
)
def test_jgda_field_count(line, login, new_user, db):
    m = start_match(login, new_user, prefix="jf")
    assert m.w.cmd(line.format(p=m.pid)).code == 801
    assert_unchanged(m, db)


@pytest.mark.parametrize(
    "line",
    [
        "JGDA:P12:1:e2e4:0:1228:0",
        "JGDA:Q{n}:1:e2e4:0:1228:0",
        "JGDA:{p}:x:e2e4:0:1228:0",
        "JGDA:{p}:-1:e2e4:0:1228:0",
        "JGDA:{p}:1234567:e2e4:0:1228:0",
        "JGDA:{p}:1:E2E4:0:1228:0",
        "JGDA:{p}:1:e2e9:0:1228:0",
        "JGDA:{p}:1:i2i4:0:1228:0",
        "JGDA:{p}:1:e2e4q:0:1228:0",
        "JGDA:{p}:1:e2-e4:0:1228:0",
        "JGDA:{p}:1::0:1228:0",
        "JGDA:{p}:1:e2e4:2:1228:0",
        "JGDA:{p}:1:e2e4:x:1228:0",
        "JGDA:{p}:1:e2e4:0:1264:0",
        "JGDA:{p}:1:e2e4:0:6412:0",
        "JGDA:{p}:1:e2e4:0:12284:0",
        "JGDA:{p}:1:e2e4:0:e2e4:0",
        "JGDA:{p}:1:e2e4:0:1228:1",
        "JGDA:{p}:1:e2e4:0:1228:6",
        "JGDA:{p}:1:e2e4:0:1228:Q",
        "JGDA:{p}:1:e2e4:0:1228:",
    ],
)
def test_jgda_malformed_fields(line, login, new_user, db):
    m = start_match(login, new_user, prefix="jm")
    r = m.w.cmd(line.format(p=m.pid, n=m.pid[1:]))
    assert r.code == 802, r
    assert_unchanged(m, db)
    m.play("e4")  # the session is still usable


def test_mismatch(login, new_user, db):
    m = start_match(login, new_user, prefix="mm")
    assert m.w.cmd(raw_move(m.pid, 1, "e2e4", pos="1229")).code == 837
    assert m.w.cmd(raw_move(m.pid, 1, "e2e4", pos="2812")).code == 837  # reversed
    assert m.w.cmd(raw_move(m.pid, 1, "e2e4", pos="0000")).code == 837
    assert m.w.cmd(raw_move(m.pid, 1, "e2e4", promo=5)).code == 837  # promotes nothing
    assert m.w.cmd(raw_move(m.pid, 1, "e2e4", promo=2)).code == 837
    assert_unchanged(m, db)


def test_illegal_moves(login, new_user, db):
    m = start_match(login, new_user, prefix="il")
    cases = [
        "g1e2",  # a knight cannot go there (own pawn) ...
        "g1g3",  # ... nor move like a rook
        "f1c4",  # a bishop cannot jump its pawns
        "e2e5",  # a pawn does not move three squares
        "e2d3",  # nor capture an empty square
        "a1a3",  # a rook cannot jump
        "e1e2",  # the king onto its own pawn
        "e3e4",  # no piece on the from-square
        "e7e5",  # the opponent's piece
    ]
    for uci in cases:
        r = m.w.cmd(raw_move(m.pid, 1, uci))
        assert r.code == 838, (uci, r)
    assert_unchanged(m, db)
    # In check, a move that ignores the check is refused: 1.e4 f5 2.Qh5+
    m.play("e4", "f5", "Qh5+")
    assert m.b.cmd(raw_move(m.pid, 4, "a7a6")).code == 838
    assert m.b.cmd(raw_move(m.pid, 4, "e8f7")).code == 838  # onto the queen's diagonal
    assert_unchanged(m, db)
    m.play("g6")
    assert_unchanged(m, db)


def _refused_pseudo_legal(m: Match, db) -> list[str]:  # type: ignore[no-untyped-def]
    """Every move that would leave the mover's own king in check is refused."""
    bad = [mv for mv in m.board.pseudo_legal_moves if not m.board.is_legal(mv)]
    for mv in bad:
        r = m.mover.cmd(jgda(m.pid, m.ply, mv))
        assert r.code == 838, (mv.uci(), r)
    assert_unchanged(m, db)
    return sorted(mv.uci() for mv in bad)


def test_king_may_not_move_into_check(login, new_user, db):
    m = start_match(login, new_user, prefix="kc")
    m.play("e4", "e5", "Ke2", "Bc5")
    assert _refused_pseudo_legal(m, db) == ["e2e3"]  # e3 is on the c5 bishop's diagonal
    m.play("Kd3")


def test_pinned_piece_may_not_leave_the_pin(login, new_user, db):
    m = start_match(login, new_user, prefix="ap")
    # 1.d4 e6 2.c4 Bb4+ 3.Nc3 Nf6: the c3 knight is pinned to the white king.
    m.play("d4", "e6", "c4", "Bb4+", "Nc3", "Nf6")
    assert _refused_pseudo_legal(m, db) == ["c3a4", "c3b1", "c3b5", "c3d5", "c3e4"]
    m.play("a3")


def test_null_move_is_refused_not_a_server_fault(login, new_user, db):
    m = start_match(login, new_user, prefix="nm")
    for uci, pos in (("e2e2", "1212"), ("e3e3", "2020")):
        r = m.w.cmd(f"JGDA:{m.pid}:1:{uci}:0:{pos}:0")
        # A move to its own square is not a chess move: a failure, never a 5xx error.
        assert r.code in (802, 838), (uci, r)
    assert_unchanged(m, db)
    m.play("e4")


def test_order_of_checks(login, new_user, db):
    """docs/protocol.md lists the order; the first failing check answers."""
    m = start_match(login, new_user, prefix="oc")
    # not your turn (4) before a wrong ply (5) and an illegal move (10)
    assert m.b.cmd(raw_move(m.pid, 7, "a1a8")).code == 834
    # wrong ply (5) before a mismatch (7)
    assert m.w.cmd(raw_move(m.pid, 5, "e2e4", pos="0000")).code == 835
    # mismatch (7) before no piece on the from-square (8)
    assert m.w.cmd(raw_move(m.pid, 1, "e3e4", pos="0000")).code == 837
    # no piece (8) before a promocion check (9)
    assert m.w.cmd(raw_move(m.pid, 1, "e3e4", promo=5)).code == 838
    # a pending draw offer (6) before a mismatch (7)
    assert m.b.cmd(f"TBLS:{m.pid}:{m.white}").code == 209
    assert m.w.cmd(raw_move(m.pid, 1, "e2e4", pos="0000")).code == 836
    assert m.w.cmd(raw_move(m.pid, 1, "e2e5")).code == 836
    # but the turn (4) and the ply (5) come before the offer (6)
    assert m.b.cmd(raw_move(m.pid, 1, "e7e5")).code == 834
    assert m.w.cmd(raw_move(m.pid, 3, "e2e4")).code == 835
    assert m.w.cmd(f"RTBL:{m.pid}:N:{m.black}").code == 210
    assert_unchanged(m, db)
    # a finished game (3) before the turn (4): black mates, then black tries again
    m.play(*FOOLS_MATE)
    assert m.b.cmd(raw_move(m.pid, 6, "a7a6")).code == 833
    assert m.b.cmd(raw_move(m.pid, 4, "a7a6")).code == 833  # its own last ply, not a resend
    assert m.w.cmd(raw_move(m.pid, 5, "a2a3")).code == 833
    # the player check (1) before everything
    assert login(new_user("oc")).cmd(raw_move(m.pid, 5, "a2a3")).code == 831


def test_draw_offer_blocks_both_players(login, new_user, db):
    m = start_match(login, new_user, prefix="db")
    m.play("e4")
    # White offers while it is black's turn; black may not move.
    assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 209
    assert m.b.cmd(jgda(m.pid, 2, chess.Move.from_uci("e7e5"))).code == 836
    assert m.b.cmd(f"RTBL:{m.pid}:N:{m.white}").code == 210
    m.play("e5")
    # Black offers while it is white's turn; white may not move.
    assert m.b.cmd(f"TBLS:{m.pid}:{m.white}").code == 209
    assert m.w.cmd(jgda(m.pid, 3, chess.Move.from_uci("g1f3"))).code == 836
    assert_unchanged(m, db)
    assert m.w.cmd(f"RTBL:{m.pid}:N:{m.black}").code == 210
    m.play("Nf3")
    assert_unchanged(m, db)


# == special moves ===========================================================================

PROMOTION_LINE = ("h4", "g5", "hxg5", "h6", "gxh6", "Bg7", "hxg7", "Nf6")


@pytest.mark.parametrize("piece", [chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN])
@pytest.mark.parametrize("square", ["g8", "h8"])
def test_white_promotion(piece, square, login, new_user, db):
    """g7-g8 or g7xh8, to each piece; then the game goes on with that piece."""
    m = start_match(login, new_user, prefix="pr")
    m.play(*PROMOTION_LINE)
    to = chess.parse_square(square)
    code = {chess.KNIGHT: 2, chess.BISHOP: 3, chess.ROOK: 4, chess.QUEEN: 5}[piece]
    ply = m.ply
    # Without promocion it is not a complete move.
    assert m.w.cmd(raw_move(m.pid, ply, f"g7{square}")).code == 837
    assert_unchanged(m, db)
    r = m.w.cmd(raw_move(m.pid, ply, f"g7{square}", promo=code))
    assert (r.code, r.text) == (208, ""), r
    promotion = chess.Move(chess.G7, to, piece)
    expected_san = m.board.san(promotion)  # g8=N, gxh8=Q+, ...
    m.board.push(promotion)
    assert spar(m.b, m.pid, ply - 1) == [f"{ply}:g7{square}:0:54{to}:{code}"]
    assert db_fen(db, m.pid) == m.board.fen()
    # Black answers (leaving the new piece alone when it can), then the piece moves:
    # the server must still know what stands on the promotion square.
    answers = sorted(m.board.legal_moves, key=lambda mv: (mv.to_square == to, mv.uci()))
    m.play(answers[0].uci())
    assert db_fen(db, m.pid) == m.board.fen()
    follow = sorted(mv.uci() for mv in m.board.legal_moves if mv.from_square == to)
    if follow:
        m.play(follow[0])
        assert db_fen(db, m.pid) == m.board.fen()
    outcome = m.board.outcome(claim_draw=False)
    if outcome is None:
        m.play(sorted(mv.uci() for mv in m.board.legal_moves)[0])
        assert db_fen(db, m.pid) == m.board.fen()
    else:  # the new piece mated (gxh8=R+ Ng8 Rxg8#): the server saw it too
        st = stat(m.b, m.pid)
        assert (st.status, st.winner) == (2, 1 if outcome.winner else 3)
    # SPAR and the PGN show the promotion.
    assert spar(m.w, m.pid, ply - 1)[0] == f"{ply}:g7{square}:0:54{to}:{code}"
    exported = read_pgn(pgnx(m.w, m.pid))
    assert list(exported.mainline_moves()) == m.board.move_stack
    assert [node.san() for node in exported.mainline()][ply - 1] == expected_san


def test_knight_underpromotion_then_knight_move(login, new_user, db):
    m = start_match(login, new_user, prefix="un")
    m.play(*PROMOTION_LINE)
    m.play("gxh8=N")  # captures the rook, becomes a knight
    m.play("a6")
    # Only a knight on h8 can go to g6 (a pawn there could not move at all).
    r = m.send("Ng6")
    assert (r.code, r.text) == (208, ""), r
    assert db_fen(db, m.pid) == m.board.fen()
    # And a knight cannot move like a queen: Ng6-g1 is refused.
    m.play("a5")
    assert m.w.cmd(raw_move(m.pid, m.ply, "g6g3")).code == 838


def test_black_promotion(login, new_user, db):
    m = start_match(login, new_user, prefix="bp")
    m.play("a3", "g5", "h4", "gxh4", "g3", "hxg3", "Nf3", "g2", "a4")
    ply = m.ply
    assert m.b.cmd(raw_move(m.pid, ply, "g2h1")).code == 837
    m.play("gxh1=Q")
    assert spar(m.w, m.pid, ply - 1) == [f"{ply}:g2h1:0:1407:5"]
    assert db_fen(db, m.pid) == m.board.fen()
    m.play("a5")
    assert db_fen(db, m.pid) == m.board.fen()
    m.play("Qh2")  # the new queen moves along the h-file (a pawn on h1 could not)
    assert db_fen(db, m.pid) == m.board.fen()
    m.play("a6", "Qxf2+")
    assert db_fen(db, m.pid) == m.board.fen()


def test_castling_kingside_both_colours(login, new_user, db):
    m = start_match(login, new_user, prefix="ck")
    m.play("e4", "e5", "Nf3", "Nf6", "Bc4", "Bc5")
    m.play("e1g1", "e8g8")
    assert spar(m.b, m.pid, 6) == ["7:e1g1:0:0406:0", "8:e8g8:0:6062:0"]
    assert db_fen(db, m.pid) == "rnbq1rk1/pppp1ppp/5n2/2b1p3/2B1P3/5N2/PPPP1PPP/RNBQ1RK1 w - - 6 5"
    m.play("Re1", "Re8")  # the rooks really moved to f1 and f8
    assert db_fen(db, m.pid) == m.board.fen()
    assert [n.san() for n in read_pgn(pgnx(m.w, m.pid)).mainline()][6:8] == ["O-O", "O-O"]


def test_castling_queenside_both_colours(login, new_user, db):
    m = start_match(login, new_user, prefix="cq")
    m.play("d4", "d5", "Nc3", "Nc6", "Bf4", "Bf5", "Qd2", "Qd7")
    m.play("e1c1", "e8c8")
    assert spar(m.b, m.pid, 8) == ["9:e1c1:0:0402:0", "10:e8c8:0:6058:0"]
    assert db_fen(db, m.pid) == "2kr1bnr/pppqpppp/2n5/3p1b2/3P1B2/2N5/PPPQPPPP/2KR1BNR w - - 8 6"
    m.play("Re1", "Re8")  # from d1 and d8
    assert db_fen(db, m.pid) == m.board.fen()
    assert [n.san() for n in read_pgn(pgnx(m.b, m.pid)).mainline()][8:10] == ["O-O-O", "O-O-O"]


@pytest.mark.parametrize(
    ("line", "king_takes_rook"),
    [
        ("e4 e5 Nf3 Nf6 Bc4 Bc5", "e1h1"),
        ("d4 d5 Nc3 Nc6 Bf4 Bf5 Qd2 Qd7", "e1a1"),
        ("e4 e5 Nf3 Nf6 Bc4 Bc5 a3", "e8h8"),
        ("d4 d5 Nc3 Nc6 Bf4 Bf5 Qd2 Qd7 a3", "e8a8"),
    ],
)
def test_castling_is_the_kings_move_not_king_takes_rook(line, king_takes_rook, login, new_user, db):
    """Contract: jugada is from-square then to-square, e1g1 for white's short castling.
    e1h1 (python-chess's Chess960 spelling) would put the king on its own rook's square;
    a client following the contract would misread it from SPAR, so it is refused."""
    m = start_match(login, new_user, prefix="kr")
    m.play(*line.split())
    assert m.mover.cmd(raw_move(m.pid, m.ply, king_takes_rook)).code == 838
    assert_unchanged(m, db)
    castle = king_takes_rook[:2] + ("g" if king_takes_rook[2] == "h" else "c") + king_takes_rook[3]
    m.play(castle)
    assert spar(m.w, m.pid, m.ply - 2)[0].split(":")[1] == castle


@pytest.mark.parametrize(
    ("line", "castle"),
    [
        ("e4 e5 Nf3 Nf6", "e1g1"),  # the bishop is still on f1
        ("g3 b6 Bg2 Ba6 Nf3 Nc6 e4 Nf6", "e1g1"),  # through f1, attacked by Ba6
        ("e4 e5 Bc4 Nf6 Nf3 Nc6 d4 Bb4+", "e1g1"),  # out of check
        ("e4 e5 f4 Bc5 Nf3 d6 Bc4 Nf6", "e1g1"),  # into check on g1
        ("d4 d5 Nc3 Nc6 Bf4 Bf5 e3 e6 Qd2 Bg4", "e1c1"),  # through d1, attacked by Bg4
        ("e4 e5 Nf3 Nf6 Bc4 Bc5 Ke2 Ke7 Ke1 Ke8", "e1g1"),  # the king has moved
        ("e4 e5 Nf3 Nf6 Bc4 Bc5 Rg1 Rg8 Rh1 Rh8", "e1g1"),  # the rook has moved
        ("b3 e5 Ba3 g6 Nc3 Bg7 Nf3 Nf6 e3", "e8g8"),  # black, through f8 (Ba3)
        ("e4 e5 Nf3 Nf6 Bc4 Bc5 Ke2 Ke7 Ke1 Ke8 a3", "e8g8"),  # black king moved
    ],
)
def test_castling_refused(line, castle, login, new_user, db):
    m = start_match(login, new_user, prefix="cr")
    m.play(*line.split())
    r = m.mover.cmd(raw_move(m.pid, m.ply, castle))
    assert r.code == 838, r
    assert_unchanged(m, db)


def test_en_passant(login, new_user, db):
    m = start_match(login, new_user, prefix="ep")
    m.play("e4", "a6", "e5", "d5")
    assert m.w.cmd(raw_move(m.pid, 5, "e5f6")).code == 838  # f7 has not moved
    m.play("exd6")
    assert spar(m.b, m.pid, 4) == ["5:e5d6:0:3643:0"]
    assert db_fen(db, m.pid) == m.board.fen()  # the d5 pawn is gone
    # Black, too: ...d5-d4, then e2-e4 is taken en passant on e3.
    m.play("cxd6", "a3", "Nf6", "Nc3", "Ng4", "d4", "Nf6", "d5", "e5")
    r = m.send("dxe6")
    assert (r.code, r.text) == (208, "")
    assert db_fen(db, m.pid) == m.board.fen()


def test_en_passant_only_at_once(login, new_user, db):
    m = start_match(login, new_user, prefix="el")
    m.play("e4", "a6", "e5", "d5", "Nf3", "a5")
    assert m.w.cmd(raw_move(m.pid, 7, "e5d6")).code == 838
    assert_unchanged(m, db)


def test_black_en_passant(login, new_user, db):
    m = start_match(login, new_user, prefix="eb")
    m.play("a3", "d5", "a4", "d4", "e4")
    m.play("dxe3")
    assert spar(m.w, m.pid, 5) == ["6:d4e3:0:2720:0"]
    assert db_fen(db, m.pid) == m.board.fen()


# == endings that happen by themselves =======================================================


def test_checkmate_ends_the_game(login, new_user, db):
    m = start_match(login, new_user, prefix="cm")
    m.play(*FOOLS_MATE[:3])
    assert stat(m.w, m.pid).status == 0
    m.play(FOOLS_MATE[3])
    for conn, color in ((m.w, "B"), (m.b, "N")):
        st = stat(conn, m.pid)
        assert (st.status, st.winner, st.sol_white, st.sol_black) == (2, 2, 0, 0)
        assert (st.color, st.next_ply) == (color, 5)
    assert (wins(db, m.white), wins(db, m.black)) == (0, 1)
    assert m.w.cmd(raw_move(m.pid, 5, "a2a3")).code == 833
    assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 833
    assert m.w.cmd(f"REND:{m.pid}:{m.black}").code == 833
    assert m.w.cmd(f"FINP:{m.pid}:{m.black}").code == 833
    # The mating move sent again is a resend: 208, nothing stored, no second win.
    r = m.b.cmd(jgda(m.pid, 4, m.board.move_stack[-1]))
    assert (r.code, r.text) == (208, "")
    assert len(move_rows(db, m.pid)) == 4
    assert wins(db, m.black) == 1
    game = read_pgn(pgnx(m.w, m.pid))
    assert game.headers["Result"] == "0-1"
    assert game.end().board().is_checkmate()


def test_stalemate_ends_the_game_drawn(login, new_user, db):
    m = start_match(login, new_user, prefix="sm")
    m.play(*LOYD_STALEMATE[:-1])
    assert stat(m.b, m.pid).status == 0
    m.play(LOYD_STALEMATE[-1])
    assert m.board.is_stalemate()
    st = stat(m.b, m.pid)
    assert (st.status, st.winner, st.next_ply) == (2, 3, 20)
    assert (wins(db, m.white), wins(db, m.black)) == (0, 0)
    assert m.b.cmd(raw_move(m.pid, 20, "g6g5")).code == 833
    assert read_pgn(pgnx(m.b, m.pid)).headers["Result"] == "1/2-1/2"


def test_insufficient_material_ends_the_game_drawn(login, new_user, db):
    m = start_match(login, new_user, prefix="im")
    m.play(*INSUFFICIENT[:-1])
    assert stat(m.w, m.pid).status == 0
    m.play(INSUFFICIENT[-1])
    assert m.board.is_insufficient_material()
    st = stat(m.w, m.pid)
    assert (st.status, st.winner) == (2, 3)
    assert (wins(db, m.white), wins(db, m.black)) == (0, 0)


def test_fivefold_repetition_ends_the_game_drawn(login, new_user):
    m = start_match(login, new_user, prefix="ff")
    for _ in range(3):
        m.play(*KNIGHT_SHUFFLE)
    # Threefold (and fourfold) repetition does not end the game by itself.
    assert stat(m.w, m.pid).status == 0
    m.play(*KNIGHT_SHUFFLE[:3])
    assert stat(m.w, m.pid).status == 0
    m.play(KNIGHT_SHUFFLE[3])  # the starting position for the fifth time
    st = stat(m.w, m.pid)
    assert (st.status, st.winner, st.next_ply) == (2, 3, 17)


def _base(db, pid: str) -> tuple[int, str | None]:  # type: ignore[no-untyped-def]
    with db.engine.connect() as c:
        row = c.execute(
            text("SELECT base_ply, base_fen FROM games WHERE id = :g"), {"g": int(pid[1:])}
        ).one()
    return row.base_ply, row.base_fen


def test_fivefold_repetition_after_irreversible_moves(login, new_user, db):
    """The base position moves to the last irreversible move; repetitions still count."""
    m = start_match(login, new_user, prefix="fb")
    m.play("e4", "e5", "Nf3", "Nc6")
    base_ply, base_fen = _base(db, m.pid)
    assert base_ply == 2 and base_fen is not None
    assert chess.Board(base_fen).board_fen() == ("rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR")
    shuffle = ("Bc4", "Bc5", "Bf1", "Bf8")
    for _ in range(3):
        m.play(*shuffle)
    assert stat(m.w, m.pid).status == 0  # four times so far
    m.play(*shuffle[:3])
    assert stat(m.w, m.pid).status == 0
    m.play(shuffle[3])  # the position after 2...Nc6 for the fifth time
    st = stat(m.w, m.pid)
    assert (st.status, st.winner, st.next_ply) == (2, 3, 21)
    assert _base(db, m.pid)[0] == 2


def test_base_moves_to_a_king_move_that_loses_castling(login, new_user, db):
    """Ke2 is irreversible (castling rights lost) but resets no move clock: the base moves
    there, and repetitions are counted from it: the halfmove clock alone does not say where
    to start."""
    m = start_match(login, new_user, prefix="fc")
    m.play("e4", "e5", "Nf3", "Nc6", "Ng1", "Nb8")  # the position after 2.e5, twice
    m.play("Ke2")
    assert _base(db, m.pid)[0] == 7
    m.play("Nf6", "Ke1", "Ng8")  # same pieces as after 2.e5, but white cannot castle
    for _ in range(3):
        m.play("Nf3", "Nc6", "Ng1", "Nb8")
    assert stat(m.w, m.pid).status == 0  # the position after 5...Ng8, four times
    m.play("Nf3", "Nc6", "Ng1", "Nb8")
    assert stat(m.w, m.pid).status == 2


def test_game_from_before_the_base_position_column(login, new_user, db):
    """A game stored before migration 0002 has base_ply 0 and no base_fen: its next
    moves replay from the start, and the first irreversible one moves the base."""
    m = start_match(login, new_user, prefix="fo")
    m.play("Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1", "Ng8")
    with db.engine.begin() as c:
        c.execute(
            text("UPDATE games SET base_ply = 0, base_fen = NULL WHERE id = :g"),
            {"g": m.game_id},
        )
    m.play(*KNIGHT_SHUFFLE, *KNIGHT_SHUFFLE[:3])
    assert stat(m.w, m.pid).status == 0
    m.play(KNIGHT_SHUFFLE[3])
    assert stat(m.w, m.pid).status == 2


def test_seventy_five_move_rule_ends_the_game_drawn(login, new_user):
    m = start_match(login, new_user, prefix="sf")
    m.play("e3", "e6", "d3", "d6")
    line = [mv.uci() for mv in _quiet(m.board, 150)]
    m.play(*line[:-1])
    st = stat(m.w, m.pid)
    assert (st.status, m.board.halfmove_clock) == (0, 149)
    m.play(line[-1])
    st = stat(m.w, m.pid)
    assert (st.status, st.winner, st.next_ply) == (2, 3, 155)


def _quiet(board: chess.Board, count: int) -> list[chess.Move]:
    from tests.support.play import quiet_line

    return quiet_line(board, count)


# == draw claims: FINP =======================================================================


@pytest.mark.parametrize("claimer", [chess.WHITE, chess.BLACK])
def test_threefold_repetition_claim(claimer, login, new_user, db):
    m = start_match(login, new_user, prefix="tr")
    c, opponent = m.conn(claimer), m.name(not claimer)
    assert c.cmd(f"FINP:{m.pid}:{opponent}").code == 842  # at the start
    m.play(*KNIGHT_SHUFFLE)  # the starting position twice
    assert c.cmd(f"FINP:{m.pid}:{opponent}").code == 842
    m.play(*KNIGHT_SHUFFLE[:3])  # Nf3 Nf6 Ng1: twice too
    assert c.cmd(f"FINP:{m.pid}:{opponent}").code == 842
    m.play(KNIGHT_SHUFFLE[3])  # the starting position for the third time
    assert stat(m.w, m.pid).status == 0  # not over until claimed
    assert c.cmd(f"FINP:{m.pid}:{m.name(claimer)}").code == 832  # names myself
    assert c.cmd(f"FINP:{m.pid}:{unique_name('nobody')}").code == 832
    r = c.cmd(f"FINP:{m.pid}:{opponent}")
    assert (r.code, r.text) == (212, "")
    st = stat(m.b, m.pid)
    assert (st.status, st.winner, st.sol_white, st.sol_black) == (2, 3, 0, 0)
    assert (wins(db, m.white), wins(db, m.black)) == (0, 0)
    assert c.cmd(f"FINP:{m.pid}:{opponent}").code == 833
    assert m.w.cmd(raw_move(m.pid, 9, "g1f3")).code == 833
    assert read_pgn(pgnx(m.w, m.pid)).headers["Result"] == "1/2-1/2"


def test_threefold_claim_in_the_middle_of_a_game(login, new_user):
    """A position other than the start, repeated with the other side's pieces moving."""
    m = start_match(login, new_user, prefix="tm")
    m.play("e4", "e5", "Nf3", "Nc6")
    for _ in range(2):
        m.play("Bc4", "Bc5", "Bf1", "Bf8")
    assert m.board.is_repetition(3)
    assert m.b.cmd(f"FINP:{m.pid}:{m.white}").code == 212


@pytest.mark.parametrize("claimer", [chess.WHITE, chess.BLACK])
def test_fifty_move_claim(claimer, login, new_user):
    """100 plies without a capture or a pawn move and no position repeated: only the
    fifty-move rule can make the claim good."""
    m = start_match(login, new_user, prefix="fm")
    c, opponent = m.conn(claimer), m.name(not claimer)
    m.play("e3", "e6", "d3", "d6")
    line = [mv.uci() for mv in _quiet(m.board, 100)]
    m.play(*line[:-1])
    assert m.board.halfmove_clock == 99
    assert not m.board.is_repetition(2)
    assert c.cmd(f"FINP:{m.pid}:{opponent}").code == 842
    m.play(line[-1])
    r = c.cmd(f"FINP:{m.pid}:{opponent}")
    assert (r.code, r.text) == (212, "")
    st = stat(m.w, m.pid)
    assert (st.status, st.winner, st.next_ply) == (2, 3, 105)


# == draw offers: TBLS / RTBL ================================================================


def test_draw_offer_declined_then_accepted(login, new_user, db):
    m = start_match(login, new_user, prefix="do")
    m.play("e4")
    assert m.w.cmd(f"TBLS:{m.pid}:{unique_name('nobody')}").code == 832
    assert m.w.cmd(f"TBLS:{m.pid}:{m.white}").code == 832
    assert m.w.cmd(f"RTBL:{m.pid}:S:{m.black}").code == 841  # nothing offered yet
    r = m.w.cmd(f"TBLS:{m.pid}:{m.black}")
    assert (r.code, r.text) == (209, "")
    for conn in (m.w, m.b):
        st = stat(conn, m.pid)
        assert (st.status, st.sol_white, st.sol_black) == (0, 1, 0)
    assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 840
    assert m.b.cmd(f"TBLS:{m.pid}:{m.white}").code == 840
    assert m.w.cmd(f"RTBL:{m.pid}:S:{m.black}").code == 841  # not my own offer
    assert m.b.cmd(f"RTBL:{m.pid}:X:{m.white}").code == 802
    assert m.b.cmd(f"RTBL:{m.pid}:S:{m.black}").code == 832
    r = m.b.cmd(f"RTBL:{m.pid}:N:{m.white}")
    assert (r.code, r.text) == (210, "")
    st = stat(m.b, m.pid)
    assert (st.status, st.sol_white, st.sol_black) == (0, 0, 0)
    assert m.b.cmd(f"RTBL:{m.pid}:N:{m.white}").code == 841
    m.play("e5")

    # The aliases: black offers with TBLs, white accepts with RTBS.
    r = m.b.cmd(f"TBLs:{m.pid}:{m.white}")
    assert (r.code, r.text) == (209, "")
    assert stat(m.w, m.pid).sol_black == 1
    r = m.w.cmd(f"RTBS:{m.pid}:S:{m.black}")
    assert (r.code, r.text) == (210, "")
    st = stat(m.w, m.pid)
    assert (st.status, st.winner, st.sol_white, st.sol_black) == (2, 3, 2, 1)
    assert (wins(db, m.white), wins(db, m.black)) == (0, 0)
    assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 833
    assert m.b.cmd(f"RTBL:{m.pid}:S:{m.white}").code == 833
    assert m.w.cmd(raw_move(m.pid, 3, "g1f3")).code == 833
    assert read_pgn(pgnx(m.w, m.pid)).headers["Result"] == "1/2-1/2"


def test_draw_offer_may_be_made_on_either_turn(login, new_user):
    m = start_match(login, new_user, prefix="dt")
    # black offers at white's turn; white accepts
    assert m.b.cmd(f"TBLS:{m.pid}:{m.white}").code == 209
    assert (stat(m.w, m.pid).sol_white, stat(m.w, m.pid).sol_black) == (0, 1)
    assert m.w.cmd(f"RTBL:{m.pid}:S:{m.black}").code == 210
    st = stat(m.b, m.pid)
    assert (st.status, st.winner, st.sol_white, st.sol_black) == (2, 3, 2, 1)


# == resignation =============================================================================


def test_resignation(login, new_user, db):
    m = start_match(login, new_user, prefix="rs")
    m.play("e4")
    before = wins(db, m.black)
    assert m.w.cmd(f"REND:{m.pid}:{m.white}").code == 832
    assert m.w.cmd(f"REND:{m.pid}:{unique_name('nobody')}").code == 832
    r = m.w.cmd(f"REND:{m.pid}:{m.black}")  # allowed although it is black's turn
    assert (r.code, r.text) == (211, "")
    for conn in (m.w, m.b):
        st = stat(conn, m.pid)
        assert (st.status, st.winner, st.sol_white, st.sol_black) == (2, 2, 3, 0)
    assert wins(db, m.black) == before + 1
    assert wins(db, m.white) == 0
    assert m.w.cmd(f"REND:{m.pid}:{m.black}").code == 833
    assert m.b.cmd(f"REND:{m.pid}:{m.white}").code == 833
    assert m.b.cmd(raw_move(m.pid, 2, "e7e5")).code == 833
    assert wins(db, m.black) == before + 1
    game = read_pgn(pgnx(m.b, m.pid))
    assert game.headers["Result"] == "0-1"
    assert [mv.uci() for mv in game.mainline_moves()] == ["e2e4"]


def test_resignation_with_a_draw_offer_pending(login, new_user, db):
    m = start_match(login, new_user, prefix="ro")
    assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 209
    assert m.b.cmd(f"REND:{m.pid}:{m.white}").code == 211
    st = stat(m.w, m.pid)
    assert (st.status, st.winner, st.sol_black) == (2, 1, 3)
    assert wins(db, m.white) == 1


# == SRNK ====================================================================================


def _win_games(loser: str, cl, winner: str, cw, count: int) -> None:  # type: ignore[no-untyped-def]
    for _ in range(count):
        m = challenge_and_accept(loser, cl, winner, cw)
        finish_by_resignation(m, chess.WHITE)


def _ranking(conn) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    recs = records(conn.cmd_all("SRNK"), 205)
    out = []
    for rec in recs:
        name, count = rec.split(":")
        out.append((name, int(count)))
    return out


def test_ranking(login, new_user, db):
    with db.engine.connect() as c:
        top = (
            c.execute(
                select(User.wins).where(User.active.is_(True)).order_by(User.wins.desc()).limit(10)
            )
            .scalars()
            .all()
        )
    need = (top[9] if len(top) == 10 else 0) + 1
    loser, x, y, z = new_user("rk"), new_user("rk"), new_user("rk"), new_user("rk")
    cl, cx, cy, cz = login(loser), login(x), login(y), login(z)
    _win_games(loser, cl, x, cx, need)
    _win_games(loser, cl, y, cy, need)
    _win_games(loser, cl, z, cz, need + 1)
    assert (wins(db, x), wins(db, y), wins(db, z)) == (need, need, need + 1)

    ranking = _ranking(cl)
    with db.engine.connect() as c:
        active = c.execute(select(func.count()).where(User.active.is_(True))).scalar_one()
    assert len(ranking) == min(10, active)
    assert ranking == sorted(ranking, key=lambda r: (-r[1], r[0]))
    assert len({n for n, _ in ranking}) == len(ranking)
    assert (x, need) in ranking and (y, need) in ranking and (z, need + 1) in ranking
    assert ranking.index((z, need + 1)) < min(ranking.index((x, need)), ranking.index((y, need)))
    first, second = sorted([x, y])
    assert ranking.index((first, need)) < ranking.index((second, need))
    # Every listed count is the user's real count.
    for name, count in ranking:
        assert wins(db, name) == count

    # A closed account leaves the ranking.
    assert cz.cmd(f"UNSU:{z}:{PASSWORD}").code == 104
    ranking = _ranking(cl)
    assert z not in [n for n, _ in ranking]
    assert (x, need) in ranking
    assert cl.cmd("SRNK:x").code == 801


# == resending a move ========================================================================


def test_exact_resend_is_accepted_once(login, new_user, db):
    m = start_match(login, new_user, prefix="re")
    e4 = chess.Move.from_uci("e2e4")
    line = jgda(m.pid, 1, e4, reverso=1)
    assert m.w.cmd(line).code == 208
    m.board.push(e4)
    r = m.w.cmd(line)
    assert (r.code, r.text) == (208, "")
    assert move_rows(db, m.pid) == [(1, "e2e4", 1, "1228", 0)]
    # From another session of the same player: also a resend.
    assert login(m.white).cmd(line).code == 208
    assert move_rows(db, m.pid) == [(1, "e2e4", 1, "1228", 0)]
    assert stat(m.b, m.pid).next_ply == 2
    # Not exact: another reverso, another move; or the opponent sending it.
    assert m.w.cmd(jgda(m.pid, 1, e4, reverso=0)).code == 834
    assert m.w.cmd(jgda(m.pid, 1, chess.Move.from_uci("d2d4"))).code == 834
    assert m.b.cmd(line).code == 835
    assert len(move_rows(db, m.pid)) == 1
    # Once the opponent has answered, it is no longer the move just accepted.
    m.play("e5")
    assert m.w.cmd(line).code == 835
    assert move_rows(db, m.pid) == [(1, "e2e4", 1, "1228", 0), (2, "e7e5", 0, "5236", 0)]
    assert_unchanged(m, db)


# == leaving: UNSU ===========================================================================


def test_unsubscribe_forfeits_active_games(login, new_user, db):
    u, v, w, q, r_, x = (new_user("us") for _ in range(6))
    cu, cv, cw, cq, cr, cx = (login(n) for n in (u, v, w, q, r_, x))
    cu2 = login(u)  # a second session of the leaving user
    cu3 = login(u)  # and a third, which a wrong password in UNSU closes
    g1 = challenge_and_accept(u, cu, v, cv)  # u white
    g1.play("e4", "e5")
    g2 = challenge_and_accept(w, cw, u, cu)  # u black
    g2.play("d4")
    g3 = challenge_and_accept(u, cu, x, cx)  # finished before: a draw
    draw_by_agreement(g3)
    assert cu.cmd(f"JUEG:{q}").code == 200  # u's open challenge
    assert cr.cmd(f"JUEG:{u}").code == 200  # a challenge to u
    wins_before = {n: wins(db, n) for n in (u, v, w, x)}

    assert cu3.cmd(f"UNSU:{u}:wrong password").code == 815
    assert cu3.is_closed()
    assert cu.cmd(f"UNSU:{v}:{PASSWORD}").code == 808
    assert stat(cv, g1.pid).status == 0
    r = cu.cmd(f"UNSU:{u}:{PASSWORD}")
    assert r.code == 104
    assert cu.is_closed()

    st = stat(cv, g1.pid)
    assert (st.status, st.winner, st.sol_white, st.sol_black) == (2, 2, 3, 0)
    st = stat(cw, g2.pid)
    assert (st.status, st.winner, st.sol_white, st.sol_black) == (2, 1, 0, 3)
    st = stat(cx, g3.pid)  # the finished game keeps its result
    assert (st.status, st.winner, st.sol_white, st.sol_black) == (2, 3, 1, 2)
    assert wins(db, v) == wins_before[v] + 1
    assert wins(db, w) == wins_before[w] + 1
    assert wins(db, x) == wins_before[x]
    assert wins(db, u) == wins_before[u]
    assert f"{g1.pid}:{u}:B:2" in since_answer(cv.cmd_all("PPEN:0"), 203)[1]
    assert f"{g2.pid}:{u}:N:2" in since_answer(cw.cmd_all("PPEN:0"), 203)[1]
    # Moves are over in those games.
    assert cv.cmd(raw_move(g1.pid, 3, "g1f3")).code == 833
    # Challenges made and received are gone.
    assert cq.cmd("TRAN:0").code == 201
    assert cr.cmd(f"DECL:{u}").code == 822
    assert cr.cmd(f"JUEG:{u}").code == 814
    # The other open session stays but cannot challenge.
    assert cu2.cmd(f"JUEG:{q}").code == 814
    assert r.text == ""
    game = read_pgn(pgnx(cv, g1.pid))
    assert game.headers["Result"] == "0-1"
    assert [mv.uci() for mv in game.mainline_moves()] == ["e2e4", "e7e5"]


def test_closed_account_cannot_log_in(server, new_user, login):
    u = new_user("uc")
    cu = login(u)
    assert cu.cmd(f"UNSU:{u}:{PASSWORD}").code == 104
    with server.connect() as c:
        assert c.cmd(f"USER:{u}").code == 814
        assert c.is_closed()


# == ajedrez-admin games ======================================================================


def _listing(database_url: str) -> dict[str, str]:
    out = admin(database_url, "games", "list")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split()[:6] == ["GAME", "WHITE", "BLACK", "STATUS", "RESULT", "PLIES"]
    return {line.split()[0]: line for line in lines[1:]}


def _date(fecha: str) -> str:
    return datetime.fromtimestamp(int(fecha), UTC).strftime("%Y-%m-%d %H:%M")


def test_admin_games_list_and_export(login, new_user, database_url):
    active = start_match(login, new_user, prefix="al")
    active.play("e4", "c5")
    done = start_match(login, new_user, prefix="al")
    done.play(*FOOLS_MATE)

    listing = _listing(database_url)
    fields = listing[active.pid].split()
    st = stat(active.w, active.pid)
    assert fields[:6] == [active.pid, active.white, active.black, "active", "*", "2"]
    assert " ".join(fields[6:8]) == _date(st.fecha)
    fields = listing[done.pid].split()
    st = stat(done.w, done.pid)
    assert fields[:6] == [done.pid, done.white, done.black, "finished", "0-1", "4"]
    assert " ".join(fields[6:8]) == _date(st.fecha)

    for m, result in ((active, "*"), (done, "0-1")):
        out = admin(database_url, "games", "export", m.pid)
        assert out.returncode == 0, out.stderr
        assert out.stdout == pgnx(m.w, m.pid) + "\n"
        game = read_pgn(out.stdout)
        assert (game.headers["White"], game.headers["Black"]) == (m.white, m.black)
        assert game.headers["Result"] == result
        assert list(game.mainline_moves()) == m.board.move_stack

    out = admin(database_url, "games", "export", "P9999999")
    assert out.returncode != 0 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1
    out = admin(database_url, "games", "export", "nonsense")
    assert out.returncode == 2 and out.stdout == ""


def test_admin_games_purge(login, new_user, database_url, db):
    active = start_match(login, new_user, prefix="pu")
    active.play("e4", "e5")
    done = start_match(login, new_user, prefix="pu")
    done.play(*FOOLS_MATE)
    drawn = start_match(login, new_user, prefix="pu")
    drawn.play("d4")
    draw_by_agreement(drawn)
    winner_wins = wins(db, done.black)
    with db.engine.connect() as c:
        finished = c.execute(select(func.count()).where(Game.status == 2)).scalar_one()
    assert finished >= 2

    out = admin(database_url, "games", "purge")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"{finished} finished games removed"

    for m in (done, drawn):
        assert m.w.cmd(f"STAT:{m.pid}").code == 830
        assert m.b.cmd(f"SPAR:{m.pid}:0").code == 830
        assert move_rows(db, m.pid) == []
    with db.engine.connect() as c:
        assert c.execute(select(func.count()).where(Game.status == 2)).scalar_one() == 0
    # The active game, its moves, the users and their wins stay.
    assert len(move_rows(db, active.pid)) == 2
    assert stat(active.b, active.pid).next_ply == 3
    active.play("Nf3")
    assert wins(db, done.black) == winner_wins
    assert login(done.white).cmd("TRAN:0").kind == "S"
    assert active.pid in _listing(database_url)
    assert done.pid not in _listing(database_url)
    # The players may play each other again.
    assert done.w.cmd(f"JUEG:{done.black}").code == 200

    out = admin(database_url, "games", "purge")
    assert out.returncode == 0
    assert out.stdout.strip() == "no finished games removed"


def test_sql_helpers_agree_with_the_protocol(login, new_user, db):
    """The direct SQL checks above read the right rows."""
    m = start_match(login, new_user, prefix="sq")
    m.play("e4")
    with db.engine.connect() as c:
        n = c.execute(
            text("SELECT count(*) FROM moves WHERE game_id = :g"), {"g": m.game_id}
        ).scalar_one()
    assert n == 1 == len(spar(m.w, m.pid, 0))
    assert db_fen(db, m.pid) == m.board.fen()
    assert jugada(m.board.move_stack[0]) == "e2e4"
