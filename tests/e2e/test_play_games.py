"""Famous complete games replayed move by move over TCP, checked against python-chess.

Each game in ``tests/data/*.pgn`` is played through JGDA by two logged-in sessions; after
every move the opponent's session must see it (SPAR, STAT, PPEN); at the end the result,
the full move list, the final position and the PGN export must agree with the source.
"""

from __future__ import annotations

from pathlib import Path

import chess
import chess.pgn
import pytest

from tests.support.play import (
    DATA,
    RESULT_WINNER,
    db_fen,
    jgda,
    move_rows,
    pgnx,
    read_pgn,
    since_answer,
    spar,
    spar_record,
    start_match,
    stat,
    winner_code,
    wins,
)

GAMES = sorted(DATA.glob("*.pgn"))
PIECES = {"0": None, "2": chess.KNIGHT, "3": chess.BISHOP, "4": chess.ROOK, "5": chess.QUEEN}


def test_the_data_files_are_sound():
    """Every file is one complete game that python-chess reads without an error."""
    assert len(GAMES) >= 5
    endings = set()
    for path in GAMES:
        game = read_pgn(path)
        assert game.headers["Result"] in RESULT_WINNER, path
        board = game.end().board()
        outcome = board.outcome()
        endings.add(outcome.termination if outcome else None)
        if outcome is not None:
            assert outcome.result() == game.headers["Result"], path
        with open(path, encoding="utf-8") as handle:
            chess.pgn.read_game(handle)
            assert chess.pgn.read_game(handle) is None, f"{path}: more than one game"
    # Mates, a stalemate and games that end by resignation are all represented.
    assert {chess.Termination.CHECKMATE, chess.Termination.STALEMATE, None} <= endings
    promotions = [m for p in GAMES for m in read_pgn(p).mainline_moves() if m.promotion is not None]
    assert any(m.promotion == chess.KNIGHT for m in promotions)


@pytest.mark.parametrize("path", GAMES, ids=lambda p: Path(p).stem)
def test_replay_famous_game(path, login, new_user, db):
    source = read_pgn(path)
    moves = list(source.mainline_moves())
    result = source.headers["Result"]
    m = start_match(login, new_user, prefix="fam")

    board = chess.Board()
    reversos = []
    for ply, move in enumerate(moves, start=1):
        mover, other = (m.w, m.b) if board.turn == chess.WHITE else (m.b, m.w)
        reverso = 1 if ply % 3 == 0 else 0  # stored and returned, never interpreted
        r = mover.cmd(jgda(m.pid, ply, move, reverso))
        assert (r.code, r.text) == (208, ""), (ply, move.uci(), r)
        board.push(move)
        reversos.append(reverso)

        # The opponent's session sees exactly this move after the previous ply...
        assert spar(other, m.pid, ply - 1) == [spar_record(ply, move, reverso)]
        # ...and the status moves on; the game ends by itself only on mate or stalemate.
        st = stat(other, m.pid)
        outcome = board.outcome(claim_draw=False)
        assert st.next_ply == ply + 1
        assert (st.status, st.winner) == ((2, winner_code(outcome)) if outcome else (0, 0))
        assert (st.sol_white, st.sol_black) == (0, 0)
        # White-box: the position the server checks the next move against is the real one.
        assert db_fen(db, m.pid) == board.fen(), (ply, move.uci())

    outcome = board.outcome(claim_draw=False)
    if outcome is None:
        # The game ended by resignation: the loser resigns now.
        assert result in ("1-0", "0-1"), path
        loser, winner = (m.b, m.white) if result == "1-0" else (m.w, m.black)
        r = loser.cmd(f"REND:{m.pid}:{winner}")
        assert (r.code, r.text) == (211, "")
    else:
        assert outcome.result() == result

    expected_winner = RESULT_WINNER[result]
    for conn, color in ((m.w, "B"), (m.b, "N")):
        st = stat(conn, m.pid)
        assert (st.pid, st.white, st.black, st.color) == (m.pid, m.white, m.black, color)
        assert (st.status, st.winner, st.next_ply) == (2, expected_winner, len(moves) + 1)
        resigned = outcome is None
        assert st.sol_white == (3 if resigned and expected_winner == 2 else 0)
        assert st.sol_black == (3 if resigned and expected_winner == 1 else 0)

    # SPAR from the start gives every move, in order, as sent.
    expected = [
        spar_record(i, mv, rv) for i, (mv, rv) in enumerate(zip(moves, reversos, strict=True), 1)
    ]
    assert spar(m.w, m.pid, 0) == expected
    assert spar(m.b, m.pid, 0) == expected
    assert len(move_rows(db, m.pid)) == len(moves)

    # Replaying what the server returns reaches the source's final position.
    replay = chess.Board()
    for record in spar(m.b, m.pid, 0):
        ply, uci, _rev, pos, promo = record.split(":")
        base = chess.Move.from_uci(uci)
        move = chess.Move(base.from_square, base.to_square, PIECES[promo])
        assert f"{move.from_square:02d}{move.to_square:02d}" == pos
        assert move in replay.legal_moves, (ply, record)
        replay.push(move)
    assert replay.fen() == source.end().board().fen()

    # A finished game takes no further move (the side to move tries any move).
    r = m.conn(board.turn).cmd(f"JGDA:{m.pid}:{len(moves) + 1}:a1a2:0:0008:0")
    assert r.code == 833, r

    # Both players' PPEN list the game as finished, with the opponent's colour.
    _, recs = since_answer(m.w.cmd_all("PPEN:0"), 203)
    assert recs == [f"{m.pid}:{m.black}:N:2"]
    _, recs = since_answer(m.b.cmd_all("PPEN:0"), 203)
    assert recs == [f"{m.pid}:{m.white}:B:2"]

    # The winner is credited one win; a draw credits nobody.
    assert wins(db, m.white) == (1 if expected_winner == 1 else 0)
    assert wins(db, m.black) == (1 if expected_winner == 2 else 0)

    # PGNX round trip: the same moves, players and result.
    text = pgnx(m.w, m.pid)
    assert pgnx(m.b, m.pid) == text
    exported = read_pgn(text)
    assert list(exported.mainline_moves()) == moves
    assert exported.headers["White"] == m.white
    assert exported.headers["Black"] == m.black
    assert exported.headers["Result"] == result
    assert exported.headers["GameId"] == m.pid
    assert exported.end().board().fen() == source.end().board().fen()
    # The SAN the server writes is the SAN of the source (check marks included).
    assert [n.san() for n in exported.mainline()] == [n.san() for n in source.mainline()]


def test_long_game_spar_and_pgnx_come_in_parts(login, new_user, db):
    """800 plies: SPAR and PGNX answers exceed 4096 bytes and are cut between records."""
    from tests.support.play import long_line

    moves = long_line(800)
    m = start_match(login, new_user, prefix="long")
    for ply, move in enumerate(moves, start=1):
        conn = m.w if ply % 2 else m.b
        r = conn.cmd(jgda(m.pid, ply, move))
        assert r.code == 208, (ply, move.uci(), r)
        m.board.push(move)
    st = stat(m.b, m.pid)
    assert (st.status, st.next_ply) == (0, 801)
    assert db_fen(db, m.pid) == m.board.fen()

    parts = m.w.cmd_all(f"SPAR:{m.pid}:0")
    assert len(parts) >= 2
    expected = [spar_record(i, mv) for i, mv in enumerate(moves, start=1)]
    assert spar(m.w, m.pid, 0) == expected  # checks codes, flags and sizes of every part
    for part in parts:  # each part is whole records
        first, last = part.text.split(",")[0], part.text.split(",")[-1]
        assert first in expected and last in expected
    assert spar(m.b, m.pid, 790) == expected[790:]

    parts = m.b.cmd_all(f"PGNX:{m.pid}")
    assert len(parts) >= 2
    text = pgnx(m.b, m.pid)  # the parts joined by LF
    game = read_pgn(text)
    assert list(game.mainline_moves()) == moves
    assert game.headers["Result"] == "*"
    lines = text.split("\n")
    for part in parts:  # cut between lines only
        for line in part.text.split("\n"):
            assert line in lines
