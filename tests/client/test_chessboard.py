"""Move input, the JGDA fields, the board drawing and the move list, without a server."""

from __future__ import annotations

import chess
import pytest

from ajedrez.client.chessboard import (
    MoveInputError,
    board_from,
    ending,
    jgda_for,
    move_table,
    parse_move,
    render_board,
)
from ajedrez.client.protocol import game_id
from ajedrez.domain.values import BLACK
from ajedrez.domain.views import GameStatus


@pytest.mark.parametrize(
    ("fen", "typed", "uci", "posicion", "promocion"),
    [
        (chess.STARTING_FEN, "Nf3", "g1f3", "0621", 0),
        (chess.STARTING_FEN, "e2e4", "e2e4", "1228", 0),
        (chess.STARTING_FEN, "e2-e4", "e2e4", "1228", 0),
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "O-O", "e1g1", "0406", 0),
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "0-0-0", "e1c1", "0402", 0),
        ("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "e8c8", "e8c8", "6058", 0),
        ("3r4/4P3/8/8/8/8/8/K6k w - - 0 1", "exd8=Q", "e7d8q", "5259", 5),
        ("3r4/4P3/8/8/8/8/8/K6k w - - 0 1", "exd8=N", "e7d8n", "5259", 2),
        ("3r4/4P3/8/8/8/8/8/K6k w - - 0 1", "e7e8r", "e7e8r", "5260", 4),
        ("3r4/4P3/8/8/8/8/8/K6k w - - 0 1", "e7e8=B", "e7e8b", "5260", 3),
        ("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2", "exd6", "e5d6", "3643", 0),
        ("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2", "e5d6", "e5d6", "3643", 0),
        ("4k3/8/8/8/3Pp3/8/8/4K3 b - d3 0 1", "exd3", "e4d3", "2819", 0),
    ],
)
def test_move_input_gives_the_jgda_fields(fen, typed, uci, posicion, promocion):
    board = chess.Board(fen)
    move = parse_move(board, typed)
    assert move.uci() == uci
    j = jgda_for(board, move)
    assert (j.jugada, j.posicion, j.promocion) == (uci[:4], posicion, promocion)
    assert j.ply == board.ply() + 1


@pytest.mark.parametrize(
    ("fen", "typed", "why"),
    [
        (chess.STARTING_FEN, "Nf6", "no white knight can move to f6"),
        (chess.STARTING_FEN, "O-O", "castling is not allowed now"),
        ("4k3/8/8/8/8/8/8/R3K2R w - - 0 1", "O-O", "the king or that rook has moved"),
        ("4k3/4r3/8/8/8/8/4N3/4K3 w - - 0 1", "Nc3", "would leave your king in check"),
        ("4k3/4P3/8/8/8/8/8/4K3 w - - 0 1", "e7e8", "say which piece"),
        ("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1", "b8", "must promote"),
        ("4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1", "Nd2", "ambiguous"),
        (chess.STARTING_FEN, "xyz", "not a move"),
    ],
)
def test_refused_input_says_why(fen, typed, why):
    with pytest.raises(MoveInputError) as e:
        parse_move(chess.Board(fen), typed)
    assert why in str(e.value)


def test_ambiguous_move_lists_the_options():
    board = chess.Board("4k3/8/8/8/8/8/8/1N2KN2 w - - 0 1")
    with pytest.raises(MoveInputError, match="could be Nbd2 or Nfd2"):
        parse_move(board, "Nd2")


def test_board_from_black_side_with_last_move():
    board = board_from([("e2e4", 0), ("c7c5", 0)])
    text = render_board(board, bottom=BLACK, last_move=board.peek())
    lines = text.splitlines()
    assert lines[0].split() == list("hgfedcba") and lines[-1] == lines[0]
    assert lines[1].startswith(" 1 ") and lines[8].startswith(" 8 ")
    assert "[♟]" in lines[5] and "[·]" in lines[7]  # c5 (rank 5) and c7 (rank 7)
    bare = render_board(board, coordinates=False).splitlines()
    assert len(bare) == 8 and bare[0].startswith(" ♜ ")


def test_move_table_as_in_figure_5_17():
    table = move_table([("e2e4", "e4"), ("e7e5", "e5"), ("g1f3", "Nf3")]).splitlines()
    assert table[0].replace(" ", "") == "Movida|Blanca|Negra"
    assert [c.split() for c in table[2].split("|")] == [["1"], ["e2e4", "e4"], ["e7e5", "e5"]]
    assert [c.split() for c in table[3].split("|")] == [["2"], ["g1f3", "Nf3"], []]


def _finished(ganador: int, sol_b: int = 0, sol_n: int = 0) -> GameStatus:
    return GameStatus("P0000001", "ana", "bob", 1, 2, ganador, sol_b, sol_n, "B", 5)


def test_endings_in_words():
    mate = board_from([("f2f3", 0), ("e7e5", 0), ("g2g4", 0), ("d8h4", 0)])
    assert ending(mate, _finished(2)) == "bob (black) won: checkmate"
    resigned = ending(chess.Board(), _finished(1, 0, 3))
    assert resigned == "ana (white) won: bob resigned or left the service"
    assert ending(chess.Board(), _finished(3, 1, 2)) == "draw (agreed)"
    stalemate = chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert ending(stalemate, _finished(3)) == "draw (stalemate)"
    active = GameStatus("P0000001", "ana", "bob", 1, 0, 0, 0, 0, "B", 5)
    assert ending(chess.Board(), active) is None


def test_game_ids():
    assert game_id("P0000012") == game_id("p12") == game_id("12") == "P0000012"
    with pytest.raises(ValueError):
        game_id("bob")
