"""How fast this machine is today, next to the reference figures of its kind.

Machines of one kind differ from day to day; before comparing figures from two runs, run
this before each: the median time of ``chess.Board(fen)`` (python-chess, pure Python) and
the rate of one-row SQLite commits in WAL mode with ``synchronous=FULL`` (the fsync).
The reference figures, 42 µs and 6,118 commits/s, are those of a quiet 2-vCPU machine of
the kind ``docs/performance.md`` was measured on.

``--disk-seconds N`` also times ``fdatasync`` of a small write, about 300 a second for N
seconds, as SQLite's commits do, and prints its percentiles and the syncs that took
longer than 10 ms. This machine's virtual disk now and then stops completing writes for
tens to hundreds of milliseconds; every durable commit waits for it then, whatever the
server does, so a latency tail measured while it happens is the disk's
(``docs/performance.md``, "Why JGDA's p99 stays above 20 ms on SQLite").
"""

from __future__ import annotations

import argparse
import os
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


def fdatasync_ms(directory: Path, seconds: float) -> list[float]:
    """Each ``fdatasync`` of a 12 KiB write, in ms, ~3 ms apart for ``seconds``."""
    path = directory / "calibrate.sync"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(fd, bytes(4096 * 64))
        os.fsync(fd)
        block = os.urandom(4096 * 3)
        took: list[float] = []
        ends = time.monotonic() + seconds
        while time.monotonic() < ends:
            os.pwrite(fd, block, (len(took) % 60) * 4096)
            started = time.perf_counter()
            os.fdatasync(fd)
            took.append((time.perf_counter() - started) * 1000)
            time.sleep(0.003)
        return took
    finally:
        os.close(fd)


def _disk_report(took: list[float], seconds: float) -> str:
    ranked = sorted(took)

    def at(q: float) -> float:
        return ranked[min(len(ranked) - 1, int(q * len(ranked)))]

    slow = [t for t in took if t > 10]
    return (
        f"fdatasync: {len(took):,} in {seconds:g} s, p50 {at(0.5):.2f} ms, p99 {at(0.99):.2f} ms, "
        f"max {ranked[-1]:.1f} ms; {len(slow)} over 10 ms, {sum(slow):.0f} ms in all"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dir", type=Path, help="where the SQLite file goes (a temporary directory)")
    p.add_argument(
        "--disk-seconds", type=float, default=0, help="also time fdatasync for this long (0)"
    )
    args = p.parse_args()
    print(f"chess.Board(fen): {board_from_fen_us():.0f} us median (reference: 42)")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        rate = sqlite_commits_per_second(Path(tmp))
        print(f"SQLite WAL synchronous=FULL: {rate:,.0f} commits/s (reference: 6,118)")
        if args.disk_seconds > 0:
            print(_disk_report(fdatasync_ms(Path(tmp), args.disk_seconds), args.disk_seconds))


if __name__ == "__main__":
    main()
