"""Helpers for the correspondence-play tests: two logged-in players, moves as ESPOL lines.

Every move is turned into the wire fields with python-chess (``posicion`` uses its square
numbers, a1=00 ... h8=63), so the tests never type a square number by hand.
"""

from __future__ import annotations

import io
import random
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.pgn
from sqlalchemy import select, text

from ajedrez.store.models import Game
from tests.support.espol import Conn, Reply

DATA = Path(__file__).resolve().parent.parent / "data"
PID = re.compile(r"P[0-9]{7}")
FECHA = re.compile(r"[0-9]{11}")
PROMOCION = {None: 0, chess.KNIGHT: 2, chess.BISHOP: 3, chess.ROOK: 4, chess.QUEEN: 5}
RESULT_WINNER = {"1-0": 1, "0-1": 2, "1/2-1/2": 3}
WINNER_RESULT = {1: "1-0", 2: "0-1", 3: "1/2-1/2"}


# -- the wire fields of a move ------------------------------------------------------------


def jugada(move: chess.Move) -> str:
    """From-square then to-square, without python-chess's promotion letter."""
    return chess.square_name(move.from_square) + chess.square_name(move.to_square)


def posicion(move: chess.Move) -> str:
    return f"{move.from_square:02d}{move.to_square:02d}"


def promocion(move: chess.Move) -> int:
    return PROMOCION[move.promotion]


def jgda(pid: str, ply: int, move: chess.Move, reverso: int = 0) -> str:
    return f"JGDA:{pid}:{ply}:{jugada(move)}:{reverso}:{posicion(move)}:{promocion(move)}"


def spar_record(ply: int, move: chess.Move, reverso: int = 0) -> str:
    return f"{ply}:{jugada(move)}:{reverso}:{posicion(move)}:{promocion(move)}"


def winner_code(outcome: chess.Outcome | None) -> int:
    if outcome is None:
        return 0
    if outcome.winner is None:
        return 3
    return 1 if outcome.winner == chess.WHITE else 2


# -- replies ------------------------------------------------------------------------------


def records(parts: list[Reply], code: int, prefix: str | None = None, sep: str = ",") -> list[str]:
    """The records of a (possibly multi-part) answer, checking every part's framing.

    With ``prefix`` (the fecha of TRAN and PPEN) every part must start with ``prefix + sep``.
    """
    out: list[str] = []
    for i, part in enumerate(parts):
        assert part.code == code, (i, part)
        assert part.more == (i < len(parts) - 1), (i, part)
        assert len(part.data) <= 4096
        body = part.text
        if prefix is not None:
            assert body.startswith(prefix + sep), (i, body[:60])
            body = body[len(prefix) + len(sep) :]
        assert body, f"part {i} carries no record"
        out += body.split(sep)
    return out


def since_answer(parts: list[Reply], code: int) -> tuple[str, list[str]]:
    """TRAN/PPEN answer: (fecha to send next, records); S_NODATA gives no records."""
    if parts[0].code == 201:
        assert len(parts) == 1, parts
        assert not parts[0].more
        assert FECHA.fullmatch(parts[0].text), parts[0]
        return parts[0].text, []
    fecha = parts[0].text.split(",", 1)[0]
    assert FECHA.fullmatch(fecha), parts[0]
    return fecha, records(parts, code, prefix=fecha)


@dataclass(frozen=True)
class Stat:
    pid: str
    white: str
    black: str
    fecha: str
    status: int
    winner: int
    sol_white: int
    sol_black: int
    color: str
    next_ply: int


def parse_stat(reply: Reply) -> Stat:
    assert reply.code == 206, reply
    f = reply.text.split(":")
    assert len(f) == 10, reply.text
    assert PID.fullmatch(f[0]) and FECHA.fullmatch(f[3]), reply.text
    assert f[8] in ("B", "N"), reply.text
    return Stat(f[0], f[1], f[2], f[3], int(f[4]), int(f[5]), int(f[6]), int(f[7]), f[8], int(f[9]))


def stat(conn: Conn, pid: str) -> Stat:
    return parse_stat(conn.cmd(f"STAT:{pid}"))


def spar(conn: Conn, pid: str, after: int = 0) -> list[str]:
    return records(conn.cmd_all(f"SPAR:{pid}:{after}"), 207)


def pgnx(conn: Conn, pid: str) -> str:
    """PGNX text: the parts' lines joined by LF (parts are cut between lines)."""
    parts = conn.cmd_all(f"PGNX:{pid}")
    return "\n".join(records(parts, 214, sep="\n"))


def read_pgn(source: str | Path) -> chess.pgn.Game:
    text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None, source
    assert not game.errors, game.errors
    return game


# -- two players and a game ---------------------------------------------------------------


@dataclass
class Match:
    """A game between two logged-in sessions; ``board`` follows the moves sent through it."""

    pid: str
    white: str
    black: str
    w: Conn
    b: Conn
    board: chess.Board = field(default_factory=chess.Board)

    @property
    def game_id(self) -> int:
        return int(self.pid[1:])

    @property
    def ply(self) -> int:
        """The next ply."""
        return len(self.board.move_stack) + 1

    def conn(self, color: chess.Color) -> Conn:
        return self.w if color == chess.WHITE else self.b

    @property
    def mover(self) -> Conn:
        return self.conn(self.board.turn)

    @property
    def waiter(self) -> Conn:
        return self.conn(not self.board.turn)

    def name(self, color: chess.Color) -> str:
        return self.white if color == chess.WHITE else self.black

    def move(self, notation: str) -> chess.Move:
        """A move of the current position from UCI (``e7e8n``) or SAN."""
        try:
            move = chess.Move.from_uci(notation)
        except ValueError:
            return self.board.parse_san(notation)
        assert move in self.board.legal_moves, (notation, self.board.fen())
        return move

    def send(self, notation: str, reverso: int = 0) -> Reply:
        """Send the side to move's move; the board advances only on 208."""
        move = self.move(notation)
        reply = self.mover.cmd(jgda(self.pid, self.ply, move, reverso))
        if reply.code == 208:
            self.board.push(move)
        return reply

    def play(self, *notations: str) -> None:
        """Play moves that must all be accepted."""
        for notation in notations:
            reply = self.send(notation)
            assert (reply.code, reply.text) == (208, ""), (notation, reply)

    def stat(self, conn: Conn | None = None) -> Stat:
        return stat(conn or self.w, self.pid)


def start_match(
    login: Callable[..., Conn], new_user: Callable[..., str], prefix: str = "p"
) -> Match:
    """Two fresh users; the first challenges, the second accepts playing black."""
    white, black = new_user(prefix), new_user(prefix)
    w, b = login(white), login(black)
    return challenge_and_accept(white, w, black, b)


def challenge_and_accept(white: str, w: Conn, black: str, b: Conn) -> Match:
    r = w.cmd(f"JUEG:{black}")
    assert (r.code, r.text) == (200, ""), r
    r = b.cmd(f"ACEP:N:{white}")
    assert r.code == 202 and PID.fullmatch(r.text), r
    return Match(r.text, white, black, w, b)


# -- the database, for what the protocol does not show -------------------------------------


def move_rows(db, pid: str) -> list[tuple]:  # type: ignore[no-untyped-def]
    with db.engine.connect() as c:
        return [
            tuple(r)
            for r in c.execute(
                text(
                    "SELECT ply, jugada, reverso, posicion, promocion FROM moves "
                    "WHERE game_id = :g ORDER BY ply"
                ),
                {"g": int(pid[1:])},
            )
        ]


def db_fen(db, pid: str) -> str:  # type: ignore[no-untyped-def]
    """The position the server stores for the game (what it checks the next move against)."""
    with db.engine.connect() as c:
        return c.execute(
            text("SELECT fen FROM games WHERE id = :g"), {"g": int(pid[1:])}
        ).scalar_one()


def wins(db, name: str) -> int:  # type: ignore[no-untyped-def]
    with db.engine.connect() as c:
        return c.execute(text("SELECT wins FROM users WHERE name = :n"), {"n": name}).scalar_one()


def user_id(db, name: str) -> int:  # type: ignore[no-untyped-def]
    with db.engine.connect() as c:
        return c.execute(text("SELECT id FROM users WHERE name = :n"), {"n": name}).scalar_one()


# -- generated lines ------------------------------------------------------------------------


def _key(board: chess.Board) -> str:
    return " ".join(board.fen().split()[:4])


def quiet_line(board: chess.Board, count: int, seed: int = 1) -> list[chess.Move]:
    """``count`` plies from ``board`` with no capture and no pawn move, never repeating a
    position (so no repetition rule applies) and never mating or stalemating."""
    rng = random.Random(seed)
    b = board.copy()
    seen = {_key(b)}
    out: list[chess.Move] = []

    def search(left: int) -> bool:
        if left == 0:
            return True
        moves = [
            m
            for m in b.legal_moves
            if not b.is_capture(m) and b.piece_type_at(m.from_square) != chess.PAWN
        ]
        rng.shuffle(moves)
        for m in moves:
            b.push(m)
            k = _key(b)
            if k not in seen and not (b.is_checkmate() or b.is_stalemate()):
                seen.add(k)
                out.append(m)
                if search(left - 1):
                    return True
                out.pop()
                seen.discard(k)
            b.pop()
        return False

    assert search(count)
    return out


def ucis(moves: Iterable[chess.Move]) -> list[str]:
    return [m.uci() for m in moves]


def long_line(total: int, seed: int = 7) -> list[chess.Move]:
    """A game of ``total`` plies that no rule ends: stretches of quiet piece moves, each
    followed by a pawn step (which resets the 50/75-move count and makes every later
    position new, so no repetition rule can apply either)."""
    board = chess.Board()
    out: list[chess.Move] = []
    rng = random.Random(seed)
    while len(out) < total:
        for move in quiet_line(board, min(60, total - len(out)), seed=rng.randrange(1 << 30)):
            board.push(move)
            out.append(move)
        if len(out) == total:
            break
        steps = sorted(
            (
                m
                for m in board.legal_moves
                if board.piece_type_at(m.from_square) == chess.PAWN
                and not board.is_capture(m)
                and m.promotion is None
            ),
            key=lambda m: m.uci(),
        )
        assert steps, "no pawn step left"
        board.push(steps[0])
        assert board.outcome(claim_draw=False) is None
        out.append(steps[0])
    return out


# -- lines and checks of the rules tests ---------------------------------------------------

FOOLS_MATE = ("f3", "e5", "g4", "Qh4#")


def moves_of(moves: str) -> tuple[str, ...]:
    return tuple(moves.split())


LOYD_STALEMATE = moves_of(
    "e3 a5 Qh5 Ra6 Qxa5 h5 h4 Rah6 Qxc7 f6 Qxd7+ Kf7 Qxb7 Qd3 Qxb8 Qh7 Qxc8 Kg6 Qe6"
)
# Found by a capture-first random playout; ends with K+B against a bare king.
INSUFFICIENT = moves_of(
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
