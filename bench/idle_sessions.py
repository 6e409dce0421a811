"""The sessions of ``bench.idle``: the held ones, logged in and left idle, the timed new
logins and pings, and the run of its phases."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ajedrez.client.errors import ClientError, ReplyError
from bench.aclient import AsyncClient
from bench.host import CpuSpan
from bench.idle_memory import Memory, memory_map
from bench.idle_report import line
from bench.report import log
from bench.seed import PASSWORD
from bench.stats import summarize


@dataclass
class Timings:
    """Latencies in seconds and outcome counts of one kind of request."""

    seconds: list[float] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    def ok(self, seconds: float) -> None:
        self.seconds.append(seconds)
        self.outcomes["ok"] += 1

    def failed(self, error: ClientError) -> None:
        self.outcomes[str(error.code) if isinstance(error, ReplyError) else "conn"] += 1
        if len(self.failures) < 5:
            self.failures.append(str(error))

    def summary(self) -> dict[str, Any]:
        return {
            **summarize("", self.seconds, {}).percentiles_ms(),
            "outcomes": dict(sorted(self.outcomes.items())),
            "failures_sample": self.failures,
        }


def cpu_figures(span: CpuSpan) -> dict[str, Any]:
    """Machine and server CPU over a stretch of the run, to tell a busy machine apart."""
    return {
        "seconds": round(span.seconds, 2),
        "machine_cpu_busy_percent": span.machine_busy_percent,
        "server_cpu_percent": span.server_cpu_percent,
        "loadavg_1min_at_end": round(os.getloadavg()[0], 2),
    }


async def bounded(count: int, concurrency: int, job: Callable[[int], Awaitable[None]]) -> None:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(i: int) -> None:
        async with gate:
            await job(i)

    await asyncio.gather(*(one(i) for i in range(count)))


async def login(host: str, port: int, name: str, timeout: float) -> tuple[AsyncClient, float]:
    """A new session logged in as ``name``; and seconds from before connect to PASS reply."""
    start = time.perf_counter()
    client = await AsyncClient.connect(host, port, timeout=timeout)
    try:
        await client.login(name, PASSWORD)
    except BaseException:
        await client.close()
        raise
    return client, time.perf_counter() - start


async def probe(args: argparse.Namespace, host: str, port: int, names: list[str]) -> Timings:
    """``--probe-logins`` new logins (then QUIT), ``--probe-concurrency`` at a time."""
    timings = Timings()

    async def one(i: int) -> None:
        try:
            client, seconds = await login(host, port, names[i % len(names)], args.timeout)
        except ClientError as e:
            timings.failed(e)
            return
        timings.ok(seconds)
        await client.quit()

    await bounded(args.probe_logins, args.probe_concurrency, one)
    return timings


async def ping(clients: Sequence[AsyncClient | None], concurrency: int) -> Timings:
    """``HELP:QUIT`` (answered without the database) on each session; None counts as lost."""
    timings = Timings()

    async def one(i: int) -> None:
        client = clients[i]
        if client is None:
            timings.outcomes["not connected"] += 1
            return
        start = time.perf_counter()
        try:
            await client.request("HELP", "QUIT")
        except ClientError as e:
            timings.failed(e)
            return
        timings.ok(time.perf_counter() - start)

    await bounded(len(clients), concurrency, one)
    return timings


async def run(args: argparse.Namespace, host: str, port: int, memory: Memory) -> dict[str, Any]:
    held_names, probe_names = args.names[: args.connections], args.names[args.connections :]
    memory.take("before any login", 0)
    with CpuSpan(memory.watcher) as span:
        baseline = await probe(args, host, port, probe_names)
    baseline_cpu = cpu_figures(span)
    log(f"baseline probes: {line(baseline.summary())}")
    memory.take("after baseline probes", 0)

    clients: list[AsyncClient | None] = [None] * args.connections
    logins = Timings()
    done = 0

    async def hold(i: int) -> None:
        nonlocal done
        try:
            clients[i], seconds = await login(host, port, held_names[i], args.timeout)
        except ClientError as e:
            logins.failed(e)
            return
        logins.ok(seconds)
        done += 1
        if done % args.sample_every == 0:
            point = memory.take(f"{done} logged in", done)
            log(f"  {done} held, server RSS {point['server_rss_mib']} MiB")

    with CpuSpan(memory.watcher) as span:
        await bounded(args.connections, args.login_concurrency, hold)
    login_cpu = cpu_figures(span)
    login_seconds: float = login_cpu["seconds"]
    log(f"login phase: {done}/{args.connections} in {login_seconds:.1f} s")

    await asyncio.sleep(args.settle)
    memory.take("held, idle", done)
    layout = memory_map(memory.watcher.pid) if memory.watcher is not None else None
    sample_ids = random.Random(1).sample(range(args.connections), min(args.pings, len(clients)))
    pings = await ping([clients[i] for i in sample_ids], 1)
    with CpuSpan(memory.watcher) as span:
        held_probe = await probe(args, host, port, probe_names)
    held_cpu = cpu_figures(span)
    log(f"probes with {done} held: {line(held_probe.summary())}")
    memory.take("after probes", done)
    alive = await ping(clients, 64)
    memory.take("after alive check", done)

    await asyncio.gather(*(c.quit() for c in clients if c is not None))
    await asyncio.sleep(2.0)
    memory.take("after closing all", 0)
    return {
        "held_logged_in": done,
        "login_phase": {
            "seconds": login_seconds,
            "logins_per_second": round(done / login_seconds, 1) if login_seconds else None,
            "login": logins.summary(),
            "cpu": login_cpu,
        },
        "probe_baseline": {**baseline.summary(), "cpu": baseline_cpu},
        "probe_held": {**held_probe.summary(), "cpu": held_cpu},
        "pings": pings.summary(),
        "alive_check": {**alive.summary(), "alive": alive.outcomes["ok"]},
        "memory": memory.points,
        "server_memory_map_held_mib": layout,
    }
