"""The scheduler at scale: how long after its deadline a game ends, among many stored games.

Seeds a database with ``--games`` games (1,000,000): ``--clocked`` (100,000) of them
active with a running clock, the rest finished without one. ``--due`` (2,000) of the
clocked games have deadlines spread evenly over ``--window`` seconds (60) that start
``--lead`` seconds (20) after the seeding ends (set then, in one transaction); the other
clocked games are due a day later. Then a server is started (``--flag-grace 0``, its own
system clock) and left alone: nobody connects. The report gives, for every due game, the
delay from its deadline to the log line that says it ended (written after the commit),
and checks that each game ended exactly once.

    python -m bench.scheduler --database-url sqlite:////tmp/s.sqlite3 --json bench/out/s.json

The database must be empty or new; the schema is created (``upgrade``) before seeding.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import chess
from sqlalchemy import bindparam, create_engine, insert, update

from ajedrez.domain.fen import position_fen
from ajedrez.domain.timecontrol import DAY_MS
from ajedrez.domain.values import game_name as format_partida
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from ajedrez.store.models import Game
from bench.seed import seed_users, user_names
from bench.server_proc import ServerProcess
from bench.stats import percentile

CHUNK = 10_000
ENDED = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) .* (P\d{7}) ended on time", re.M)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.scheduler", description=__doc__.split("\n")[0]
    )
    p.add_argument("--database-url", required=True, help="an empty database")
    p.add_argument("--games", type=int, default=1_000_000, help="games stored (1000000)")
    p.add_argument("--clocked", type=int, default=100_000, help="of them running clocks (100000)")
    p.add_argument("--due", type=int, default=2000, help="clocks that run out in the window (2000)")
    p.add_argument("--window", type=float, default=60.0, help="seconds the deadlines span (60)")
    p.add_argument("--lead", type=float, default=20.0, help="seconds before the first (20)")
    p.add_argument("--users", type=int, default=1000, help="accounts the games are between")
    p.add_argument("--server-arg", action="append", default=[], help="passed to the server")
    p.add_argument("--json", type=Path, help="write the figures here (bench/out/...)")
    return p


def seed(url: str, args: argparse.Namespace) -> list[int]:
    """Insert the games, every clock due a day from now; returns the ids of the games
    whose deadlines ``place_window`` then moves into the window."""
    names = user_names(f"s{random.randrange(16**4):04x}_", args.users)
    seed_users(url, names)
    board = chess.Board()
    for uci in ("e2e4", "e7e5"):
        board.push_uci(uci)
    fen = position_fen(board)
    engine = create_engine(url)
    pairs = [(a, b) for a in range(1, args.users + 1) for b in range(a + 1, args.users + 1)]
    if len(pairs) < args.clocked:
        raise SystemExit(f"{args.users} users make {len(pairs)} pairs: fewer than --clocked")
    with engine.connect() as conn:
        first_user = conn.exec_driver_sql("SELECT min(id) FROM users").scalar_one() - 1
    random.shuffle(pairs)
    due: list[int] = []
    now = int(time.time())
    later_ms = now * 1000 + DAY_MS
    rows: list[dict[str, Any]] = []
    next_id = 1
    for i in range(args.games):
        lo, hi = pairs[i % len(pairs)]
        clocked = i < args.clocked
        row: dict[str, Any] = {
            "id": next_id,
            "white_id": first_user + lo,
            "black_id": first_user + hi,
            "user_lo": first_user + lo,
            "user_hi": first_user + hi,
            "status": 0 if clocked else 2,
            "winner": 0 if clocked else 3,
            "req_white": 0,
            "req_black": 0,
            "next_ply": 3,
            "fen": fen,
            "created_at": now,
            "changed_at": now,
            "finished_at": None if clocked else now,
            "end_reason": None if clocked else "agreement",
        }
        if clocked:
            deadline = later_ms
            if i < args.due:
                due.append(next_id)
            row |= {
                "tc_initial_ms": DAY_MS,
                "tc_increment_ms": DAY_MS,
                "tc_cap_ms": DAY_MS,
                "white_ms": DAY_MS,
                "black_ms": DAY_MS,
                "clock_since_ms": deadline - DAY_MS,
                "deadline_ms": deadline,
            }
        rows.append(row)
        next_id += 1
        if len(rows) == CHUNK:
            _insert(engine, rows)
            rows = []
    if rows:
        _insert(engine, rows)
    engine.dispose()
    return due


def place_window(url: str, due: list[int], first_ms: int, window: float) -> dict[int, int]:
    """Spread the deadlines of ``due`` evenly over ``window`` seconds from ``first_ms``;
    returns each game's deadline (ms), by id."""
    step = window * 1000 / max(1, len(due))
    deadlines = {gid: first_ms + round(i * step) for i, gid in enumerate(due)}
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            update(Game)
            .where(Game.id == bindparam("gid"))
            .values(deadline_ms=bindparam("d"), clock_since_ms=bindparam("d") - DAY_MS),
            [{"gid": gid, "d": d} for gid, d in deadlines.items()],
        )
    engine.dispose()
    return deadlines


def _insert(engine: Any, rows: list[dict[str, Any]]) -> None:
    keys = set().union(*(r.keys() for r in rows))
    full = [{k: r.get(k) for k in keys} for r in rows]
    with engine.begin() as conn:
        conn.execute(insert(Game), full)


def ended_at(log_text: str) -> dict[str, list[float]]:
    """When each game's "ended on time" line was written (seconds since 1970), by game id."""
    out: dict[str, list[float]] = {}
    for stamp, millis, pid in ENDED.findall(log_text):
        moment = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").timestamp() + int(millis) / 1000
        out.setdefault(pid, []).append(moment)
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    db = Database(args.database_url)
    upgrade(db)
    db.dispose()
    started = time.monotonic()
    due_ids = seed(args.database_url, args)
    seeded = time.monotonic() - started
    print(f"seeded {args.games} games ({args.clocked} clocked) in {seeded:.0f} s", file=sys.stderr)
    first_deadline_ms = int((time.time() + args.lead) * 1000)
    due = place_window(args.database_url, due_ids, first_deadline_ms, args.window)
    log_path = Path(tempfile.mkstemp(prefix="sched-", suffix=".log")[1])
    server = ServerProcess(
        args.database_url,
        ["--flag-grace", "0", *args.server_arg],
        source_dir=None,
        log_path=log_path,
    )
    server.start()
    try:
        end = first_deadline_ms / 1000 + args.window + 5
        while time.time() < end:
            time.sleep(1.0)  # the benchmark waits for the window to pass; the server works
    finally:
        server.stop()
    found = ended_at(log_path.read_text(errors="replace"))
    delays = sorted(
        (found[format_partida(gid)][0] - deadline / 1000) * 1000
        for gid, deadline in due.items()
        if format_partida(gid) in found
    )
    twice = [pid for pid, times in found.items() if len(times) > 1]
    report = {
        "database": args.database_url.split(":", 1)[0],
        "games": args.games,
        "clocked": args.clocked,
        "due": len(due),
        "ended": len(delays),
        "ended_twice": len(twice),
        "ended_not_due": len(set(found) - {format_partida(g) for g in due}),
        "delay_ms": {
            "p50": round(percentile(delays, 50), 1),
            "p99": round(percentile(delays, 99), 1),
            "max": round(delays[-1], 1) if delays else None,
        },
        "log": str(log_path),
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if len(delays) == len(due) and not twice else 1


if __name__ == "__main__":
    sys.exit(main())
