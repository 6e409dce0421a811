"""Bulk-seed a database with many games and their moves, for the scale benchmark.

    .venv/bin/python -m bench.seed_games --database-url sqlite:////tmp/big.sqlite3 \\
        --games 1000000 --meta bench/out/big.seed.json

Flow:

1. **Schema**: ``ajedrez.store.migrate.upgrade`` brings the (empty) database to head,
   the only way the schema is ever created. A database that already holds users or games
   is refused.
2. **Templates**, **users**, **probe games** and **bulk games** are decided in Python
   (``bench/seed_games_generator.py``): every game is one of ``--templates`` random
   python-chess games; the 100 probe games of the 20 probe users are the same in every
   database whatever ``--games``.
3. **Writing** (``bench/seed_games_writers.py``): users and the templates first, then the
   bulk games ``--chunk`` at a time, each chunk's moves expanded inside the database in
   the same transaction, then the probe games and the winners' ``users.wins``.
4. ``ANALYZE`` (PostgreSQL: ``VACUUM (ANALYZE)``), then the sizes; the summary (probe
   users and games, timings, sizes) goes to ``--meta`` or stdout as JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import make_url

from ajedrez.domain.passwords import hash_password
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from bench.report import log
from bench.seed import PASSWORD, user_names
from bench.seed_games_generator import (
    PROBE_GAMES_PER_USER,
    PROBE_PREFIX,
    bulk_games,
    credit_wins,
    make_plan,
    probe_games,
    template_rows,
    user_rows,
)
from bench.seed_games_writers import open_writer


def seed(args: argparse.Namespace) -> dict[str, Any]:
    now = int(time.time())
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    db = Database(args.database_url)
    try:
        upgrade(db)
    finally:
        db.dispose()
    timings["migrate_s"] = time.perf_counter() - t0

    start = time.perf_counter()
    plan = make_plan(args, now)
    timings["templates_s"] = time.perf_counter() - start

    writer = open_writer(args.database_url)
    try:
        writer.check_empty()
        writer.begin()
        start = time.perf_counter()
        writer.users(user_rows(plan, hash_password(PASSWORD)))
        writer.templates(template_rows(plan.templates))
        writer.commit()
        timings["users_templates_s"] = time.perf_counter() - start

        start = time.perf_counter()
        rng = random.Random(args.seed + 3_000_017)
        active_pairs: set[tuple[int, int]] = set()
        wins: Counter[int] = Counter()
        moves = 0
        games_s = moves_s = 0.0
        first = 1
        while first <= plan.games:
            last = min(plan.games, first + args.chunk - 1)
            t1 = time.perf_counter()
            rows, links = bulk_games(plan, first, last, rng, active_pairs)
            credit_wins(wins, rows)
            writer.games(rows, links)
            t2 = time.perf_counter()
            moves += writer.expand_moves(first, last)
            writer.commit()
            t3 = time.perf_counter()
            games_s += t2 - t1
            moves_s += t3 - t2
            elapsed = t3 - start
            log(
                f"games {last:,}/{plan.games:,}, moves {moves:,}: {elapsed:.0f} s "
                f"({moves / elapsed:,.0f} moves/s)"
            )
            first = last + 1
        probe_first = plan.games + 1
        rows, links = probe_games(plan, probe_first)
        credit_wins(wins, rows)
        writer.games(rows, links)
        moves += writer.expand_moves(probe_first, probe_first + len(rows) - 1)
        writer.wins(wins)
        writer.commit()
        timings["games_s"] = games_s
        timings["games_and_moves_s"] = time.perf_counter() - start
        timings["moves_insert_s"] = moves_s
        timings.update(writer.finish(not args.no_analyze))
        timings["total_s"] = time.perf_counter() - t0
        size = writer.size()
    finally:
        writer.close()

    url = make_url(args.database_url)
    probe = [
        {
            "id": r[0],
            "white": r[1],
            "black": r[2],
            "status": r[5],
            "plies": r[9] - 1,
            "changed_at": r[15],
        }
        for r in rows
    ]
    return {
        "database_url": url.render_as_string(hide_password=True),
        "seeded_at": now,
        "seed": args.seed,
        "games": plan.games + len(rows),
        "bulk_games": plan.games,
        "bulk_active_games": len(active_pairs),
        "moves": moves,
        "users": plan.users,
        "templates": plan.pool,
        "probe": {
            "prefix": PROBE_PREFIX,
            "users": user_names(PROBE_PREFIX, plan.probe_users),
            "first_user_id": plan.probe_first_id,
            "password": PASSWORD,
            "games": probe,
        },
        "timings_s": {k: round(v, 2) for k, v in timings.items()},
        "size": size,
        "analyzed": not args.no_analyze,
        "command": " ".join(["python", "-m", "bench.seed_games", *sys.argv[1:]]),
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.seed_games", description=__doc__.split("\n")[0]
    )
    p.add_argument("--database-url", required=True, help="an empty (or new SQLite) database")
    p.add_argument("--games", type=int, required=True, help="bulk games (the probe's come on top)")
    p.add_argument("--users", type=int, default=20_000, help="bulk users (20000)")
    p.add_argument("--probe-users", type=int, default=20, help="probe users, > 10 (20)")
    p.add_argument("--templates", type=int, default=2_000, help="distinct random games (2000)")
    p.add_argument("--min-plies", type=int, default=10, help="shortest template (10)")
    p.add_argument("--max-plies", type=int, default=70, help="longest template (70)")
    p.add_argument("--active-share", type=float, default=0.10, help="active bulk games (0.10)")
    p.add_argument("--chunk", type=int, default=50_000, help="games per transaction (50000)")
    p.add_argument("--seed", type=int, default=1, help="random seed (1)")
    p.add_argument("--no-analyze", action="store_true", help="skip ANALYZE at the end")
    p.add_argument(
        "--meta",
        type=Path,
        help="write the summary (probe users, games) as JSON (say bench/out/NAME.seed.json)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.probe_users <= PROBE_GAMES_PER_USER:
        raise SystemExit(f"--probe-users must exceed {PROBE_GAMES_PER_USER}")
    if args.users < 2:
        raise SystemExit("--users must be at least 2")
    meta = seed(args)
    t = meta["timings_s"]
    log(
        f"seeded {meta['games']:,} games, {meta['moves']:,} moves, {meta['users']:,}+"
        f"{len(meta['probe']['users'])} users in {t['total_s']:.0f} s; size {meta['size']}"
    )
    text = json.dumps(meta, indent=2) + "\n"
    if args.meta:
        args.meta.parent.mkdir(parents=True, exist_ok=True)
        args.meta.write_text(text)
        log(f"wrote {args.meta}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
