"""A client process of ``bench.stream``: it holds its share of the connections and runs
the phases the parent asks for over a pipe, one at a time, each answered with a dict of
its figures.

Phases: ``login`` (connect from its source address, USER, PASS; bounded concurrency),
``games`` (each of its pairs starts a game), ``observe`` (its observers OBSV the watched
game), ``even`` (every connection sends EVEN and waits for its 601), ``play`` (the pairs
play through the warm-up and the window, the event loop's lag sampled meanwhile),
``quit``. The parent (:mod:`bench.stream`) starts one of these with ``--client-processes
1``, or K of them, the connections dealt out pair by pair.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ajedrez.client.errors import ClientError
from ajedrez.server import loops
from bench.players import Pace, Script
from bench.report import log
from bench.stream_client import Conn, EventHandler, connect, error_code
from bench.stream_games import (
    Pair,
    PlaySettings,
    Tally,
    Watched,
    Window,
    idle_event,
    observer_event,
    player_event,
)

CHALLENGER, ACCEPTOR, OBSERVER, IDLE = "challenger", "acceptor", "observer", "idle"
LAG_TICK = 0.02  # seconds between the event loop's lag samples
PROGRESS_EVERY = 1000  # logins between two progress lines
LATE_EVENTS = 2.0  # seconds after the window for the events of its last moves


@dataclass(frozen=True)
class Spec:
    """One connection: its account, its role, its server and its source address."""

    index: int
    name: str
    role: str
    server: int  # index in WorkerConfig.servers
    source: str
    pair: int = -1  # the pair of a challenger or acceptor


@dataclass(frozen=True)
class WorkerConfig:
    worker: int
    servers: list[tuple[str, int]]
    specs: list[Spec]
    settings: PlaySettings
    login_concurrency: int
    setup_concurrency: int
    scripts: list[Script]
    watched_pair: int | None  # the pair whose game the observers watch
    watched_script: Script | None
    pace_interval: float | None  # seconds between a pair's moves; None: as fast as answered
    seed: int


async def bounded(
    items: Sequence[Any], concurrency: int, job: Callable[[Any], Awaitable[None]]
) -> None:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(item: Any) -> None:
        async with gate:
            await job(item)

    await asyncio.gather(*(one(item) for item in items))


class Worker:
    def __init__(self, cfg: WorkerConfig) -> None:
        self.cfg = cfg
        self.tally = Tally()
        self.watched = Watched(self.tally)
        self.conns: dict[int, Conn] = {}
        phases = random.Random(f"pace:{cfg.seed}")
        self.pairs: dict[int, Pair] = {}
        for spec in cfg.specs:
            if spec.role != CHALLENGER:
                continue
            pace = None
            if cfg.pace_interval:
                pace = Pace(cfg.pace_interval, phases.random() * cfg.pace_interval)
            watched = spec.pair == cfg.watched_pair
            self.pairs[spec.pair] = Pair(
                spec.pair,
                cfg.scripts,
                cfg.watched_script if watched else None,
                pace,
                cfg.settings,
                self.tally,
                random.Random(cfg.seed * 1_000_003 + spec.pair),
            )

    def _handler(self, spec: Spec) -> tuple[EventHandler, Any]:
        if spec.role in (CHALLENGER, ACCEPTOR):
            return player_event, self.pairs[spec.pair]
        if spec.role == OBSERVER:
            return observer_event, self.watched
        return idle_event, self.tally

    # -- phases ------------------------------------------------------------------------------

    async def login(self) -> dict[str, Any]:
        cfg = self.cfg
        seconds: list[float] = []
        failed: Counter[str] = Counter()
        timeout = cfg.settings.timeout

        async def one(spec: Spec) -> None:
            host, port = cfg.servers[spec.server]
            handler, owner = self._handler(spec)
            start = time.perf_counter()
            conn: Conn | None = None
            try:
                conn = await connect(
                    host, port, source=spec.source, timeout=timeout, on_event=handler, owner=owner
                )
                await conn.login(spec.name, cfg.settings.password, timeout)
            except ClientError as e:
                failed[error_code(e)] += 1
                self.tally.failed(f"login {spec.name} from {spec.source}: {e}")
                if conn is not None:
                    conn.quit()
                return
            seconds.append(time.perf_counter() - start)
            self.conns[spec.index] = conn
            if len(seconds) % PROGRESS_EVERY == 0:
                log(f"client process {cfg.worker}: {len(seconds)}/{len(cfg.specs)} logged in")
            if spec.pair >= 0:
                self.pairs[spec.pair].conns[0 if spec.role == CHALLENGER else 1] = conn

        start = time.perf_counter()
        await bounded(cfg.specs, cfg.login_concurrency, one)
        return {
            "seconds": time.perf_counter() - start,
            "ok": len(seconds),
            "failed": dict(failed),
            "login_seconds": seconds,
            "failures_sample": self.tally.failures[:5],
        }

    async def games(self) -> dict[str, Any]:
        failed: Counter[str] = Counter()

        async def one(pair: Pair) -> None:
            try:
                await pair.new_game()
            except ClientError as e:
                failed[error_code(e)] += 1
                pair.failed = True
                self.tally.failed(f"pair {pair.index}: no game: {e}")

        ready = [p for p in self.pairs.values() if p.ready]
        await bounded(ready, self.cfg.setup_concurrency, one)
        watched = (
            self.pairs.get(self.cfg.watched_pair) if self.cfg.watched_pair is not None else None
        )
        return {
            "games": sum(1 for p in ready if p.game is not None),
            "pairs_not_logged_in": len(self.pairs) - len(ready),
            "failed": dict(failed),
            "watched_game": watched.game if watched is not None else None,
        }

    async def observe(self, game: str) -> dict[str, Any]:
        self.watched.game = game
        return await self._each(OBSERVER, f"OBSV:{game}", 220)

    async def even(self) -> dict[str, Any]:
        """EVEN (from now on) on every connection, then wait for each one's 601."""
        result = await self._each(None, "EVEN", 219)
        deadline = time.monotonic() + self.cfg.settings.timeout
        while self.tally.all_counts["601"] < result["ok"] and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        result["caught_up"] = self.tally.all_counts["601"]
        return result

    async def _each(self, role: str | None, line: str, expect: int) -> dict[str, Any]:
        """``line`` on every connection of ``role`` (None: all); counts of the answers."""
        answers: Counter[str] = Counter()
        timeout = self.cfg.settings.timeout
        specs = [s for s in self.cfg.specs if role is None or s.role == role]

        async def one(spec: Spec) -> None:
            conn = self.conns.get(spec.index)
            if conn is None:
                answers["not logged in"] += 1
                return
            try:
                answer = await conn.request(line, timeout)
            except ClientError as e:
                answers[error_code(e)] += 1
                return
            answers[str(answer.code)] += 1
            if answer.code != expect:
                self.tally.failed(f"{line} as {spec.name}: {answer.code} {answer.text}")

        start = time.perf_counter()
        await bounded(specs, self.cfg.setup_concurrency, one)
        return {
            "seconds": time.perf_counter() - start,
            "ok": answers[str(expect)],
            "answers": dict(answers),
            "failures_sample": self.tally.failures[-5:],
        }

    async def play(self, start: float, measure: float, end: float) -> dict[str, Any]:
        window = Window(start, measure, end)
        self.tally.window = window
        self.watched.moves.clear()
        lags: list[float] = []
        lag_task = asyncio.create_task(self._lag(window, lags))
        pairs = [p for p in self.pairs.values() if p.ready and not p.failed]
        # No garbage collection while playing: a full collection among ten thousand
        # connections stops this loop for tens of milliseconds, which would be stamped
        # on the replies that arrive meanwhile. What the window makes is freed by
        # reference counting; the rest waits for the collection after it.
        gc.collect()
        gc.freeze()
        gc.disable()
        try:
            tasks = [asyncio.create_task(p.run(window)) for p in pairs]
            grace = end - time.time() + 2 * self.cfg.settings.timeout
            if tasks:
                _, pending = await asyncio.wait(tasks, timeout=max(grace, 1.0))
                for task in pending:
                    task.cancel()
            # A process with no pair (observers, idle streams only) still takes events
            # until the window closes, and those of the last moves a little after.
            await asyncio.sleep(max(0.0, end + LATE_EVENTS - time.time()))
        finally:
            gc.enable()
            gc.unfreeze()
        lag_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await lag_task
        observed = {
            ply: (ms, walls)
            for ply, (ms, walls) in self.watched.moves.items()
            if window.holds(ms / 1000)
        }
        watched = (
            self.pairs.get(self.cfg.watched_pair) if self.cfg.watched_pair is not None else None
        )
        return {
            "rows": [row for p in pairs for row in p.rows],
            "counts": dict(self.tally.counts),
            "all_counts": dict(self.tally.all_counts),
            "beats": self.tally.beats,
            "lags": lags,
            "observed": observed,
            "watched_games": watched.games if watched is not None else [],
            "pairs_playing": len(pairs),
            "pairs_failed": sum(1 for p in pairs if p.failed),
            "failures_sample": self.tally.failures[:10],
            "connections_open": sum(1 for c in self.conns.values() if not c.closed),
        }

    async def _lag(self, window: Window, lags: list[float]) -> None:
        """How late the loop wakes a sleeper, every LAG_TICK in the window: the time this
        process keeps a delivered reply waiting before it stamps it."""
        while True:  # perf_counter: uvloop's loop.time() counts whole milliseconds
            before = time.perf_counter()
            await asyncio.sleep(LAG_TICK)
            if window.holds(time.time()):
                lags.append(max(0.0, time.perf_counter() - before - LAG_TICK))

    async def quit(self) -> dict[str, Any]:
        alive = sum(1 for c in self.conns.values() if not c.closed)
        for conn in self.conns.values():
            conn.quit()
        await asyncio.sleep(0.2)
        return {"alive_at_quit": alive, "rss_kib": own_rss_kib()}

    async def rss(self) -> dict[str, Any]:
        return {
            "rss_kib": own_rss_kib(),
            "open": sum(1 for c in self.conns.values() if not c.closed),
        }


def own_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def serve(cfg: WorkerConfig, pipe: Connection) -> None:
    """Run the phases the parent sends, ``(name, args)``, until ``quit``."""
    worker = Worker(cfg)
    loop = asyncio.get_running_loop()
    while True:
        name, args = await loop.run_in_executor(None, pipe.recv)
        try:
            result = await getattr(worker, name)(*args)
        except Exception as e:  # reported to the parent, which stops the run
            result = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        pipe.send(result)
        if name == "quit":
            return


def main(cfg: WorkerConfig, pipe: Connection) -> None:
    """A client process's entry point (multiprocessing, fork)."""
    loops.run(serve(cfg, pipe), loops.default())
