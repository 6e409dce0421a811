"""The rules of moves over TCP: JGDA's rejections, special moves (promotion, castling, en
passant) and the endings that happen by themselves. Challenges and reads are in
test_play_challenges.py, draws, resignation and ranking in test_play_results.py.

Contract sections 2 and 4 and docs/protocol.md. Every test uses fresh users, so tests are
independent of each other although the database is shared.
"""

from __future__ import annotations

import chess
import pytest
from sqlalchemy import text

from tests.support.play import (
    FOOLS_MATE,
    INSUFFICIENT,
    KNIGHT_SHUFFLE,
    LOYD_STALEMATE,
    Match,
    assert_unchanged,
    db_fen,
    jgda,
    move_rows,
    pgnx,
    quiet_line,
    raw_move,
    read_pgn,
    spar,
    start_match,
    stat,
    wins,
)

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
    # a pending draw offer refuses nothing: the mismatch (6) is what is wrong
    assert m.b.cmd(f"TBLS:{m.pid}:{m.white}").code == 209
    assert m.w.cmd(raw_move(m.pid, 1, "e2e4", pos="0000")).code == 837
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


def test_a_draw_offer_blocks_no_move(login, new_user):
    m = start_match(login, new_user, prefix="db")
    m.play("e4")
    # White offers on black's turn; black's move declines it.
    assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 209
    m.play("e5")
    assert (stat(m.w, m.pid).sol_white, stat(m.w, m.pid).sol_black) == (0, 0)
    assert m.b.cmd(f"RTBL:{m.pid}:S:{m.white}").code == 841
    # One offer per move: white offers again only after a move of its own.
    assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 840
    m.play("Nf3", "Nc6")
    # White offers on its own turn and moves: the offer stands for black to answer.
    assert m.w.cmd(f"TBLS:{m.pid}:{m.black}").code == 209
    m.play("Bc4")
    assert stat(m.b, m.pid).sol_white == 1
    assert m.b.cmd(f"RTBL:{m.pid}:S:{m.white}").code == 210
    st = stat(m.w, m.pid)
    assert (st.status, st.winner, st.sol_white, st.sol_black) == (2, 3, 1, 2)


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
    line = [mv.uci() for mv in quiet_line(m.board, 150)]
    m.play(*line[:-1])
    st = stat(m.w, m.pid)
    assert (st.status, m.board.halfmove_clock) == (0, 149)
    m.play(line[-1])
    st = stat(m.w, m.pid)
    assert (st.status, st.winner, st.next_ply) == (2, 3, 155)
