"""The one PGN writer (``ajedrez.domain.export``): the server's text, and the facts a client reads
back from it to write the same text again."""

from __future__ import annotations

import chess

from ajedrez.domain import games as service_games
from ajedrez.domain.export import GameFacts, game_pgn, pgn_date, read_facts
from ajedrez.domain.views import MoveRecord
from tests.support.common import unique_name
from tests.support.moves import play

FOOLS_MATE = ["f3", "e5", "g4", "Qh4#"]


def _moves(sans: list[str]) -> list[chess.Move]:
    board = chess.Board()
    out = []
    for san in sans:
        out.append(board.parse_san(san))
        board.push(out[-1])
    return out


def test_finished_game_text_is_the_servers_pgnx_format():
    text = game_pgn(
        white="ana",
        black="bob",
        game_id="P0000007",
        started=1795000000,  # 2026-11-18 UTC
        ended=1795100000,  # 2026-11-19 UTC
        status=2,
        winner=2,
        end_reason="checkmate",
        moves=_moves(FOOLS_MATE),
    )
    assert text == (
        '[Event "Ajedrez correspondence game"]\n'
        '[Site "Ajedrez ESPOL 2.0 server"]\n'
        '[Date "2026.11.18"]\n'
        '[Round "-"]\n'
        '[White "ana"]\n'
        '[Black "bob"]\n'
        '[Result "0-1"]\n'
        '[GameId "P0000007"]\n'
        '[Mode "ICS"]\n'
        '[EndDate "2026.11.19"]\n'
        '[Termination "normal"]\n'
        "\n"
        "1. f3 e5 2. g4 Qh4# { checkmate } 0-1\n"
    )


def test_active_game_unknown_start_and_abandoned_game():
    active = game_pgn(
        white="ana",
        black="bob",
        game_id="P0000008",
        started=None,
        ended=None,
        status=0,
        winner=0,
        end_reason=None,
        moves=_moves(["e4"]),
    )
    assert '[Date "????.??.??"]' in active and '[Result "*"]' in active
    assert "EndDate" not in active and "Termination" not in active
    assert active.endswith("\n1. e4 *\n")

    left = game_pgn(
        white="ana",
        black="bob",
        game_id="P0000009",
        started=1795000000,
        ended=1795000000,
        status=2,
        winner=1,
        end_reason=service_games.LEFT_SERVICE,
        moves=[],
    )
    assert '[Termination "abandoned"]' in left and left.endswith("{ left the service } 1-0\n")


def test_facts_read_back_write_the_same_text():
    for reason, moves in (("resignation", []), ("checkmate", _moves(FOOLS_MATE)), (None, [])):
        values = dict(
            white="ana",
            black="bob",
            game_id="P0000010",
            started=1795012345,
            ended=None if reason is None else 1795198765,
            status=0 if reason is None else 2,
            winner=0 if reason is None else 2,
            end_reason=reason,
            moves=moves,
        )
        text = game_pgn(**values)  # type: ignore[arg-type]
        facts = read_facts(text)
        assert facts.end_reason == reason
        assert pgn_date(facts.started) == "2026.11.18"
        again = {**values, "started": facts.started, "ended": facts.ended}
        assert game_pgn(**again) == text  # type: ignore[arg-type]
    assert read_facts("") == GameFacts(None, None, None)


def test_service_pgn_is_the_shared_writer(games, accounts):
    white, black = unique_name("pw"), unique_name("pb")
    for name in (white, black):
        accounts.add_user(name, "pw secret", "")
    wid = accounts.login(white, "pw secret").id
    bid = accounts.login(black, "pw secret").id
    games.challenge(bid, white)
    gid = games.accept(wid, "B", black)
    pid = f"P{gid:07d}"
    board = chess.Board()
    for ply, move in enumerate(_moves(FOOLS_MATE), start=1):
        jugada = chess.square_name(move.from_square) + chess.square_name(move.to_square)
        mover = wid if ply % 2 else bid
        record = MoveRecord(ply, jugada, 0, f"{move.from_square:02d}{move.to_square:02d}", 0)
        play(games, mover, gid, record)
        board.push(move)
    text = games.pgn(gid)
    facts = read_facts(text)
    assert text == game_pgn(
        white=white,
        black=black,
        game_id=pid,
        started=facts.started,
        ended=facts.ended,
        status=2,
        winner=2,
        end_reason="checkmate",
        moves=board.move_stack,
    )
    assert facts.end_reason == "checkmate" and facts.ended is not None
