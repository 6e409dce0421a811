"""How fast this machine is today, next to ``../shared/baselines.md``.

Machines of one kind differ from day to day; before comparing figures from two sessions,
run this on both: the median time of ``chess.Board(fen)`` (python-chess, pure Python) and
the rate of one-row SQLite commits in WAL mode with ``synchronous=FULL`` (the fsync).
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import chess

FEN = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"


def board_from_fen_us(rounds: int = 5, count: int = 2000) -> float:
    runs = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(count):
            chess.Board(FEN)
        runs.append((time.perf_counter() - started) / count * 1e6)
    return statistics.median(runs)


def sqlite_commits_per_second(directory: Path, count: int = 2000) -> float:
    conn = sqlite3.connect(directory / "calibrate.sqlite3", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("CREATE TABLE t (x INTEGER)")
        started = time.perf_counter()
        for i in range(count):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t VALUES (?)", (i,))
            conn.execute("COMMIT")
        return count / (time.perf_counter() - started)
    finally:
        conn.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", type=Path, help="where the SQLite file goes (a temporary directory)")
    args = p.parse_args()
    print(f"chess.Board(fen): {board_from_fen_us():.0f} us median (baselines.md: 42)")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        rate = sqlite_commits_per_second(Path(tmp))
    print(f"SQLite WAL synchronous=FULL: {rate:,.0f} commits/s (baselines.md: 6,118)")


if __name__ == "__main__":
    main()
