"""Idle connections: thousands of logged-in sessions held open while new logins are timed.

    .venv/bin/python -m bench.idle --start-server --database-url sqlite:////tmp/idle.sqlite3 \\
        --connections 10000 --json bench/out/idle.json

The target: 10,000 concurrent connections held (idle, logged in) with under 1 GiB resident
memory in the server, while a new login still answers in under 100 ms at p99.

Flow: raise this process's file-descriptor soft limit (a server started here inherits it);
start the server (``--start-server``) with room for every connection and a long idle
timeout; seed ``--connections`` + ``--probe-logins`` accounts straight into the database
(one shared hash); sample the server's memory with nothing connected; time
``--probe-logins`` fresh logins with nothing held (the baseline); open and log in the
``--connections`` held sessions, ``--login-concurrency`` at a time, sampling the server's
RSS every ``--sample-every`` logins; let them sit idle ``--settle`` seconds and sample
again (server and this process); time a cheap command (``HELP:QUIT``, no database) on
``--pings`` of them; time ``--probe-logins`` fresh logins again (connect, USER, PASS, from
just before the connect to the PASS reply, then QUIT); send ``HELP:QUIT`` on every held
session to count those still alive; QUIT them all, sample the server once more, stop it.
The memory the target is about is the server's; this process's own RSS is reported apart.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import secrets
import shlex
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import make_url

from ajedrez.client.errors import ClientError, ReplyError
from bench.aclient import AsyncClient
from bench.host import cpu_ticks, machine
from bench.report import write_json
from bench.seed import PASSWORD, seed_users, user_names
from bench.server_proc import ServerProcess, Watcher, start_or_attach
from bench.stats import percentile

TARGET_RSS_MIB = 1024.0
TARGET_LOGIN_P99_MS = 100.0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.idle", description=__doc__.split("\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--server", metavar="HOST:PORT", help="a server that is running already")
    where.add_argument(
        "--start-server", action="store_true", help="start `python -m ajedrez`, stop it after"
    )
    p.add_argument("--server-pid", type=int, help="with --server: watch this pid's memory")
    p.add_argument("--database-url", required=True, help="the server's database (seeded)")
    p.add_argument("--connections", type=int, default=10000, help="sessions held (10000)")
    p.add_argument("--login-concurrency", type=int, default=8, help="logins at once (8)")
    p.add_argument("--probe-logins", type=int, default=300, help="timed new logins (300)")
    p.add_argument("--probe-concurrency", type=int, default=1, help="probes at once (1)")
    p.add_argument("--pings", type=int, default=100, help="timed HELP on held sessions (100)")
    p.add_argument("--sample-every", type=int, default=1000, help="RSS sample step (1000)")
    p.add_argument("--settle", type=float, default=5.0, help="idle seconds before sampling (5)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for a reply")
    p.add_argument("--user-prefix", help="account name prefix (default: random per run)")
    p.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="also write every figure as JSON (say bench/out/NAME.json: git ignores bench/out/)",
    )
    p.add_argument("--label", default="", help="free text stored in the JSON scenario")
    server = p.add_argument_group("with --start-server")
    server.add_argument(
        "--idle-timeout", type=float, default=3600.0, help="passed to the server (3600)"
    )
    server.add_argument(
        "--server-arg", action="append", default=[], metavar="ARG", help="another server arg"
    )
    server.add_argument("--server-source", type=Path, metavar="DIR", help="server source tree")
    server.add_argument("--server-log", type=Path, help="the server's log file (a temp file)")
    return p


# -- measuring -----------------------------------------------------------------------------


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
        ms = sorted(s * 1000.0 for s in self.seconds)
        return {
            "count": len(ms),
            "p50_ms": round(percentile(ms, 50), 3),
            "p95_ms": round(percentile(ms, 95), 3),
            "p99_ms": round(percentile(ms, 99), 3),
            "max_ms": round(ms[-1], 3) if ms else 0.0,
            "outcomes": dict(sorted(self.outcomes.items())),
            "failures_sample": self.failures,
        }


class Memory:
    """Server and own memory samples, labelled."""

    def __init__(self, watcher: Watcher | None) -> None:
        self.watcher = watcher
        self.points: list[dict[str, Any]] = []

    def take(self, label: str, held: int) -> dict[str, Any]:
        server = self.watcher.poll() if self.watcher is not None else None
        point = {
            "label": label,
            "held": held,
            "server_rss_mib": _mib(server.rss_kib) if server else None,
            "server_hwm_mib": _mib(server.hwm_kib) if server else None,
            "server_threads": server.threads if server else None,
            # Not server_proc.sample: that one adds the children, and the server is ours.
            "client_rss_mib": _mib(_own_rss_kib()),
            "loadavg_1min": round(os.getloadavg()[0], 2),
        }
        self.points.append(point)
        return point

    def find(self, label: str) -> dict[str, Any] | None:
        return next((p for p in self.points if p["label"] == label), None)


def _mib(kib: int) -> float:
    return round(kib / 1024.0, 1)


def _own_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def memory_map(pid: int) -> dict[str, float]:
    """RSS (MiB) of a process and its children by kind of mapping, from /proc/PID/smaps.

    glibc gives each thread that mallocs its own arena: anonymous heaps aligned to 64 MiB,
    which keep freed memory (argon2's 19 MiB per hash, for one) resident.
    """
    totals = dict.fromkeys(("thread_arenas", "main_heap", "other_anonymous", "files"), 0.0)
    children = Path(f"/proc/{pid}/task/{pid}/children")
    pids = [pid] + [int(c) for c in children.read_text().split()] if children.exists() else [pid]
    for one in pids:
        kind = "other_anonymous"
        try:
            lines = Path(f"/proc/{one}/smaps").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            head = line.split(maxsplit=5)
            if "-" in head[0] and not head[0].endswith(":"):
                name = head[5] if len(head) > 5 else ""
                start = int(head[0].split("-")[0], 16)
                kind = (
                    "main_heap"
                    if name == "[heap]"
                    else "files"
                    if name.startswith("/")
                    else "thread_arenas"
                    if not name and start % (64 << 20) == 0
                    else "other_anonymous"
                )
            elif head[0] == "Rss:":
                totals[kind] += int(head[1]) / 1024.0
    return {k: round(v, 1) for k, v in totals.items()}


@dataclass
class CpuWindow:
    """Machine and server CPU over a stretch of the run, to tell a busy machine apart."""

    watcher: Watcher | None
    start: float = 0.0
    ticks: tuple[int, int] = (0, 0)
    server_cpu: float | None = None

    def __enter__(self) -> CpuWindow:
        self.start, self.ticks = time.perf_counter(), cpu_ticks()
        self.server_cpu = self._server_cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        (b0, t0), (b1, t1) = self.ticks, cpu_ticks()
        after = self._server_cpu()
        self.result = {
            "seconds": round(elapsed, 2),
            "machine_cpu_busy_percent": round(100.0 * (b1 - b0) / max(t1 - t0, 1), 1),
            "server_cpu_percent": None
            if after is None or self.server_cpu is None
            else round(100.0 * (after - self.server_cpu) / elapsed, 1),
            "loadavg_1min_at_end": round(os.getloadavg()[0], 2),
        }

    def _server_cpu(self) -> float | None:
        now = self.watcher.poll() if self.watcher is not None else None
        return None if now is None else now.cpu_seconds


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


# -- the run -------------------------------------------------------------------------------


async def run(args: argparse.Namespace, host: str, port: int, memory: Memory) -> dict[str, Any]:
    held_names, probe_names = args.names[: args.connections], args.names[args.connections :]
    memory.take("before any login", 0)
    with CpuWindow(memory.watcher) as baseline_cpu:
        baseline = await probe(args, host, port, probe_names)
    print(f"baseline probes: {_line(baseline.summary())}", file=sys.stderr)
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
            print(f"  {done} held, server RSS {point['server_rss_mib']} MiB", file=sys.stderr)

    with CpuWindow(memory.watcher) as login_cpu:
        await bounded(args.connections, args.login_concurrency, hold)
    login_seconds = login_cpu.result["seconds"]
    print(f"login phase: {done}/{args.connections} in {login_seconds:.1f} s", file=sys.stderr)

    await asyncio.sleep(args.settle)
    memory.take("held, idle", done)
    layout = memory_map(memory.watcher.pid) if memory.watcher is not None else None
    sample_ids = random.Random(1).sample(range(args.connections), min(args.pings, len(clients)))
    pings = await ping([clients[i] for i in sample_ids], 1)
    with CpuWindow(memory.watcher) as held_cpu:
        held_probe = await probe(args, host, port, probe_names)
    print(f"probes with {done} held: {_line(held_probe.summary())}", file=sys.stderr)
    memory.take("after probes", done)
    alive = await ping(clients, 64)
    memory.take("after alive check", done)

    await asyncio.gather(*(c.quit() for c in clients if c is not None))
    await asyncio.sleep(2.0)
    memory.take("after closing all", 0)
    return {
        "held_logged_in": done,
        "login_phase": {
            "seconds": round(login_seconds, 2),
            "logins_per_second": round(done / login_seconds, 1) if login_seconds else None,
            "login": logins.summary(),
            "cpu": login_cpu.result,
        },
        "probe_baseline": {**baseline.summary(), "cpu": baseline_cpu.result},
        "probe_held": {**held_probe.summary(), "cpu": held_cpu.result},
        "pings": pings.summary(),
        "alive_check": {**alive.summary(), "alive": alive.outcomes["ok"]},
        "memory": memory.points,
        "server_memory_map_held_mib": layout,
    }


def derive(results: dict[str, Any], memory: Memory, connections: int) -> dict[str, Any]:
    """Per-connection cost and the verdict on the two targets."""
    at0 = memory.find("after baseline probes") or {}
    held = memory.find("held, idle") or {}
    steps = [p for p in memory.points if p["label"].endswith(" logged in")]
    n = results["held_logged_in"]
    out: dict[str, Any] = {}
    if held.get("server_rss_mib") is not None and at0.get("server_rss_mib") is not None and n:
        out["server_kib_per_connection"] = round(
            (held["server_rss_mib"] - at0["server_rss_mib"]) * 1024 / n, 2
        )
    if len(steps) >= 2 and steps[0]["server_rss_mib"] is not None:
        first, last = steps[0], steps[-1]
        out["server_kib_per_connection_slope"] = {
            "from": first["held"],
            "to": last["held"],
            "kib": round(
                (last["server_rss_mib"] - first["server_rss_mib"])
                * 1024
                / (last["held"] - first["held"]),
                2,
            ),
        }
    if held.get("client_rss_mib") is not None and at0.get("client_rss_mib") is not None and n:
        out["client_kib_per_connection"] = round(
            (held["client_rss_mib"] - at0["client_rss_mib"]) * 1024 / n, 2
        )
    peak = max((p["server_rss_mib"] or 0.0 for p in memory.points), default=0.0)
    p99 = results["probe_held"]["p99_ms"]
    out["target"] = {
        "connections": connections,
        "all_held": n == connections and results["alive_check"]["alive"] == connections,
        "server_rss_mib_held": held.get("server_rss_mib"),
        "server_rss_peak_sampled_mib": peak,
        "rss_under_1_gib": held.get("server_rss_mib") is not None
        and held["server_rss_mib"] < TARGET_RSS_MIB,
        "probe_p99_ms": p99,
        "probe_p99_under_100_ms": results["probe_held"]["count"] > 0 and p99 < TARGET_LOGIN_P99_MS,
    }
    return out


def _line(s: dict[str, Any]) -> str:
    return (
        f"n={s['count']} p50 {s['p50_ms']:.1f} p95 {s['p95_ms']:.1f} p99 {s['p99_ms']:.1f} "
        f"max {s['max_ms']:.1f} ms; {_outcomes(s['outcomes'])}"
    )


def _outcomes(outcomes: dict[str, int]) -> str:
    return " ".join(f"{k}:{v}" for k, v in outcomes.items()) or "none"


def render(report: dict[str, Any]) -> str:
    sc, res = report["scenario"], report["results"]
    d, lp = res["derived"], res["login_phase"]
    t = d["target"]
    lines = [
        f"Ajedrez idle connections: {sc['connections']} held, {sc['database']}, "
        f"login concurrency {sc['login_concurrency']}, probe concurrency "
        f"{sc['probe_concurrency']}",
        "",
        f"{'memory point':<24} {'held':>6} {'srv RSS MiB':>12} {'srv HWM MiB':>12} "
        f"{'threads':>8} {'bench RSS MiB':>14} {'load':>6}",
    ]
    for p in res["memory"]:
        lines.append(
            f"{p['label']:<24} {p['held']:>6} {_num(p['server_rss_mib']):>12} "
            f"{_num(p['server_hwm_mib']):>12} {_num(p['server_threads']):>8} "
            f"{_num(p['client_rss_mib']):>14} {p['loadavg_1min']:>6}"
        )
    slope = d.get("server_kib_per_connection_slope")
    layout = res["server_memory_map_held_mib"]
    if layout:
        lines.append(
            "server RSS held, by mapping (MiB): "
            + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in layout.items())
        )
    lines += [
        "",
        f"server per connection: {_num(d.get('server_kib_per_connection'))} KiB "
        "(held idle - 0 held, / held)"
        + (f"; slope {slope['from']}->{slope['to']}: {slope['kib']} KiB" if slope else ""),
        f"bench process per connection: {_num(d.get('client_kib_per_connection'))} KiB "
        "(not part of the target: the target's memory is the server's)",
        f"login phase: {res['held_logged_in']}/{sc['connections']} in {lp['seconds']:.1f} s "
        f"({_num(lp['logins_per_second'])}/s); each login {_line(lp['login'])}",
        "",
        "new login (connect, USER, PASS), ms:",
        f"  with 0 held:    {_line(res['probe_baseline'])}; {_cpu(res['probe_baseline'])}",
        f"  with {res['held_logged_in']} held: {_line(res['probe_held'])}; "
        + _cpu(res["probe_held"]),
        f"HELP:QUIT on {res['pings']['count']} held sessions, ms: {_line(res['pings'])}",
        f"held sessions alive at the end: {res['alive_check']['alive']}/{sc['connections']} "
        f"({_outcomes(res['alive_check']['outcomes'])})",
        "",
        f"target: server RSS {_num(t['server_rss_mib_held'])} MiB < 1024: "
        f"{_yes(t['rss_under_1_gib'])}; new-login p99 {t['probe_p99_ms']:.1f} ms < 100: "
        f"{_yes(t['probe_p99_under_100_ms'])}; all {sc['connections']} held and alive: "
        f"{_yes(t['all_held'])}",
    ]
    return "\n".join(lines)


def _cpu(s: dict[str, Any]) -> str:
    c = s["cpu"]
    return f"machine busy {c['machine_cpu_busy_percent']}%, server {_num(c['server_cpu_percent'])}%"


def _num(v: object) -> str:
    return "-" if v is None else str(v)


def _yes(ok: bool) -> str:
    return "yes" if ok else "NO"


# -- setup -----------------------------------------------------------------------------------


def raise_fd_limit(needed: int) -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE towards ``needed`` (at most the hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def server_fd_limit(pid: int | None) -> str | None:
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                return " ".join(line.split()[3:5])  # soft hard
    except OSError:
        pass
    return None


def server_args(args: argparse.Namespace) -> list[str]:
    room = str(args.connections + args.probe_concurrency + 100)
    extra = list(args.server_arg)
    for option, value in (
        ("--max-connections", room),
        ("--max-connections-per-address", room),
        ("--idle-timeout", f"{args.idle_timeout:g}"),
    ):
        if not any(a.split("=", 1)[0] == option for a in extra):
            extra += [option, value]
    return extra


def scenario(args: argparse.Namespace, server: ServerProcess | None, address: str) -> dict:
    url = make_url(args.database_url)
    return {
        "label": args.label,
        "connections": args.connections,
        "login_concurrency": args.login_concurrency,
        "probe_logins": args.probe_logins,
        "probe_concurrency": args.probe_concurrency,
        "pings": args.pings,
        "settle": args.settle,
        "database": url.get_backend_name(),
        "database_url": url.render_as_string(hide_password=True),
        "server": {
            "started_by_bench": server is not None,
            "address": address,
            "args": server.args[1:] if server else None,
            "source_dir": str(args.server_source) if args.server_source else None,
            "fd_limit": args.server_fd_limit,
        },
        "bench_fd_limit": list(args.fd_limit),
        "machine": machine(),
        "commit": args.commit,
        "worktree_dirty": args.dirty,
        "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join(["python", "-m", "bench.idle", *sys.argv[1:]]),
    }


def _git(*argv: str) -> str | None:
    try:
        out = subprocess.run(["git", *argv], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.commit = _git("rev-parse", "HEAD")  # at the start: the tree may move during a run
    args.dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
    # Each held session is one fd here and one in the server; a server started below
    # inherits this limit (it does not raise its own).
    args.fd_limit = raise_fd_limit(args.connections + 2 * args.probe_concurrency + 500)
    if args.fd_limit[0] < args.connections + 100:
        print(f"warning: file-descriptor limit {args.fd_limit} is too low", file=sys.stderr)
    prefix = args.user_prefix or f"i{secrets.token_hex(3)}_"
    args.names = user_names(prefix, args.connections + max(1, args.probe_logins))
    server: ServerProcess | None = None
    watcher: Watcher | None = None
    try:
        server, host, port, watcher = start_or_attach(
            args.database_url,
            server_args(args),
            address=args.server,
            pid=args.server_pid,
            source_dir=args.server_source,
            log_path=args.server_log,
            log_prefix="ajedrez-idle-",
        )
        args.server_fd_limit = server_fd_limit(watcher.pid if watcher else None)
        seconds = seed_users(args.database_url, args.names)
        print(f"seeded {len(args.names)} accounts in {seconds:.1f} s", file=sys.stderr)
        memory = Memory(watcher)
        results = asyncio.run(run(args, host, port, memory))
        results["derived"] = derive(results, memory, args.connections)
    finally:
        if server is not None:
            code = server.stop()
            print(f"server stopped, exit code {code}; log tail: {server.tail(3)}", file=sys.stderr)
    if server is not None:
        results["server_exit_code"] = server.exit_code
        results["server_log"] = str(server.log_path)
    report = {"scenario": scenario(args, server, f"{host}:{port}"), "results": results}
    print(render(report))
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
