"""Games through the session in process: STAT, SPAR and JGDA (queued storage work that the
driver awaits and settles, as the transport does), TBLS/RTBL, REND, FINP, PGNX and SRNK
(docs/protocol.md section 4)."""

from __future__ import annotations

import re

from tests.support.play import raw_move
from tests.support.session import frame

FECHA = r"[0-9]{11}"
FOOLS_MATE = ("f2f3", "e7e5", "g2g4", "d8h4")
KNIGHT_SHUFFLE = ("g1f3", "g8f6", "f3g1", "f6g8")


def play(game, *ucis: str, first_ply: int = 1) -> None:
    """Play ``ucis`` from ``first_ply`` on, each by the side to move."""
    for ply, uci in enumerate(ucis, start=first_ply):
        mover = game.w if ply % 2 else game.b
        assert mover.raw(raw_move(game.pid, ply, uci)) == frame(208), (ply, uci)


def stat_fields(client, pid: str) -> list[str]:
    r = client.cmd(f"STAT:{pid}")
    assert r.code == 206, r
    return r.text.split(":")


def test_stat_of_a_new_game_exact(game):
    fields = stat_fields(game.w, game.pid)
    assert re.fullmatch(FECHA, fields[3])
    rest = ["0", "0", "0", "0", "B", "1"]  # active, no winner, no requests; white, ply 1
    assert fields[:3] + fields[4:] == [game.pid, game.white, game.black, *rest]
    assert stat_fields(game.b, game.pid)[8] == "N"  # the caller's own colour


def test_stat_and_spar_only_for_players(game, login, user):
    stranger = login(user())
    assert stranger.cmd(f"STAT:{game.pid}").code == 831
    assert stranger.cmd(f"SPAR:{game.pid}:0").code == 831
    assert stranger.cmd(f"PGNX:{game.pid}").code == 831
    assert game.w.cmd("STAT:P9999999").code == 830
    assert game.w.cmd("SPAR:P9999999:0").code == 830
    assert not stranger.closed


def test_legal_move_stored_and_listed(game):
    assert game.w.raw(f"JGDA:{game.pid}:1:e2e4:0:1228:0") == b"2080\x00\x00"
    assert game.b.raw(f"SPAR:{game.pid}:0") == frame(207, "1:e2e4:0:1228:0")
    assert stat_fields(game.b, game.pid)[9] == "2"
    play(game, "e7e5", first_ply=2)
    assert game.w.raw(f"SPAR:{game.pid}:1") == frame(207, "2:e7e5:0:5236:0")


def test_spar_after_the_last_move(game):
    assert game.w.cmd(f"SPAR:{game.pid}:0").code == 839
    play(game, "d2d4")
    assert game.w.cmd(f"SPAR:{game.pid}:1").code == 839


def test_illegal_move(game):
    r = game.w.cmd(raw_move(game.pid, 1, "e2e5"))
    assert r.code == 838 and r.text
    r = game.w.cmd(raw_move(game.pid, 1, "e1e2"))  # the king's own pawn is there
    assert r.code == 838
    assert game.w.cmd(raw_move(game.pid, 1, "e3e4")).code == 838  # no piece there
    assert not game.w.closed
    assert stat_fields(game.w, game.pid)[9] == "1"  # nothing stored


def test_wrong_ply(game):
    assert game.w.cmd(raw_move(game.pid, 2, "e2e4")).code == 835
    play(game, "e2e4")
    assert game.b.cmd(raw_move(game.pid, 1, "e7e5")).code == 835  # stale
    assert game.b.cmd(raw_move(game.pid, 3, "e7e5")).code == 835  # ahead


def test_not_your_turn(game):
    assert game.b.cmd(raw_move(game.pid, 1, "e7e5")).code == 834
    play(game, "e2e4")
    assert game.w.cmd(raw_move(game.pid, 2, "d2d4")).code == 834


def test_posicion_must_agree_with_jugada(game):
    assert game.w.cmd(f"JGDA:{game.pid}:1:e2e4:0:1227:0").code == 837
    assert game.w.cmd(f"JGDA:{game.pid}:1:e2e4:0:1228:5").code == 837  # no promotion here


def test_resend_of_the_last_move_is_accepted_once(game):
    play(game, "e2e4")
    assert game.w.raw(raw_move(game.pid, 1, "e2e4")) == frame(208)  # the reply was lost
    assert game.w.all(f"SPAR:{game.pid}:0") == game.b.all(f"SPAR:{game.pid}:0")
    assert game.w.cmd(f"SPAR:{game.pid}:0").text == "1:e2e4:0:1228:0"  # stored once
    assert game.b.cmd(raw_move(game.pid, 1, "e2e4")).code == 835  # not a resend: black's


def test_moves_on_an_unknown_or_foreign_game(game, login, user):
    assert game.w.cmd(raw_move("P9999999", 1, "e2e4")).code == 830
    assert login(user()).cmd(raw_move(game.pid, 1, "e2e4")).code == 831


def test_checkmate_ends_the_game(game):
    play(game, *FOOLS_MATE)
    fields = stat_fields(game.w, game.pid)
    assert fields[4:6] == ["2", "2"]  # finished, black won
    assert fields[9] == "5"
    assert game.w.cmd(raw_move(game.pid, 5, "e2e4")).code == 833


def test_draw_offer_declined_then_accepted(game):
    assert game.w.raw(f"TBLS:{game.pid}:{game.black}") == frame(209)
    assert stat_fields(game.b, game.pid)[6:8] == ["1", "0"]
    assert game.w.cmd(f"TBLS:{game.pid}:{game.black}").code == 840
    assert game.w.cmd(f"RTBL:{game.pid}:S:{game.black}").code == 841  # not one's own
    assert game.b.raw(f"RTBL:{game.pid}:N:{game.white}") == frame(210)
    assert stat_fields(game.b, game.pid)[4:8] == ["0", "0", "0", "0"]
    play(game, "e2e4")
    assert game.w.code(f"TBLS:{game.pid}:{game.black}") == 209  # on the opponent's turn
    assert game.b.raw(f"RTBL:{game.pid}:S:{game.white}") == frame(210)
    assert stat_fields(game.w, game.pid)[4:8] == ["2", "3", "1", "2"]  # drawn


def test_draw_offer_failures(game, user):
    assert game.w.cmd(f"TBLS:{game.pid}:{user()}").code == 832
    assert game.b.cmd(f"RTBL:{game.pid}:S:{game.white}").code == 841
    assert game.w.cmd(f"TBLS:P9999999:{game.black}").code == 830


def test_resignation(game, login):
    assert game.b.raw(f"REND:{game.pid}:{game.white}") == frame(211)
    assert stat_fields(game.w, game.pid)[4:8] == ["2", "1", "0", "3"]
    assert game.w.cmd(f"REND:{game.pid}:{game.black}").code == 833
    assert game.w.cmd(f"TBLS:{game.pid}:{game.black}").code == 833
    ranking = dict(r.split(":") for r in game.w.cmd("SRNK").text.split(","))
    assert ranking[game.white] == "1"


def test_finp_refused_without_a_claim(game):
    assert game.w.cmd(f"FINP:{game.pid}:{game.black}").code == 842
    play(game, *KNIGHT_SHUFFLE)  # the starting position twice only
    assert game.b.cmd(f"FINP:{game.pid}:{game.white}").code == 842
    assert game.b.cmd(f"FINP:{game.pid}:{game.black}").code == 832  # names oneself
    assert stat_fields(game.w, game.pid)[4] == "0"


def test_finp_after_threefold_repetition(game):
    play(game, *KNIGHT_SHUFFLE, *KNIGHT_SHUFFLE)  # the starting position a third time
    assert stat_fields(game.w, game.pid)[4] == "0"  # not over until claimed
    assert game.b.raw(f"FINP:{game.pid}:{game.white}") == frame(212)
    assert stat_fields(game.w, game.pid)[4:6] == ["2", "3"]


def test_pgnx(game):
    play(game, "e2e4", "e7e5")
    parts = game.b.all(f"PGNX:{game.pid}")
    assert {p.code for p in parts} == {214} and not parts[-1].more
    text = "".join(p.text for p in parts)
    assert text.startswith("[Event ")
    assert f'[White "{game.white}"]' in text and f'[Black "{game.black}"]' in text
    assert f'[GameId "{game.pid}"]' in text
    assert text.rstrip().endswith("1. e4 e5 *")
    assert game.w.cmd("PGNX:P9999999").code == 830


def test_srnk_records(login, user):
    parts = login(user()).all("SRNK")
    assert {p.code for p in parts} == {205}
    records = ",".join(p.text for p in parts).split(",")
    assert 1 <= len(records) <= 10
    wins = [int(r.split(":")[1]) for r in records]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]{1,32}:[0-9]+", r) for r in records), records
    assert wins == sorted(wins, reverse=True)
