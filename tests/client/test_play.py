"""End to end: whole games played through the ``ajedrez`` command against a real server."""

from __future__ import annotations

import io
import sqlite3

import chess
import chess.pgn

from ajedrez.client.cache import cache_path
from tests.client.conftest import play_game, start_game

OPERA = [
    "e4",
    "e5",
    "Nf3",
    "d6",
    "d4",
    "Bg4",
    "dxe5",
    "Bxf3",
    "Qxf3",
    "dxe5",
    "Bc4",
    "Nf6",
    "Qb3",
    "Qe7",
    "Nc3",
    "c6",
    "Bg5",
    "b5",
    "Nxb5",
    "cxb5",
    "Bxb5+",
    "Nbd7",
    "O-O-O",
    "Rd8",
    "Rxd7",
    "Rxd7",
    "Rd1",
    "Qe6",
    "Bxd7+",
    "Nxd7",
    "Qb8+",
    "Nxb8",
    "Rd8#",
]

# En passant (exf6), castling on both sides (O-O-O by black, O-O by white), and a
# smothered mate by black.
CASTLES = [
    "e4",
    "d5",
    "e5",
    "f5",
    "exf6",
    "Nc6",
    "fxg7",
    "Bf5",
    "Nf3",
    "Qd7",
    "Be2",
    "O-O-O",
    "O-O",
    "Nh6",
    "Kh1",
    "Ng4",
    "Rg1",
    "Nxf2#",
]
# En passant, then a promotion with capture that mates: to a rook (underpromotion) or queen.
PROMOTES = ["e4", "d5", "e5", "f5", "exf6", "Nc6", "fxg7", "Bf5", "Qf3", "Bd7"]


def move_rows(show_output: str) -> dict[str, tuple[str, str]]:
    """The rows of the ``Movida | Blanca | Negra`` table, whitespace collapsed."""
    rows = {}
    for line in show_output.splitlines():
        cells = [" ".join(c.split()) for c in line.split("|")]
        if len(cells) == 3 and cells[0].isdigit():
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def _body(show_output: str) -> str:
    """``show`` without its last two lines (status line with times, data age)."""
    return "\n".join(show_output.rstrip("\n").split("\n")[:-2])


def _cache_rows(m) -> tuple[list[tuple], list[tuple]]:
    host, port = m.address.rsplit(":", 1)
    path = cache_path(m.data_dir, host, int(port), m.user)
    db = sqlite3.connect(path)
    try:
        games = db.execute(
            "SELECT id, white, black, color, status, ganador, solicitud_blancas, "
            "solicitud_negras, next_ply, changed FROM games ORDER BY id"
        ).fetchall()
        moves = db.execute(
            "SELECT game, ply, jugada, reverso, posicion, promocion, san FROM moves "
            "ORDER BY game, ply"
        ).fetchall()
    finally:
        db.close()
    return games, moves


def test_opera_game_to_mate_then_a_third_machine_rebuilds_it(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)

    # White types SAN, black types coordinates.
    board = play_game(a, b, gid, OPERA, coordinates=(False, True))
    assert board.is_checkmate()

    last = a("show", gid).out
    assert "finished: " in last and f"{ana} (white) won: checkmate" in last
    assert "Last move: 17. Rd8# (d1d8) by you" in last
    # The move list of figure 5.17, coordinates and SAN.
    assert "Movida | Blanca" in last and "| Negra" in last
    table = move_rows(last)
    assert table["1"] == ("e2e4 e4", "e7e5 e5")
    assert table["12"] == ("e1c1 O-O-O", "a8d8 Rd8")
    assert table["17"] == ("d1d8 Rd8#", "")
    assert len(table) == 17

    b("sync")
    games = b("games").out
    assert gid in games and "lost: checkmate" in games
    assert f"{ana} (white) won: checkmate" in b("status", gid).out

    # The PGN from the cache equals the server's (PGNX) in its moves and result.
    local = chess.pgn.read_game(io.StringIO(a("export", gid).out))
    remote = chess.pgn.read_game(io.StringIO(a("export", gid, "--from-server").out))
    assert [m.uci() for m in local.mainline_moves()] == [m.uci() for m in remote.mainline_moves()]
    assert local.headers["Result"] == remote.headers["Result"] == "1-0"
    assert len(list(local.mainline_moves())) == len(OPERA)

    # A third machine: ana on a fresh disk ("SIGUEME") sees the same games and moves.
    a2 = machine(ana, name="ana-laptop")
    out = a2("sync").out
    assert f"{len(OPERA)} new moves" in out
    assert _cache_rows(a2) == _cache_rows(a)
    assert _body(a2("show", gid).out) == _body(a("show", gid).out)
    assert a2("export", gid).out == a("export", gid).out


def _stored(m, gid: str) -> dict[str, tuple[str, str, int]]:
    """SAN -> (jugada, posicion, promocion) as the machine's cache holds them."""
    host, port = m.address.rsplit(":", 1)
    db = sqlite3.connect(cache_path(m.data_dir, host, int(port), m.user))
    try:
        rows = db.execute(
            "SELECT san, jugada, posicion, promocion FROM moves WHERE game=?", (gid,)
        ).fetchall()
    finally:
        db.close()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def test_en_passant_and_castling_both_sides_by_san_and_coordinates(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    typed = {
        "exf6": "e5f6",  # en passant in coordinates
        "O-O-O": "0-0-0",  # long castling, written with zeros
        "O-O": "e1g1",  # short castling as the king's move
        "Nxf2#": "Nxf2",
    }
    board = chess.Board()
    for i, san in enumerate(CASTLES):
        (a if i % 2 == 0 else b)("move", gid, typed.get(san, san))
        board.push_san(san)
    assert board.is_checkmate()

    a("sync")
    out = a("show", gid).out
    assert f"{bob} (black) won: checkmate" in out
    rows = move_rows(out)
    assert rows["3"] == ("e5f6 exf6", "b8c6 Nc6")
    assert rows["6"] == ("f1e2 Be2", "e8c8 O-O-O")
    assert rows["7"] == ("e1g1 O-O", "g8h6 Nh6")
    assert rows["9"] == ("f1g1 Rg1", "g4f2 Nxf2#")
    stored = _stored(a, gid)
    assert stored["exf6"] == ("e5f6", "3645", 0)
    assert stored["O-O"] == ("e1g1", "0406", 0)
    assert stored["O-O-O"] == ("e8c8", "6058", 0)
    # Both players' data agree, and so does the server's PGN.
    b("sync")
    assert _cache_rows(a)[1] == _cache_rows(b)[1]
    remote = chess.pgn.read_game(io.StringIO(b("export", gid, "--from-server").out))
    assert [remote.board().san(m) for m in [*remote.mainline_moves()][:1]] == ["e4"]
    assert [m.uci() for m in remote.mainline_moves()] == [
        m.uci() for m in chess.pgn.read_game(io.StringIO(b("export", gid).out)).mainline_moves()
    ]


def test_underpromotion_in_san_mates(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    play_game(a, b, gid, PROMOTES)
    out = a("move", gid, "gxf8=R#").out
    assert "you played 6. gxf8=R# (g7f8)" in out and "checkmate" in out
    assert _stored(a, gid)["gxf8=R#"] == ("g7f8", "5461", 4)
    b("sync")
    shown = b("show", gid).out
    assert f"{ana} (white) won: checkmate" in shown
    rank8 = next(line for line in shown.splitlines() if line.startswith(" 8 "))
    assert "[♖]" in rank8  # black's view: the new rook, marked as the last move
    pgn = b("export", gid).out
    assert "6. gxf8=R#" in pgn and pgn.rstrip().endswith("1-0")


def test_queen_promotion_in_coordinates_mates(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    play_game(a, b, gid, PROMOTES, coordinates=(True, True))
    refused = a.fail("move", gid, "g7f8", rc=1)
    assert "last rank" in refused.err and "g7f8q" in refused.err
    out = a("move", gid, "g7f8q").out
    assert "you played 6. gxf8=Q# (g7f8)" in out
    assert _stored(a, gid)["gxf8=Q#"] == ("g7f8", "5461", 5)
    assert "won: checkmate" in b("status", gid, "--sync").out


def test_board_is_drawn_from_my_side_with_last_move_marked(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    a("move", gid, "e4")
    b("move", gid, "c5")

    white_view = a("show", gid, "--sync").out.splitlines()
    black_view = b("show", gid).out.splitlines()
    assert white_view[2].split() == list("abcdefgh")
    assert black_view[2].split() == list("hgfedcba")
    # White's view: rank 8 at the top, black's view: rank 1 at the top.
    assert white_view[3].startswith(" 8 ") and black_view[3].startswith(" 1 ")
    # The last move (c7c5) is marked on both squares.
    rank5 = next(line for line in white_view if line.startswith(" 5 "))
    rank7 = next(line for line in white_view if line.startswith(" 7 "))
    assert "[♟]" in rank5 and "[·]" in rank7
    assert f"{ana} (white) | move 2 | your turn | {bob} moved" in "\n".join(white_view)
    assert f"{bob} (black) | move 2 | {ana} to move | {ana} moved" in "\n".join(black_view)

    bare = a("show", gid, "--no-coordinates").out.splitlines()
    assert bare[2].startswith(" ♜ ") and "a  b" not in "\n".join(bare[:12])
    assert "data from sync" in bare[-1]
