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
import resource
import secrets
import sys
from pathlib import Path
from typing import Any

from bench.host import machine
from bench.idle_memory import Memory
from bench.idle_report import derive, render
from bench.idle_sessions import run
from bench.report import (
    command_line,
    database_fields,
    log,
    server_fields,
    utc_now,
    write_json,
)
from bench.seed import seed_users, user_names
from bench.server_proc import ServerProcess, Watcher, start_or_attach, stop_server, with_defaults
from bench.source import dirty, head


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
    return with_defaults(
        args.server_arg,
        [
            ("--max-connections", room),
            ("--max-connections-per-address", room),
            ("--idle-timeout", f"{args.idle_timeout:g}"),
        ],
    )


def scenario(
    args: argparse.Namespace, server: ServerProcess | None, address: str
) -> dict[str, Any]:
    return {
        "label": args.label,
        "connections": args.connections,
        "login_concurrency": args.login_concurrency,
        "probe_logins": args.probe_logins,
        "probe_concurrency": args.probe_concurrency,
        "pings": args.pings,
        "settle": args.settle,
        **database_fields(args.database_url),
        "server": {
            **server_fields(server, address, args.server_source),
            "fd_limit": args.server_fd_limit,
        },
        "bench_fd_limit": list(args.fd_limit),
        "machine": machine(),
        "commit": args.commit,
        "worktree_dirty": args.dirty,
        "malloc_env": {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")},
        "date": utc_now(),
        "command": command_line("bench.idle"),
    }


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.commit = head()  # at the start: the tree may move during a run
    args.dirty = dirty()
    # Each held session is one fd here and one in the server; a server started below
    # inherits this limit (it does not raise its own).
    args.fd_limit = raise_fd_limit(args.connections + 2 * args.probe_concurrency + 500)
    if args.fd_limit[0] < args.connections + 100:
        log(f"warning: file-descriptor limit {args.fd_limit} is too low")
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
        log(f"seeded {len(args.names)} accounts in {seconds:.1f} s")
        memory = Memory(watcher)
        results = asyncio.run(run(args, host, port, memory))
        results["derived"] = derive(results, memory, args.connections)
    finally:
        stop_server(server, watcher, tail=3)
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
