"""Event streams: thousands of logged-in connections streaming events (EVEN) while pairs
of them play, and the delay from a move's commit to its FIN_DE_TURNO at the opponent.

    # 10,000 streaming connections, 100 pairs playing 500 moves/s in all (one server)
    rm -f /tmp/stream.sqlite3*
    .venv/bin/python -m bench.stream --start-server --database-url sqlite:////tmp/stream.sqlite3 \\
        --connections 10000 --active-pairs 100 --rate 500 --json bench/out/stream-10000.json

    # across processes: two workers, or two servers on one PostgreSQL database (the mover
    # on one, the opponent on the other)
    .venv/bin/python -m bench.stream --start-server --server-arg=--workers=2 ...
    .venv/bin/python -m bench.stream --start-server --second-server \\
        --database-url postgresql+psycopg://postgres@127.0.0.1:5432/ajedrez_stream ...

    # moves/s with and without streams: the same pairs as fast as answered, twice
    .venv/bin/python -m bench.stream ... --rate 0 --json bench/out/streams.json
    .venv/bin/python -m bench.stream ... --rate 0 --no-streams --json bench/out/no-streams.json

    # one game watched by 1,000 observers
    .venv/bin/python -m bench.stream ... --connections 1002 --active-pairs 1 --rate 10 \\
        --observers 1000 --json bench/out/observers-1000.json

Flow: raise the file-descriptor soft limit (the server and the client processes inherit
it); start the server(s) (``--start-server``, ``--second-server``) with room for every
connection; seed ``--connections`` accounts straight into the database (one shared hash);
sample the server's memory; fork ``--client-processes`` client processes
(:mod:`bench.stream_worker`), which share out the connections, each from one of many
loopback source addresses (``--per-address`` a source) and log them in,
``--login-concurrency`` at a time (reported apart: argon2 bounds it); sample memory; each
pair starts a game (JUEG, ACEP); the observers OBSV the first pair's game; every
connection sends EVEN (none with ``--no-streams``) and waits for its 601; after
``--settle`` seconds sample memory again (the idle streaming connections' cost); the
pairs play through ``--warmup`` and the ``--duration`` window (:mod:`bench.stream_games`);
sample memory; QUIT; print the table (:mod:`bench.stream_report`), write ``--json``.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import random
import secrets
import sys
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from bench.host import cpu_ticks, machine
from bench.idle import raise_fd_limit, server_fd_limit
from bench.idle_memory import memory_map
from bench.players import make_scripts
from bench.report import command_line, database_fields, log, utc_now, write_json
from bench.seed import PASSWORD, seed_users, user_names
from bench.server_proc import (
    CLOCK_TICKS,
    ServerProcess,
    Watcher,
    children,
    sample,
    start_or_attach,
    stop_server,
    with_defaults,
)
from bench.source import dirty, head
from bench.stats import percentile
from bench.stream_client import source_address
from bench.stream_games import PlaySettings, long_script
from bench.stream_report import CLIENT_BUSY_PERCENT, OTHERS_BUSY_PERCENT, derive, dist, render
from bench.stream_worker import ACCEPTOR, CHALLENGER, IDLE, OBSERVER, Spec, WorkerConfig
from bench.stream_worker import main as worker_main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.stream", description=__doc__.split("\n")[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--server", metavar="HOST:PORT", help="a server that is running already")
    where.add_argument(
        "--start-server", action="store_true", help="start `python -m ajedrez`, stop it after"
    )
    p.add_argument(
        "--second-server",
        nargs="?",
        const="start",
        metavar="HOST:PORT",
        help="a second server on the same database: alone, started (with --start-server); "
        "HOST:PORT, one running already. Challengers connect to the first, acceptors to the "
        "second (every move crosses), the others alternate",
    )
    p.add_argument("--server-pid", type=int, help="with --server: watch this pid's memory and CPU")
    p.add_argument("--second-server-pid", type=int, help="the same for --second-server HOST:PORT")
    p.add_argument("--database-url", required=True, help="the server's database (seeded)")
    p.add_argument("--connections", type=int, default=10000, help="connections in all (10000)")
    p.add_argument("--active-pairs", type=int, default=100, help="pairs that play (100)")
    p.add_argument(
        "--rate",
        type=float,
        default=500.0,
        metavar="MOVES_PER_SECOND",
        help="moves/s offered over all pairs, each pair on its own schedule (500); "
        "0: every pair as fast as it is answered",
    )
    p.add_argument("--observers", type=int, default=0, help="connections observing one game (0)")
    p.add_argument(
        "--no-streams",
        action="store_true",
        help="no EVEN: the opponent learns each move by one SPAR after the mover's 208",
    )
    p.add_argument(
        "--also-spar",
        action="store_true",
        help="with streams: the opponent sends that SPAR too (the same requests as without)",
    )
    p.add_argument("--duration", type=float, default=30.0, help="measured seconds (30)")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds of play before (3)")
    p.add_argument("--settle", type=float, default=5.0, help="idle seconds before memory (5)")
    p.add_argument("--client-processes", type=int, default=1, help="client processes (1)")
    p.add_argument("--per-address", type=int, default=16, help="connections a source (16)")
    p.add_argument("--login-concurrency", type=int, default=16, help="logins at once (16)")
    p.add_argument("--setup-concurrency", type=int, default=200, help="EVEN, OBSV at once (200)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for an answer")
    p.add_argument("--event-timeout", type=float, default=10.0, help="seconds for an event (10)")
    p.add_argument("--max-plies", type=int, default=200, help="a game resigned at this ply (200)")
    p.add_argument("--scripts", type=int, default=100, help="random games played out (100)")
    p.add_argument(
        "--watched-plies", type=int, help="length of the watched game (default: the run's)"
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (1)")
    p.add_argument("--user-prefix", help="account name prefix (default: random per run)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write every figure (bench/out/)")
    p.add_argument("--label", default="", help="free text stored in the JSON scenario")
    server = p.add_argument_group("with --start-server")
    server.add_argument(
        "--idle-timeout", type=float, default=3600.0, help="passed to the server (3600)"
    )
    server.add_argument(
        "--server-arg", action="append", default=[], metavar="ARG", help="another server arg"
    )
    server.add_argument("--server-source", type=Path, metavar="DIR", help="server source tree")
    return p


def check(args: argparse.Namespace) -> str | None:
    """Why the arguments cannot make a run, or None."""
    if args.active_pairs < 0 or args.observers < 0 or args.client_processes < 1:
        return "--active-pairs, --observers and --client-processes cannot be negative"
    if 2 * args.active_pairs + args.observers > args.connections:
        return "--connections must hold 2 x --active-pairs + --observers"
    if args.observers and (args.no_streams or not args.active_pairs):
        return "--observers needs streams and at least one pair playing"
    if not math.isfinite(args.rate) or args.rate < 0:
        return "--rate must be >= 0"
    if args.second_server not in (None, "start") and args.start_server:
        return "--second-server HOST:PORT goes with --server; with --start-server, alone"
    if args.second_server == "start" and not args.start_server:
        return "--second-server alone starts one: give --start-server (or HOST:PORT)"
    return None


def workers_of(server_args: list[str]) -> int:
    for i, arg in enumerate(server_args):
        if arg.startswith("--workers="):
            return int(arg.split("=", 1)[1])
        if arg == "--workers" and i + 1 < len(server_args):
            return int(server_args[i + 1])
    return 1


def server_args(args: argparse.Namespace) -> list[str]:
    room = args.connections + 200
    defaults = [("--max-connections", str(room)), ("--idle-timeout", f"{args.idle_timeout:g}")]
    if args.per_address > 24:
        defaults.append(("--max-connections-per-address", str(args.per_address + 8)))
    return with_defaults(args.server_arg, defaults)


# -- connections -----------------------------------------------------------------------------


def specs(args: argparse.Namespace, names: list[str], servers: int) -> list[Spec]:
    """Every connection: pairs first (challenger, acceptor), then observers, then idle."""
    out = []
    for i, name in enumerate(names):
        source = source_address(i // args.per_address)
        if i < 2 * args.active_pairs:
            role, pair = (CHALLENGER if i % 2 == 0 else ACCEPTOR), i // 2
            server = (i % 2) if servers > 1 else 0
        else:
            role = OBSERVER if i < 2 * args.active_pairs + args.observers else IDLE
            pair, server = -1, i % servers
        out.append(Spec(i, name, role, server, source, pair))
    return out


def deal(all_specs: list[Spec], k: int) -> list[list[Spec]]:
    """K shares: a pair's two players in one process, the others round robin."""
    shares: list[list[Spec]] = [[] for _ in range(k)]
    for s in all_specs:
        shares[(s.pair if s.pair >= 0 else s.index) % k].append(s)
    return shares


class Clients:
    """The client processes and the pipes the phases go over."""

    def __init__(self, configs: list[WorkerConfig]) -> None:
        ctx = multiprocessing.get_context("fork")
        self.pipes: list[Connection] = []
        self.procs: list[multiprocessing.process.BaseProcess] = []
        for cfg in configs:
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=worker_main, args=(cfg, theirs), daemon=True)
            proc.start()
            theirs.close()
            self.pipes.append(mine)
            self.procs.append(proc)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs if p.pid is not None]

    def send(self, name: str, *args: Any) -> None:
        for pipe in self.pipes:
            pipe.send((name, args))

    def gather(self, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every process's answer to the phase sent; TimeoutError after ``timeout``."""
        results = []
        for pipe in self.pipes:
            if timeout is not None and not pipe.poll(timeout):
                raise TimeoutError("a client process did not answer")
            results.append(pipe.recv())
        for r in results:
            if "error" in r:
                raise RuntimeError(f"a client process failed: {r['error']}\n{r['traceback']}")
        return results

    def phase(self, name: str, *args: Any) -> list[dict[str, Any]]:
        self.send(name, *args)
        return self.gather()

    def stop(self) -> None:
        for proc in self.procs:
            proc.join(5)
            if proc.is_alive():
                proc.terminate()


# -- memory and CPU --------------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    """VmRSS of this one process (not server_proc.sample's: that one adds the children,
    and this process's children are the client processes)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Probe:
    """Memory points and CPU spans of the servers (with their workers) and the clients."""

    def __init__(self, watchers: list[Watcher], client_pids: list[int]) -> None:
        self.watchers = watchers
        self.client_pids = client_pids
        self.points: list[dict[str, Any]] = []

    def memory(self, label: str, connected: int) -> dict[str, Any]:
        server_kib = sum(s.rss_kib for w in self.watchers if (s := w.poll()) is not None)
        arenas = sum(memory_map(w.pid).get("thread_arenas", 0.0) for w in self.watchers)
        point = {
            "label": label,
            "connected": connected,
            "server_rss_mib": round(server_kib / 1024, 1),
            "server_thread_arenas_mib": round(arenas, 1),
            "server_threads": sum(w.last.threads for w in self.watchers if w.last),
            "clients_rss_mib": round(sum(rss_kib(p) for p in self.client_pids) / 1024, 1),
            "own_rss_mib": round(rss_kib(os.getpid()) / 1024, 1),
            "loadavg_1min": round(os.getloadavg()[0], 2),
        }
        self.points.append(point)
        log(f"memory, {label}: server {point['server_rss_mib']} MiB")
        return point

    def cpu(self) -> tuple[tuple[int, int], float, list[float], float, float]:
        server = sum(s.cpu_seconds for w in self.watchers if (s := sample(w.pid)) is not None)
        clients = [(s.cpu_seconds if (s := sample(p)) else 0.0) for p in self.client_pids]
        return cpu_ticks(), server, clients, time.perf_counter(), database_cpu_seconds()

    def watch_until(self, wall: float) -> None:
        while (left := wall - time.time()) > 0:
            for w in self.watchers:
                w.poll()
            time.sleep(min(0.5, left))


def database_cpu_seconds() -> float:
    """CPU time of every PostgreSQL process on this machine (``postgres`` by name): the
    database the server uses, when it is local, is not one of the "other" processes."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, after = stat[stat.find("(") + 1 : stat.rfind(")")], stat.rsplit(")", 1)[1].split()
        if name == "postgres":
            total += int(after[11]) + int(after[12])
    return total / CLOCK_TICKS


def cpu_figures(before: Any, after: Any) -> dict[str, Any]:
    (b0, t0), s0, c0, w0, d0 = before
    (b1, t1), s1, c1, w1, d1 = after
    seconds = max(w1 - w0, 1e-9)
    busy = (b1 - b0) / max(t1 - t0, 1)
    server = (s1 - s0) / seconds * 100
    clients = [(y - x) / seconds * 100 for x, y in zip(c0, c1, strict=True)]
    database = (d1 - d0) / seconds * 100
    others = max(0.0, busy * (os.cpu_count() or 1) * 100 - server - sum(clients) - database)
    return {
        "seconds": round(seconds, 2),
        "machine_busy_percent": round(busy * 100, 1),
        "server_percent": round(server, 1),
        "clients_percent": [round(c, 1) for c in clients],
        "database_percent": round(database, 1),
        "others_percent": round(others, 1),
        "loadavg": round(os.getloadavg()[0], 2),
    }


def per_connection(points: list[dict[str, Any]], n: int, streams: bool) -> dict[str, Any] | None:
    """KiB per connection: from nothing connected to all idle (streaming, or logged in)."""
    if n <= 0:
        return None
    by = {p["label"]: p for p in points}
    base = by.get("nothing connected")
    top = by.get("streaming, idle" if streams else "logged in")
    logged = by.get("logged in")
    if base is None or top is None:
        return None

    def kib(a: dict[str, Any], b: dict[str, Any], key: str) -> float:
        return float(b[key] - a[key]) * 1024 / n

    return {
        "label": top["label"],
        "total_kib": round(kib(base, top, "server_rss_mib"), 2),
        "without_arenas_kib": round(
            kib(base, top, "server_rss_mib") - kib(base, top, "server_thread_arenas_mib"), 2
        ),
        "even_kib": round(kib(logged, top, "server_rss_mib"), 2) if streams and logged else None,
        "client_kib": round(kib(base, top, "clients_rss_mib"), 2),
    }


# -- the run ---------------------------------------------------------------------------------


def run(
    args: argparse.Namespace, addresses: list[tuple[str, int]], watchers: list[Watcher]
) -> dict[str, Any]:
    streams = not args.no_streams
    rng = random.Random(args.seed)
    started = time.perf_counter()
    scripts = make_scripts(max(1, args.scripts), args.max_plies, rng)
    interval = args.active_pairs / args.rate if args.rate and args.active_pairs else None
    watched_script = None
    if args.observers:
        plies = args.watched_plies or (
            int((args.warmup + args.duration + 10) / interval) + 20 if interval else 1000
        )
        watched_script = long_script(plies, rng)
    log(f"played out {len(scripts)} random games in {time.perf_counter() - started:.1f} s")
    settings = PlaySettings(PASSWORD, args.timeout, args.event_timeout, streams, args.also_spar)
    k = args.client_processes
    configs = [
        WorkerConfig(
            worker=i,
            servers=addresses,
            specs=share,
            settings=settings,
            login_concurrency=max(1, args.login_concurrency // k),
            setup_concurrency=max(1, args.setup_concurrency // k),
            scripts=scripts,
            watched_pair=0 if args.observers else None,
            watched_script=watched_script,
            pace_interval=interval,
            seed=args.seed,
        )
        for i, share in enumerate(deal(specs(args, args.names, len(addresses)), k))
    ]
    clients = Clients(configs)
    probe = Probe(watchers, clients.pids)
    probe.memory("nothing connected", 0)
    try:
        return _phases(args, clients, probe, streams)
    finally:
        try:
            clients.send("quit")
            clients.gather(timeout=args.duration + 2 * args.timeout + 30)
        except (OSError, EOFError, RuntimeError, TimeoutError) as e:
            log(f"client processes at quit: {e}")
        clients.stop()


def _phases(
    args: argparse.Namespace, clients: Clients, probe: Probe, streams: bool
) -> dict[str, Any]:
    logins = clients.phase("login")
    ok = sum(r["ok"] for r in logins)
    seconds = max(r["seconds"] for r in logins)
    failed: dict[str, int] = {}
    for r in logins:
        for code, n in r["failed"].items():
            failed[code] = failed.get(code, 0) + n
    log(f"logged in {ok}/{args.connections} in {seconds:.1f} s ({ok / max(seconds, 1e-9):.1f}/s)")
    for r in logins:
        for f in r["failures_sample"][:3]:
            log(f"  {f}")
    time.sleep(args.settle)
    probe.memory("logged in", ok)
    setup: dict[str, Any] = {}
    began = time.perf_counter()
    games = clients.phase("games")
    setup["games"] = {
        "ok": sum(g["games"] for g in games),
        "seconds": round(time.perf_counter() - began, 2),
        "failed": [g["failed"] for g in games],
    }
    watched = next((g["watched_game"] for g in games if g["watched_game"]), None)
    log(f"games started: {setup['games']['ok']}; watched: {watched}")
    if args.observers:
        if watched is None:
            raise RuntimeError("the watched pair has no game")
        setup["observe"] = _merge(clients.phase("observe", watched))
        log(f"observing {watched}: {setup['observe']['ok']}/{args.observers}")
    if streams:
        setup["even"] = _merge(clients.phase("even"))
        even = setup["even"]
        log(f"streaming: {even['ok']} (EVEN answered 219), in {even['seconds']:.1f} s")
        time.sleep(args.settle)
        probe.memory("streaming, idle", ok)
    start = time.time() + 1.0
    measure, end = start + args.warmup, start + args.warmup + args.duration
    clients.send("play", start, measure, end)
    probe.watch_until(measure)
    before = probe.cpu()
    probe.watch_until(end)
    after = probe.cpu()
    log("window closed; waiting for the pairs")
    plays = clients.gather()
    probe.memory("after the window", ok)
    window = derive(plays, args.duration, args.observers, streams)
    cpu = cpu_figures(before, after)
    latencies = sorted(s * 1000 for r in logins for s in r["login_seconds"])
    return {
        "window": window,
        "cpu": cpu,
        "warnings": _warnings(cpu, window),
        "memory": {
            "points": probe.points,
            "per_connection": per_connection(probe.points, ok, streams),
        },
        "login": {
            "ok": ok,
            "seconds": round(seconds, 1),
            "per_second": round(ok / max(seconds, 1e-9), 1),
            "failed": failed,
            "latency": dist(latencies),
            "p999_ms": round(percentile(latencies, 99.9), 1),
        },
        "setup": setup,
    }


def _merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    answers: dict[str, int] = {}
    for r in results:
        for code, n in r["answers"].items():
            answers[code] = answers.get(code, 0) + n
    return {
        "ok": sum(r["ok"] for r in results),
        "seconds": round(max(r["seconds"] for r in results), 2),
        "answers": answers,
        "caught_up": sum(r.get("caught_up", 0) for r in results),
        "failures_sample": [f for r in results for f in r["failures_sample"]][:5],
    }


def _warnings(cpu: dict[str, Any], window: dict[str, Any]) -> list[str]:
    """Why the figures may not be the server's: a client process near a whole core (its
    loop then stamps replies late), or other processes using the machine."""
    out = []
    shares = cpu["clients_percent"]
    lags = [c["lag"]["p99_ms"] for c in window["clients"]]
    if any(c >= CLIENT_BUSY_PERCENT for c in shares):
        out.append(
            "the client side may be the bottleneck: client processes at "
            + ", ".join(f"{c:.0f}%" for c in shares)
            + " of a core, loop lag p99 "
            + ", ".join(f"{lag:.1f}" for lag in lags)
            + " ms; try more --client-processes"
        )
    if cpu["others_percent"] >= OTHERS_BUSY_PERCENT:
        out.append(
            f"other processes used {cpu['others_percent']:.0f}% of a core over the window "
            f"(load average {cpu['loadavg']}): the machine was not quiet, the figures are not "
            "clean"
        )
    return out


def scenario(
    args: argparse.Namespace,
    servers: list[ServerProcess | None],
    addresses: list[tuple[str, int]],
    watchers: list[Watcher | None],
    fd: Any,
) -> dict[str, Any]:
    if args.start_server:
        workers: int | None = workers_of(args.server_arg)
    else:  # attached: a server with --workers N has N children (and a writer on PostgreSQL)
        found = [len(children(w.pid)) for w in watchers if w is not None]
        workers = max(found) if found else None
    count = len(addresses)
    across = count > 1 or (workers or 1) > 1
    topology = (
        f"{count} server(s)"
        + (f" x {workers} workers" if workers and workers > 1 else "")
        + (" (each move crosses servers)" if count > 1 else "")
        + ("" if args.start_server or workers is not None else " (attached, not watched)")
    )
    return {
        "label": args.label,
        "connections": args.connections,
        "active_pairs": args.active_pairs,
        "observers": args.observers,
        "streams": not args.no_streams,
        "also_spar": args.also_spar,
        "rate": args.rate,
        "duration": args.duration,
        "warmup": args.warmup,
        "client_processes": args.client_processes,
        "per_address": args.per_address,
        "login_concurrency": args.login_concurrency,
        "topology": topology,
        "across_processes": across,
        **database_fields(args.database_url),
        "servers": [
            {
                "address": f"{h}:{p}",
                "started_by_bench": s is not None,
                "args": s.args[1:] if s else None,
                "log": str(s.log_path) if s else None,
            }
            for s, (h, p) in zip(servers, addresses, strict=True)
        ],
        "server_source": str(args.server_source) if args.server_source else None,
        "server_fd_limit": fd,
        "bench_fd_limit": list(args.fd_limit),
        "seed": args.seed,
        "machine": machine(),
        "commit": args.commit,
        "worktree_dirty": args.dirty,
        "date": utc_now(),
        "command": command_line("bench.stream"),
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    problem = check(args)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    args.commit, args.dirty = head(), dirty()
    # One fd per connection in the client process holding it and one in the server.
    args.fd_limit = raise_fd_limit(args.connections + 1000)
    if args.fd_limit[0] < args.connections + 100:
        log(f"warning: file-descriptor limit {args.fd_limit} is too low")
    prefix = args.user_prefix or f"s{secrets.token_hex(3)}_"
    args.names = user_names(prefix, args.connections)
    servers: list[ServerProcess | None] = []
    watchers: list[Watcher | None] = []
    addresses: list[tuple[str, int]] = []
    try:
        wanted = [(args.server, args.server_pid)]
        if args.second_server:
            second = None if args.second_server == "start" else args.second_server
            wanted.append((second, args.second_server_pid))
        for i, (address, pid) in enumerate(wanted):
            server, host, port, watcher = start_or_attach(
                args.database_url,
                server_args(args),
                address=address,
                pid=pid,
                source_dir=args.server_source,
                log_path=None,
                log_prefix=f"ajedrez-stream-{i}-",
            )
            servers.append(server)
            watchers.append(watcher)
            addresses.append((host, port))
        fd = server_fd_limit(watchers[0].pid if watchers[0] else None)
        seeded = seed_users(args.database_url, args.names)
        log(f"seeded {len(args.names)} accounts in {seeded:.1f} s")
        results = run(args, addresses, [w for w in watchers if w is not None])
    finally:
        for server, watcher in zip(servers, watchers, strict=True):
            stop_server(server, watcher, tail=3)
    results["servers_exit"] = [
        {"exit_code": s.exit_code, "log": str(s.log_path)} for s in servers if s is not None
    ]
    report = {"scenario": scenario(args, servers, addresses, watchers, fd), "results": results}
    print(render(report))
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
