"""How correspondence games end and count over TCP: draw claims (FINP), draw offers (TBLS,
RTBL), resignation (REND), the ranking (SRNK), a resent move, leaving (UNSU), and
ajedrez-admin's games commands.

Contract sections 2 and 4 and docs/protocol.md. Every test uses fresh users, so tests are
independent of each other although the database is shared.
"""

from __future__ import annotations

from datetime import UTC, datetime

import chess
import pytest
from sqlalchemy import func, select, text

from ajedrez.store.models import Game, User
from tests.support.common import PASSWORD, unique_name
from tests.support.play import (
    FOOLS_MATE,
    KNIGHT_SHUFFLE,
    assert_unchanged,
    challenge_and_accept,
    db_fen,
    draw_by_agreement,
    finish_by_resignation,
    jgda,
    jugada,
    move_rows,
    pgnx,
    quiet_line,
    raw_move,
    read_pgn,
    records,
    since_answer,
    spar,
    start_match,
    stat,
    wins,
)
from tests.support.server import admin

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
    line = [mv.uci() for mv in quiet_line(m.board, 100)]
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
