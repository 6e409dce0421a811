"""1995 ESPOL data sets: the sample in tests/data/espol1995 and its facts, and a
generator of large ones (random legal games, seeded) for the progress test and
benchmarks. Run as a program it writes a large data set:

    python -m tests.support.espol_data DIR --users 200 --games 5000 --seed 1
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from pathlib import Path

import chess

from tests.support.common import ROOT

SAMPLE = ROOT / "tests" / "data" / "espol1995"
PROMOTION_CODES = {None: 0, chess.KNIGHT: 2, chess.BISHOP: 3, chess.ROOK: 4, chess.QUEEN: 5}
START = 797_000_000  # 1995-04-05, a fecha of the old server's time


def pen_line(ply: int, move: chess.Move, posicion: str | None = None) -> str:
    """One line of a P#######.PEN file, as the old server wrote it (reverso 1 for black's
    moves: the board turned)."""
    jugada = chess.square_name(move.from_square) + chess.square_name(move.to_square)
    pos = posicion or f"{move.from_square:02d}{move.to_square:02d}"
    return f"{ply:06d}:{jugada}:{(ply + 1) % 2}:{pos}:{PROMOTION_CODES[move.promotion]}"


def pen_text(moves: list[chess.Move]) -> str:
    return "".join(pen_line(i, m) + "\n" for i, m in enumerate(moves, 1))


def san_moves(*sans: str) -> list[chess.Move]:
    board = chess.Board()
    return [board.push_san(s) for s in sans]


# -- the sample ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleUser:
    name: str
    password: str
    comment: str  # as imported
    fecha: int
    wins: int


# The accounts of tests/data/espol1995/autorizados/usuarios that are imported.
SAMPLE_USERS = [
    SampleUser("ana", "Reina-de-Ana.1995", "Ana María Ordóñez", 789_100_000, 12),
    SampleUser("bruno", "caballo~Bruno~95", "Bruno Peñafiel Zúñiga", 789_200_000, 7),
    SampleUser("carlos", "Carlos/enroque/77", "Carlos Andrés Muñoz, FIEC", 789_300_000, 3),
    SampleUser("diana", "gambito de Diana!", "Diana Valdés", 789_400_000, 5),
    SampleUser("ernesto", "alfil_Ernesto_7", "Ernesto Calle", 789_500_000, 0),
    SampleUser("fabiola", "torre.FABIOLA.8", "Fabiola Íñiguez", 789_600_000, 2),
    SampleUser(
        "gonzalo", "peon-Gonzalo-e4", "Gonzalo Sáenz (laboratorio de redes)", 789_700_000, 9
    ),
    SampleUser("hilda", "dama#Hilda#1995", "Hilda Cárdenas", 789_800_000, 1),
    SampleUser("ivan", "jaque*Ivan*mate", "Iván Núñez", 789_900_000, 4),
    SampleUser("julia", "Julia+espol+95", "Julia Espiñoza", 790_000_000, 0),
]
# Passwords of lines that are not imported: they must appear nowhere either.
SAMPLE_REFUSED_PASSWORDS = [
    "Jose-clave-1995",
    "Karla:con:dos",
    "Luis-clave-ayer",
    "Ana-segunda-vez",
    "Bruno-mayuscula",
    "Nora-muchas-wins",
]
SAMPLE_REQUESTS = {  # subscription requests imported: name -> (password, comment)
    "olga": ("Olga-pide-cuenta", "Olga Benítez, olga@espol.edu.ec"),
    "pedro": ("Pedro_pide_95", "Pedro Alvarado - FIEC"),
}
SAMPLE_REFUSED_REQUEST_PASSWORDS = ["Ana-otra-solicitud", "Rosa-alta-mal", "Olga-otra-vez"]
SAMPLE_SEQUENCE = 20  # server.eje's secuencial


def _write(path: Path, lines: list[str], encoding: str = "latin-1") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes("".join(line + "\n" for line in lines).encode(encoding))


# -- a large data set ----------------------------------------------------------------------


def random_game(rng: random.Random, max_plies: int) -> list[chess.Move]:
    """A random legal game of up to ``max_plies`` plies that never ends by the rules
    (it stops one move before an ending)."""
    board = chess.Board()
    moves: list[chess.Move] = []
    for _ in range(rng.randint(0, max_plies)):
        legal = list(board.legal_moves)
        rng.shuffle(legal)
        for move in legal:
            board.push(move)
            if board.outcome(claim_draw=False) is None:
                moves.append(move)
                break
            board.pop()
        else:
            break
    return moves


def write_large(
    directory: Path, *, users: int, games: int, seed: int = 1, max_plies: int = 60
) -> list[tuple[str, str]]:
    """A data set of ``users`` accounts (u0000, u0001, ...) and ``games`` random games
    between them, every pair with at most one active game; returns (name, password) of
    each account."""
    rng = random.Random(seed)
    accounts = [(f"u{i:04d}", f"pw-{seed}-{i}-{rng.getrandbits(32):08x}") for i in range(users)]
    _write(directory / "server.cfg", ["autorizados:.", "est_partida:.", "solicitudes:pen"])
    _write(directory / "server.eje", [f"00999:{games + 5:07d}"])
    _write(
        directory / "usuarios",
        [
            f"{n}:{p}:Jugador {n}:{START - 86400 + i:011d}:{i % 7}"
            for i, (n, p) in enumerate(accounts)
        ],
    )
    lines = []
    active: set[frozenset[str]] = set()
    for g in range(1, games + 1):
        white, black = rng.sample([n for n, _ in accounts], 2)
        pair = frozenset((white, black))
        finished = pair in active or rng.random() < 0.6
        if not finished:
            active.add(pair)
        status, winner = (2, rng.choice((1, 2, 3))) if finished else (0, 0)
        lines.append(f"P{g:07d}:{white}:{black}:{START + g:011d}:{status}:{winner}:0:0")
        _write(
            directory / "pen" / f"P{g:07d}.PEN", pen_text(random_game(rng, max_plies)).splitlines()
        )
    _write(directory / "est_partida", lines)
    return accounts


def main() -> None:
    parser = argparse.ArgumentParser(description="write a large 1995 ESPOL data set")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--games", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    write_large(args.directory, users=args.users, games=args.games, seed=args.seed)


if __name__ == "__main__":
    main()
