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
offered over all games, each game moving on its own schedule (see :class:`Pace`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import resource
import secrets
import shlex
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import make_url

from ajedrez.client.errors import ClientError
from ajedrez.server import loops
from bench.host import cpu_ticks, machine
from bench.players import Control, Pace, Pair, Player, Settings, make_scripts
from bench.report import render_table, write_json
from bench.seed import PASSWORD, seed_users, user_names
from bench.server_proc import PySpy, ServerProcess, Watcher, start_or_attach
from bench.stats import Recorder


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


@dataclass
class Window:
    start: float = 0.0
    end: float = 0.0
    own_cpu: float = 0.0  # CPU seconds at the start, then the share of one core used
    server_cpu: float | None = None  # likewise, for the server process
    machine_busy: float = 0.0  # the share of every core's time spent busy
    ticks: tuple[int, int] = (0, 0)  # /proc/stat (busy, total) at the start


def own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- phases ------------------------------------------------------------------------------


async def login_all(players: list[Player], recorder: Recorder, concurrency: int) -> list[str]:
    """Log every player in, ``concurrency`` at a time; returns the failures."""
    gate = asyncio.Semaphore(concurrency)
    failures: list[str] = []

    async def one(player: Player) -> None:
        async with gate:
            try:
                await player.login(recorder)
            except ClientError as e:
                failures.append(f"{player.name}: {e}")
                if player.client is not None:
                    await player.client.close()
                player.client = None

    await asyncio.gather(*(one(p) for p in players))
    return failures


def make_pairs(names: list[str], settings: Settings, control: Control, seed: int) -> list[Pair]:
    pairs = []
    for i in range(0, len(names), 2):
        a, b = names[i], names[i + 1]
        pairs.append(
            Pair(
                Player(a, b, settings, control, random.Random(seed * 1_000_003 + i)),
                Player(b, a, settings, control, random.Random(seed * 1_000_003 + i + 1)),
            )
        )
    return pairs


def pace_pairs(pairs: list[Pair], rate: float | None, seed: int) -> None:
    """With ``--rate``: G pairs playing, each moves every G/rate seconds, so together they
    offer ``rate`` moves/s; a random phase per pair keeps them from all moving at once.
    G counts the pairs that logged in, so a failed login does not lower the offered rate."""
    if rate is None or not pairs:
        return
    interval = len(pairs) / rate
    phases = random.Random(f"pace:{seed}")
    for pair in pairs:
        pair.pace_by(Pace(interval, phases.random() * interval))


async def run_games(
    args: argparse.Namespace,
    pairs: list[Pair],
    control: Control,
    recorder: Recorder,
    watcher: Watcher | None,
) -> Window:
    """Warm up, measure, stop; returns the measured window."""
    tasks = [asyncio.create_task(pair.run()) for pair in pairs]
    recorder.phase = "warmup"
    await _sleep_or_done(args.warmup, tasks)
    window = _open_window(watcher)
    recorder.phase = "measure"
    profiler = _start_profiler(args, watcher)
    if args.moves_per_game:
        await asyncio.gather(*tasks)
    else:
        await _sleep_or_done(args.duration, tasks)
    recorder.phase = "drain"
    _close_window(window, watcher)
    control.stop.set()
    _, pending = await asyncio.wait(tasks, timeout=args.timeout + 10) if tasks else (set(), set())
    for task in pending:
        task.cancel()
    if profiler is not None:
        err = profiler.wait()
        if err:
            print(f"py-spy: {err}", file=sys.stderr)
    return window


async def _sleep_or_done(seconds: float, tasks: list[asyncio.Task[None]]) -> None:
    if seconds > 0 and tasks:
        await asyncio.wait(tasks, timeout=seconds)


def _open_window(watcher: Watcher | None) -> Window:
    return Window(
        start=time.perf_counter(),
        own_cpu=own_cpu_seconds(),
        server_cpu=_server_cpu(watcher),
        ticks=cpu_ticks(),
    )


def _close_window(window: Window, watcher: Watcher | None) -> None:
    window.end = time.perf_counter()
    elapsed = max(window.end - window.start, 1e-9)
    window.own_cpu = (own_cpu_seconds() - window.own_cpu) / elapsed
    busy0, total0 = window.ticks
    busy1, total1 = cpu_ticks()
    window.machine_busy = (busy1 - busy0) / max(total1 - total0, 1)
    before = window.server_cpu
    after = _server_cpu(watcher)
    window.server_cpu = None if before is None or after is None else (after - before) / elapsed


def _server_cpu(watcher: Watcher | None) -> float | None:
    if watcher is None:
        return None
    now = watcher.poll()
    return None if now is None else now.cpu_seconds


def _start_profiler(args: argparse.Namespace, watcher: Watcher | None) -> PySpy | None:
    if args.py_spy is None or watcher is None:
        return None
    length = args.duration if not args.moves_per_game else 60.0
    profiler = PySpy(watcher.pid, args.py_spy, length, gil_only=args.py_spy_gil)
    profiler.start()
    return profiler


async def watch(watcher: Watcher | None, stop: asyncio.Event) -> None:
    """Sample the server's memory and threads every half second."""
    if watcher is None:
        return
    while not stop.is_set():
        watcher.poll()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.5)


# -- the run -----------------------------------------------------------------------------


async def run(args: argparse.Namespace, host: str, port: int, watcher: Watcher | None) -> dict:
    recorder = Recorder()
    control = Control(count=recorder.count)
    started = time.perf_counter()
    max_plies = args.moves_per_game or args.max_plies
    scripts = make_scripts(max(1, args.scripts), max_plies, random.Random(args.seed))
    print(
        f"played out {len(scripts)} random games in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    settings = Settings(
        host=host,
        port=port,
        password=PASSWORD,
        poll_interval=args.poll_interval,
        poll_command=args.poll_command,
        wait=args.wait,
        max_plies=max_plies,
        timeout=args.timeout,
        one_game=bool(args.moves_per_game),
        scripts=scripts,
    )
    pairs = make_pairs(args.names, settings, control, args.seed)
    watch_stop = asyncio.Event()
    watch_task = asyncio.create_task(watch(watcher, watch_stop))
    login_start = time.perf_counter()
    players = [p for pair in pairs for p in (pair.challenger, pair.acceptor)]
    login_failures = await login_all(players, recorder, args.login_concurrency)
    login_seconds = time.perf_counter() - login_start
    ready = [pr for pr in pairs if pr.challenger.client and pr.acceptor.client]
    pace_pairs(ready, args.rate, args.seed)
    print(
        f"logged in {2 * len(ready)}/{len(players)} players in {login_seconds:.1f} s",
        file=sys.stderr,
    )
    window = await run_games(args, ready, control, recorder, watcher)
    await asyncio.gather(*(p.quit() for p in players))
    watch_stop.set()
    await watch_task
    return build_results(args, recorder, window, ready, login_failures, login_seconds, watcher)


def build_results(
    args: argparse.Namespace,
    recorder: Recorder,
    window: Window,
    pairs: list[Pair],
    login_failures: list[str],
    login_seconds: float,
    watcher: Watcher | None,
) -> dict:
    elapsed = window.end - window.start
    events = recorder.events["measure"]
    expected = {("SPAR", "839")} if args.poll_command == "spar" or args.wait == "notify" else set()
    failures = [f for pair in pairs for f in pair.failures]
    polling = args.wait == "poll" and args.poll_interval > 0
    ceiling = len(pairs) / (args.poll_interval / 2) if polling else None
    return {
        "window_seconds": round(elapsed, 3),
        "moves": events["moves"],
        "moves_per_second": round(events["moves"] / elapsed, 1) if elapsed > 0 else 0.0,
        "poll_bound_moves_per_second": round(ceiling, 1) if ceiling else None,
        "pace": _pace(args.rate, len(pairs), events["paced_late"]),
        "games_started": events["games_started"],
        "game_ends": {k[4:]: v for k, v in sorted(events.items()) if k.startswith("end_")},
        "events_by_phase": {p: dict(sorted(e.items())) for p, e in recorder.events.items()},
        "jgda_refused": events["jgda_refused"],
        "errors": recorder.errors("measure", expected),
        "errors_all_phases": _all_errors(recorder, expected),
        "commands": {s.command: s.as_dict() for s in recorder.summaries("measure")},
        "login": {
            "seconds": round(login_seconds, 2),
            "failed": len(login_failures),
            "failures_sample": login_failures[:5],
            "commands": {s.command: s.as_dict() for s in recorder.summaries("login")},
        },
        "players_failed": sum(recorder.events[p]["players_failed"] for p in recorder.events),
        "player_failures_sample": failures[:5],
        "pairs_playing": len(pairs),
        "load_generator_cpu_percent": round(window.own_cpu * 100, 1),
        "machine_cpu_busy_percent": round(window.machine_busy * 100, 1),
        "other_processes_cpu_percent": _others(window),
        "loadavg_at_end": os.getloadavg()[0],
        "server": None
        if watcher is None
        else {
            **watcher.as_dict(),
            "cpu_percent": None if window.server_cpu is None else round(window.server_cpu * 100, 1),
        },
    }


def _pace(rate: float | None, pairs: int, late: int) -> dict | None:
    """The schedule the pairs followed, and how many moves in the window went out behind
    it (the first ones of each new game, and all of them once the server falls behind)."""
    if rate is None or not pairs:
        return None
    return {
        "offered_moves_per_second": rate,
        "interval_per_game_seconds": round(pairs / rate, 6),
        "moves_late": late,
    }


def _others(window: Window) -> float | None:
    """CPU (percent of one core) used by everything but this process and the server."""
    if window.server_cpu is None:
        return None
    all_cores = window.machine_busy * (os.cpu_count() or 1)
    return round(max(0.0, all_cores - window.server_cpu - window.own_cpu) * 100, 1)


def _all_errors(recorder: Recorder, expected: set[tuple[str, str]]) -> dict[str, dict[str, int]]:
    return {p: e for p in recorder.events if (e := recorder.errors(p, expected))}


def scenario(args: argparse.Namespace, server_args: list[str] | None, address: str) -> dict:
    url = make_url(args.database_url)
    return {
        "label": args.label,
        "clients": args.clients,
        "games_at_once": args.clients // 2,
        "database": url.get_backend_name(),
        "database_url": url.render_as_string(hide_password=True),
        "server": {
            "started_by_bench": bool(args.start_server),
            "address": address,
            "args": server_args,
            "source_dir": str(args.server_source) if args.server_source else None,
        },
        "duration": None if args.moves_per_game else args.duration,
        "moves_per_game": args.moves_per_game,
        "warmup": args.warmup,
        "poll_interval": args.poll_interval,
        "poll_command": args.poll_command,
        "wait": args.wait,
        "rate": args.rate,  # offered moves/s over all games; None: as fast as possible
        "max_plies": args.moves_per_game or args.max_plies,
        "login_concurrency": args.login_concurrency,
        "seed": args.seed,
        "scripts": args.scripts,
        "load_generator_event_loop": loops.default(),
        "machine": machine(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join(["python", "-m", "bench.load", *sys.argv[1:]]),
    }


def server_extra_args(args: argparse.Namespace) -> list[str]:
    extra = list(args.server_arg)
    if args.max_connections is not None:
        extra += ["--max-connections", str(args.max_connections)]
    # Every player connects from this one address; lift the per-address cap above them.
    if not any(a.startswith("--max-connections-per-address") for a in extra):
        extra += ["--max-connections-per-address", str(args.clients + 10)]
    return extra


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
        print(f"seeded {len(args.names)} accounts in {seconds:.1f} s", file=sys.stderr)
        # The load generator shares the machine's two cores with the server: the C loop
        # leaves it more of them.
        results = loops.run(run(args, host, port, watcher), loops.default())
    finally:
        if server is not None:
            if watcher is not None:
                watcher.poll()  # the last VmHWM, before the process is gone
            code = server.stop()
            print(f"server stopped, exit code {code}", file=sys.stderr)
    report = {
        "scenario": scenario(args, server.args[1:] if server else None, f"{host}:{port}"),
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
