"""CPU per move of the store's batch path, in process: no sockets, no load generator.

50 games on a fresh SQLite file, one move per game in each batch (``Database.write_jobs``,
as a batch of the loop does), random legal moves; prints the process CPU time per move
over 60 batches after 4 of warm-up. ``--profile`` adds cProfile's top functions.

Run it from a snapshot's directory with ``python -m bench.move_batch`` so that the
snapshot's ``ajedrez`` is the one imported (docs/performance.md): it measures a build's
move path apart from the machine's other load, which moves CPU time far less than it
moves wall time.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import tempfile
import time

import chess

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from ajedrez.store.moves import Moves

try:  # the domain's value since the service layer; ESPOL's record before it
    from ajedrez.domain.views import MoveRecord
except ImportError:  # pragma: no cover - an older build
    from ajedrez.protocol.records import MoveRecord  # type: ignore[no-redef]

PROMOTION = {chess.KNIGHT: 2, chess.BISHOP: 3, chess.ROOK: 4, chess.QUEEN: 5}


def record(ply: int, move: chess.Move) -> MoveRecord:
    squares = f"{move.from_square:02d}{move.to_square:02d}"
    promotion = PROMOTION.get(move.promotion, 0) if move.promotion else 0
    return MoveRecord(ply, move.uci()[:4], 0, squares, promotion)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=50)
    p.add_argument("--batches", type=int, default=60)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    db = Database(f"sqlite:///{tempfile.mkdtemp()}/moves.sqlite3")
    upgrade(db)
    accounts, games = Accounts(db), Games(db)
    played = []
    for i in range(args.games):
        accounts.add_user(f"w{i}", "pw", "")
        accounts.add_user(f"b{i}", "pw", "")
        white, black = accounts.login(f"w{i}", "pw"), accounts.login(f"b{i}", "pw")
        games.challenge(white.id, f"b{i}", None, False)
        game_id = games.accept(black.id, "N", f"w{i}", None)
        played.append((game_id, white.id, black.id, chess.Board()))
    moves = Moves.of(db)
    rng = random.Random(1)

    def batch(ply: int) -> int:
        jobs = []
        for game_id, white, black, board in played:
            if board.is_game_over():
                continue
            move = rng.choice(list(board.legal_moves))
            board.push(move)
            jobs.append(moves.job(white if ply % 2 else black, game_id, record(ply, move)))
        refused = [o for o in db.write_jobs(jobs) if o is not None]
        assert not refused, refused
        return len(jobs)

    for ply in range(1, 5):
        batch(ply)
    profile = cProfile.Profile() if args.profile else None
    started, count = time.process_time(), 0
    if profile is not None:
        profile.enable()
    for ply in range(5, 5 + args.batches):
        count += batch(ply)
    if profile is not None:
        profile.disable()
    spent = time.process_time() - started
    print(f"{count} moves, {spent / count * 1e6:.1f} us of CPU a move")
    if profile is not None:
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)
    db.dispose()


if __name__ == "__main__":
    main()
