"""The phases of a ``bench.load`` run: log the players in, pair them, let the pairs play
through the warm-up and the measured window, then stop them."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from typing import Any

from ajedrez.client.errors import ClientError
from bench.host import CpuSpan
from bench.load_results import build_results
from bench.players import Control, Pace, Pair, Player, Settings, make_scripts
from bench.report import log
from bench.seed import PASSWORD
from bench.server_proc import PySpy, Watcher
from bench.stats import Recorder


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
) -> CpuSpan:
    """Warm up, measure, stop; returns the measured window."""
    tasks = [asyncio.create_task(pair.run()) for pair in pairs]
    recorder.phase = "warmup"
    await _sleep_or_done(args.warmup, tasks)
    window = CpuSpan(watcher).open()
    recorder.phase = "measure"
    profiler = _start_profiler(args, watcher)
    if args.moves_per_game:
        await asyncio.gather(*tasks)
    else:
        await _sleep_or_done(args.duration, tasks)
    recorder.phase = "drain"
    window.close()
    control.stop.set()
    _, pending = await asyncio.wait(tasks, timeout=args.timeout + 10) if tasks else (set(), set())
    for task in pending:
        task.cancel()
    if profiler is not None:
        err = profiler.wait()
        if err:
            log(f"py-spy: {err}")
    return window


async def _sleep_or_done(seconds: float, tasks: list[asyncio.Task[None]]) -> None:
    if seconds > 0 and tasks:
        await asyncio.wait(tasks, timeout=seconds)


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


async def run(
    args: argparse.Namespace,
    host: str,
    port: int,
    watcher: Watcher | None,
    recorder: Recorder | None = None,
) -> dict[str, Any]:
    """The whole run; ``recorder`` (a new one by default) keeps every sample afterwards."""
    recorder = Recorder() if recorder is None else recorder
    control = Control(count=recorder.count)
    started = time.perf_counter()
    max_plies = args.moves_per_game or args.max_plies
    scripts = make_scripts(max(1, args.scripts), max_plies, random.Random(args.seed))
    log(f"played out {len(scripts)} random games in {time.perf_counter() - started:.1f} s")
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
        time_control=args.time_control,
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
    log(f"logged in {2 * len(ready)}/{len(players)} players in {login_seconds:.1f} s")
    window = await run_games(args, ready, control, recorder, watcher)
    await asyncio.gather(*(p.quit() for p in players))
    watch_stop.set()
    await watch_task
    return build_results(args, recorder, window, ready, login_failures, login_seconds, watcher)
