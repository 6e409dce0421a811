"""Request latency of PPEN, STAT, SPAR and JGDA, one request at a time, for the scale test.

    .venv/bin/python -m bench.latency --start-server --snapshot \\
        --database-url sqlite:////tmp/big.sqlite3 --samples 2000 --json bench/out/big.json
    .venv/bin/python -m bench.latency --compare bench/out/small.json bench/out/big.json

Meant for a database seeded by ``bench/seed_games.py``, whose probe users
(``probe_00000``...) each have the same 10 games whatever the database's size. Flow:

1. **Server**: ``--start-server`` runs ``python -m ajedrez`` on a free port (see
   :class:`bench.server_proc.ServerProcess`); ``--snapshot [REV]`` first extracts ``git
   archive REV`` (HEAD) into ``/tmp/ajedrez-<commit>`` and runs the server from there, so
   edits to the working tree cannot change the server under test (pass the same REV to
   every run being compared); the commit goes into the JSON.
   ``--server HOST:PORT`` measures a server that is already running instead.
2. **Login and discovery** (not measured): one connection per probe user (USER, PASS);
   ``PPEN:0`` lists its games, ``STAT`` each one (its last change and next ply), ``SPAR:0``
   each active game (replayed into a python-chess board). A user's *recent* fecha is the
   median of its games' last changes, so ``PPEN`` at that fecha lists about half of them.
3. **Reads**: ``--warmup`` rounds, then ``--samples`` rounds; round *i* takes probe user
   *i mod n* and the next of its games, and sends, one after the other, each awaited:
   ``PPEN:0`` (all 10 games), ``PPEN:<recent>``, ``STAT:<game>``, ``SPAR:<game>:0`` (the
   whole ~40-ply game) and ``SPAR:<game>:<last ply - 1>`` (its last move).
4. **Moves**: both players of every active probe game are probe users. Round *i* takes
   active game *i mod m*; the player to move sends ``JGDA`` with a random legal move
   (seeded generator: the same moves on every database). A game that reaches
   ``--max-plies`` (80) is resigned (``REND``) and replaced by a new one between the same
   players (``JUEG``, ``ACEP``) played up to ``--refill-plies`` (40) before its moves count
   again, as is a game that the rules end; so measured moves are plies 41..80 of a game.
   Refill requests are kept apart (phase ``refill``). ``--warmup`` moves come first.
5. Report p50/p95/p99/mean/max per measured request kind, the size of the answers, the
   load average before each phase, the machine's busy share during the measured phases,
   the server's CPU, the commit; ``--json`` writes it all. ``--compare A.json B.json``
   prints B/A ratios.

Nothing runs concurrently: this is latency, not throughput. The figures include the
client's own asyncio overhead (the same on every database).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from bench.host import loadavg, machine
from bench.latency_probe import run
from bench.latency_report import compare, render
from bench.report import (
    command_line,
    database_fields,
    log,
    server_fields,
    utc_now,
    write_json,
)
from bench.seed import PASSWORD
from bench.server_proc import ServerProcess, Watcher, start_or_attach, stop_server
from bench.source import head, make_snapshot


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__.split("\n")[0])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--server", metavar="HOST:PORT", help="a server that is running already")
    where.add_argument(
        "--start-server", action="store_true", help="start `python -m ajedrez` on a free port"
    )
    where.add_argument(
        "--compare", nargs=2, type=Path, metavar=("A.json", "B.json"), help="B/A ratios"
    )
    p.add_argument("--database-url", help="the server's database (required by --start-server)")
    p.add_argument("--samples", type=int, default=2000, help="measured requests per kind (2000)")
    p.add_argument("--warmup", type=int, default=100, help="unmeasured rounds first (100)")
    p.add_argument(
        "--phases",
        type=lambda v: set(v.split(",")),
        default={"reads", "moves"},
        help="what to measure: reads, moves or reads,moves (both)",
    )
    p.add_argument("--max-plies", type=int, default=80, help="resign a probe game here (80)")
    p.add_argument("--refill-plies", type=int, default=40, help="plies of a new game (40)")
    p.add_argument("--probe-prefix", default="probe_", help="probe user prefix (probe_)")
    p.add_argument("--probe-users", type=int, default=20, help="probe users (20)")
    p.add_argument("--password", default=PASSWORD, help="their password")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a reply")
    p.add_argument("--seed", type=int, default=1, help="seed of the move choices (1)")
    p.add_argument("--seed-meta", type=Path, help="bench.seed_games --meta JSON to embed")
    p.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="write every figure as JSON (say bench/out/NAME.json: git ignores bench/out/)",
    )
    p.add_argument("--label", default="", help="free text stored in the JSON")
    server = p.add_argument_group("with --start-server")
    src = server.add_mutually_exclusive_group()
    src.add_argument(
        "--snapshot",
        nargs="?",
        const="HEAD",
        metavar="REV",
        help="run the server from a git archive of REV (HEAD), the same for every run",
    )
    src.add_argument("--server-source", type=Path, metavar="DIR", help="server source tree")
    server.add_argument("--server-arg", action="append", default=[], metavar="ARG")
    server.add_argument("--server-log", type=Path, help="the server's log file (a temp file)")
    p.add_argument("--server-pid", type=int, help="with --server: watch this pid's CPU")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.compare:
        print(compare(*args.compare))
        return 0
    if not (args.server or args.start_server):
        raise SystemExit("one of --server, --start-server or --compare is required")
    if args.start_server and not args.database_url:
        raise SystemExit("--start-server needs --database-url")
    commit: str | None = None
    source = args.server_source
    if args.snapshot:
        source, commit = make_snapshot(args.snapshot)
        log(f"server source: {source} (commit {commit})")
    server: ServerProcess | None = None
    watcher: Watcher | None = None
    started = utc_now()
    load_start = loadavg()
    try:
        server, host, port, watcher = start_or_attach(
            args.database_url,
            args.server_arg,
            address=args.server,
            pid=args.server_pid,
            source_dir=source,
            log_path=args.server_log,
            log_prefix="ajedrez-latency-",
            start_timeout=600,
        )
        results = asyncio.run(run(args, host, port, watcher))
    finally:
        stop_server(server, watcher)
    if watcher is not None:
        results["server"] = watcher.as_dict()
    report = {
        "scenario": {
            "label": args.label,
            **database_fields(args.database_url),
            "samples": args.samples,
            "phases": sorted(args.phases),
            "warmup": args.warmup,
            "max_plies": args.max_plies,
            "refill_plies": args.refill_plies,
            "seed": args.seed,
            "server": {**server_fields(server, f"{host}:{port}", source), "commit": commit},
            "repo_head": head(),
            "loadavg_at_start": load_start,
            "machine": machine(),
            "date": started,
            "command": command_line("bench.latency"),
            "seeding": json.loads(args.seed_meta.read_text()) if args.seed_meta else None,
        },
        "results": results,
    }
    print(render(report))
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
