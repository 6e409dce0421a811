"""The load generator: many players playing real games against one Ajedrez server.

    .venv/bin/python -m bench.load --start-server --database-url sqlite:////tmp/b.sqlite3 \\
        --clients 100 --duration 30 --json bench/out/b.json

Flow: seed 2 accounts per game straight into the database (one shared password hash);
log every player in (connect, USER, PASS); start the pairs (JUEG, TRAN, ACEP, then moves,
see :mod:`bench.players`); after ``--warmup`` seconds measure for ``--duration`` seconds
(or, with ``--moves-per-game``, until every pair has played its one game); stop the
players, QUIT, print the table and optionally write JSON. See ``bench/README.md``.

By default the players move as fast as the server answers (closed loop: the latencies
are then queueing at the server's limit). ``--rate R`` paces them instead: R moves/s
offered over all games, each game moving on its own schedule (see :class:`bench.players.Pace`).
"""

from __future__ import annotations

import argparse
import math
import secrets
import sys
from pathlib import Path
from typing import Any

from ajedrez.server import loops
from bench.host import machine
from bench.load_phases import run
from bench.report import (
    command_line,
    database_fields,
    log,
    render_table,
    server_fields,
    utc_now,
    write_json,
)
from bench.seed import seed_users, user_names
from bench.server_proc import ServerProcess, Watcher, start_or_attach, stop_server, with_defaults


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.split("\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--server", metavar="HOST:PORT", help="a server that is running already")
    where.add_argument(
        "--start-server",
        action="store_true",
        help="start `python -m ajedrez` on a free port against --database-url, stop it after",
    )
    p.add_argument(
        "--database-url",
        required=True,
        help="the server's database, used to seed the accounts (and by --start-server)",
    )
    p.add_argument("--clients", type=int, default=10, help="player connections (even; 10)")
    span = p.add_mutually_exclusive_group()
    span.add_argument("--duration", type=float, default=30.0, help="measured seconds (30)")
    span.add_argument(
        "--moves-per-game",
        type=int,
        help="instead of --duration: every pair plays one game of at most this many plies",
    )
    p.add_argument(
        "--warmup", type=float, help="seconds of play before measuring (3; 0 with --moves-per-game)"
    )
    p.add_argument(
        "--poll-interval",
        type=float,
        default=0.05,
        help="waiting player's sleep between polls, seconds (0.05)",
    )
    p.add_argument(
        "--poll-command",
        choices=["stat", "spar"],
        default="stat",
        help="how a waiting player polls: STAT then SPAR, or SPAR alone (stat)",
    )
    p.add_argument(
        "--wait",
        choices=["poll", "notify"],
        default="poll",
        help="how a waiting player learns its turn: polling (--poll-command), or notify: "
        "woken by its opponent's task, as by a push notification, then one SPAR (poll)",
    )
    p.add_argument(
        "--rate",
        type=float,
        metavar="MOVES_PER_SECOND",
        help="offer this many moves/s over all games: each game moves every games/rate "
        "seconds from a random phase (default: as fast as the server answers)",
    )
    p.add_argument(
        "--max-plies",
        type=int,
        default=200,
        help="a game still running at this ply is resigned (200)",
    )
    p.add_argument(
        "--time-control",
        metavar="CONTROL",
        help="every game with this time control (JUEG:<user>:<control>: 3d, 10m...); "
        "default: none sent, no clock",
    )
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a reply (30)")
    p.add_argument(
        "--login-concurrency",
        type=int,
        default=50,
        help="logins in flight at once during the login phase (50)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed of the move choices (1)")
    p.add_argument(
        "--scripts",
        type=int,
        default=100,
        help="random games played out before the run, which the pairs then play (100)",
    )
    p.add_argument("--user-prefix", help="account name prefix (default: random per run)")
    p.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="also write every figure as JSON (say bench/out/NAME.json: git ignores bench/out/)",
    )
    p.add_argument("--label", default="", help="free text stored in the JSON scenario")
    server = p.add_argument_group("with --start-server")
    server.add_argument("--max-connections", type=int, help="passed to the server")
    server.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="another server argument, e.g. --server-arg=--log-level=WARNING",
    )
    server.add_argument(
        "--server-source",
        type=Path,
        metavar="DIR",
        help="run the server from this source tree (default: the installed one)",
    )
    server.add_argument("--server-log", type=Path, help="the server's log file (a temp file)")
    p.add_argument("--server-pid", type=int, help="with --server: watch this pid's RSS and CPU")
    p.add_argument(
        "--py-spy",
        type=Path,
        metavar="OUT",
        help="profile the server with py-spy over the window (.svg or raw stacks; say bench/out/)",
    )
    p.add_argument("--py-spy-gil", action="store_true", help="py-spy: only the GIL holder")
    return p


def scenario(
    args: argparse.Namespace, server: ServerProcess | None, address: str
) -> dict[str, Any]:
    return {
        "label": args.label,
        "clients": args.clients,
        "games_at_once": args.clients // 2,
        **database_fields(args.database_url),
        "server": server_fields(server, address, args.server_source),
        "duration": None if args.moves_per_game else args.duration,
        "moves_per_game": args.moves_per_game,
        "warmup": args.warmup,
        "poll_interval": args.poll_interval,
        "poll_command": args.poll_command,
        "time_control": args.time_control,
        "wait": args.wait,
        "rate": args.rate,  # offered moves/s over all games; None: as fast as possible
        "max_plies": args.moves_per_game or args.max_plies,
        "login_concurrency": args.login_concurrency,
        "seed": args.seed,
        "scripts": args.scripts,
        "load_generator_event_loop": loops.default(),
        "machine": machine(),
        "date": utc_now(),
        "command": command_line("bench.load"),
    }


def server_extra_args(args: argparse.Namespace) -> list[str]:
    extra = list(args.server_arg)
    if args.max_connections is not None:
        extra += ["--max-connections", str(args.max_connections)]
    # Every player connects from this one address; lift the per-address cap above them.
    return with_defaults(extra, [("--max-connections-per-address", str(args.clients + 10))])


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.clients < 2 or args.clients % 2:
        print("--clients must be an even number >= 2", file=sys.stderr)
        return 2
    if args.rate is not None and not (math.isfinite(args.rate) and args.rate > 0):
        print("--rate must be a number of moves per second > 0", file=sys.stderr)
        return 2
    if args.warmup is None:
        args.warmup = 0.0 if args.moves_per_game else 3.0
    prefix = args.user_prefix or f"b{secrets.token_hex(3)}_"
    args.names = user_names(prefix, args.clients)
    server: ServerProcess | None = None
    watcher: Watcher | None = None
    try:
        server, host, port, watcher = start_or_attach(
            args.database_url,
            server_extra_args(args),
            address=args.server,
            pid=args.server_pid,
            source_dir=args.server_source,
            log_path=args.server_log,
            log_prefix="ajedrez-bench-",
        )
        seconds = seed_users(args.database_url, args.names)
        log(f"seeded {len(args.names)} accounts in {seconds:.1f} s")
        # The load generator shares the machine's two cores with the server: the C loop
        # leaves it more of them.
        results = loops.run(run(args, host, port, watcher), loops.default())
    finally:
        stop_server(server, watcher)
    report = {
        "scenario": scenario(args, server, f"{host}:{port}"),
        "results": results,
    }
    if server is not None:
        report["results"]["server"]["exit_code"] = server.exit_code
        report["results"]["server"]["log"] = str(server.log_path)
    print(render_table(report))
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
