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
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chess
from sqlalchemy import make_url

from bench.aclient import AsyncClient, record_move
from bench.host import cpu_ticks, machine
from bench.report import write_json
from bench.seed import PASSWORD, user_names
from bench.server_proc import ServerProcess, Watcher, start_or_attach
from bench.stats import CONNECTION_FAILED, percentile

REPO = Path(__file__).resolve().parent.parent
READ_KINDS = ("PPEN 0", "PPEN recent", "STAT", "SPAR 0", "SPAR last")
KINDS = (*READ_KINDS, "JGDA")


# -- recording -------------------------------------------------------------------------


class LabelRecorder:
    """Latency per (phase, label); the label defaults to the command code."""

    def __init__(self) -> None:
        self.phase = "login"
        self.label: str | None = None
        self.samples: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.replies: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.sizes: dict[str, list[int]] = defaultdict(list)

    def observe(self, command: str, seconds: float, code: int | None) -> None:
        key = (self.phase, self.label or command)
        self.samples[key].append(seconds)
        self.replies[key][CONNECTION_FAILED if code is None else str(code)] += 1

    def size(self, label: str, n: int) -> None:
        if self.phase == "measure":
            self.sizes[label].append(n)

    def summary(self, phase: str, label: str) -> dict[str, Any]:
        ms = sorted(v * 1000.0 for v in self.samples.get((phase, label), []))
        out: dict[str, Any] = {
            "count": len(ms),
            "p50_ms": round(percentile(ms, 50), 3),
            "p95_ms": round(percentile(ms, 95), 3),
            "p99_ms": round(percentile(ms, 99), 3),
            "max_ms": round(ms[-1], 3) if ms else 0.0,
            "mean_ms": round(sum(ms) / len(ms), 3) if ms else 0.0,
            "replies": dict(sorted(self.replies.get((phase, label), {}).items())),
        }
        sizes = self.sizes.get(label) if phase == "measure" else None
        if sizes:
            out["records"] = {
                "min": min(sizes),
                "mean": round(sum(sizes) / len(sizes), 2),
                "max": max(sizes),
            }
        return out

    def labels(self, phase: str) -> list[str]:
        return sorted({label for p, label in self.samples if p == phase})


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


@dataclass
class Span:
    """A measured phase: wall time, machine busy share, server CPU."""

    name: str
    loadavg_before: str = ""
    start: float = 0.0
    ticks: tuple[int, int] = (0, 0)
    server_cpu0: float | None = None
    result: dict[str, Any] = field(default_factory=dict)

    def open(self, watcher: Watcher | None) -> None:
        self.loadavg_before = loadavg()
        self.start = time.perf_counter()
        self.ticks = cpu_ticks()
        self.server_cpu0 = _server_cpu(watcher)

    def close(self, watcher: Watcher | None) -> None:
        elapsed = time.perf_counter() - self.start
        busy1, total1 = cpu_ticks()
        busy = (busy1 - self.ticks[0]) / max(total1 - self.ticks[1], 1)
        cpu1 = _server_cpu(watcher)
        self.result = {
            "seconds": round(elapsed, 2),
            "loadavg_before": self.loadavg_before,
            "loadavg_after": loadavg(),
            "machine_busy_percent": round(busy * 100, 1),
            "cpu_count": os.cpu_count(),
            "server_cpu_percent": None
            if cpu1 is None or self.server_cpu0 is None
            else round((cpu1 - self.server_cpu0) / elapsed * 100, 1),
        }


def _server_cpu(watcher: Watcher | None) -> float | None:
    if watcher is None:
        return None
    now = watcher.poll()
    return None if now is None else now.cpu_seconds


# -- the probe users and their games ---------------------------------------------------


@dataclass
class ProbeGame:
    game: str
    white: str
    black: str
    status: int
    next_ply: int
    fecha: int
    board: chess.Board | None = None  # active games only


@dataclass
class ProbeUser:
    name: str
    client: AsyncClient
    games: list[ProbeGame] = field(default_factory=list)
    recent: int = 0


class Probe:
    def __init__(
        self, args: argparse.Namespace, host: str, port: int, recorder: LabelRecorder
    ) -> None:
        self.args = args
        self.host, self.port = host, port
        self.rec = recorder
        self.users: list[ProbeUser] = []
        self.by_name: dict[str, ProbeUser] = {}
        self.active: list[ProbeGame] = []
        self.rng = random.Random(args.seed)
        self.events: dict[str, int] = defaultdict(int)

    async def login(self) -> None:
        for name in user_names(self.args.probe_prefix, self.args.probe_users):
            client = await AsyncClient.connect(
                self.host, self.port, timeout=self.args.timeout, observer=self.rec
            )
            await client.login(name, self.args.password)
            user = ProbeUser(name, client)
            self.users.append(user)
            self.by_name[name] = user

    async def discover(self) -> None:
        seen: dict[str, ProbeGame] = {}
        for user in self.users:
            listing = await user.client.ppen(0)
            for summary in listing.items:
                st = await user.client.stat(summary.game)
                game = seen.get(summary.game)
                if game is None:
                    game = ProbeGame(st.game, st.white, st.black, st.status, st.next_ply, st.fecha)
                    seen[summary.game] = game
                    if st.active:
                        game.board = await self._board(user.client, st.game)
                        self.active.append(game)
                user.games.append(game)
            if not user.games:
                raise SystemExit(f"{user.name} has no games: seed with bench.seed_games first")
            fechas = sorted(g.fecha for g in user.games)
            user.recent = fechas[len(fechas) // 2]
        self.active.sort(key=lambda g: g.game)
        for game in self.active:
            if game.white not in self.by_name or game.black not in self.by_name:
                raise SystemExit(f"{game.game}: both players must be probe users")

    async def _board(self, client: AsyncClient, game: str) -> chess.Board:
        board = chess.Board()
        for record in await client.spar(game, 0):
            board.push(record_move(record))
        return board

    def _label(self, label: str | None) -> None:
        self.rec.label = label

    # -- reads -------------------------------------------------------------------------

    async def read_round(self, i: int) -> None:
        n = len(self.users)
        user = self.users[i % n]
        game = user.games[(i // n) % len(user.games)]
        c = user.client
        self._label("PPEN 0")
        self.rec.size("PPEN 0", len((await c.ppen(0)).items))
        self._label("PPEN recent")
        self.rec.size("PPEN recent", len((await c.ppen(user.recent)).items))
        self._label("STAT")
        st = await c.stat(game.game)
        self._label("SPAR 0")
        self.rec.size("SPAR 0", len(await c.spar(game.game, 0)))
        self._label("SPAR last")
        self.rec.size("SPAR last", len(await c.spar(game.game, max(0, st.next_ply - 2))))
        self._label(None)

    # -- moves -------------------------------------------------------------------------

    async def move_round(self, i: int) -> None:
        slot = i % len(self.active)
        game = self.active[slot]
        assert game.board is not None
        board = game.board
        mover = self.by_name[game.white if board.turn == chess.WHITE else game.black]
        if board.ply() >= self.args.max_plies:
            game = await self._replace(slot, resign_by=mover)
            board = game.board
            assert board is not None
            mover = self.by_name[game.white]
        move = self.rng.choice(list(board.legal_moves))
        self._label("JGDA")
        await mover.client.jgda(game.game, board.ply() + 1, move)
        self._label(None)
        board.push(move)
        self.events["moves"] += 1
        if board.outcome(claim_draw=False) is not None:
            self.events[f"ended_{board.outcome(claim_draw=False).termination.name.lower()}"] += 1  # type: ignore[union-attr]
            await self._replace(slot, resign_by=None)

    async def _replace(self, slot: int, resign_by: ProbeUser | None) -> ProbeGame:
        """End the game in ``slot`` (REND unless the rules ended it), start a new one
        between the same players and play it to ``--refill-plies`` outside the window."""
        old = self.active[slot]
        phase = self.rec.phase
        self.rec.phase = "refill"
        try:
            white, black = self.by_name[old.white], self.by_name[old.black]
            if resign_by is not None:
                other = old.black if resign_by.name == old.white else old.white
                await resign_by.client.rend(old.game, other)
                self.events["resigned"] += 1
            while True:
                await white.client.jueg(black.name)
                gid = await black.client.acep("N", white.name)
                board = chess.Board()
                game = ProbeGame(gid, white.name, black.name, 0, 1, 0, board)
                self.events["games_started"] += 1
                while board.ply() < self.args.refill_plies and board.outcome() is None:
                    mover = white if board.turn == chess.WHITE else black
                    move = self.rng.choice(list(board.legal_moves))
                    await mover.client.jgda(gid, board.ply() + 1, move)
                    board.push(move)
                if board.outcome(claim_draw=False) is None:
                    break
                self.events["refill_ended_by_rules"] += 1
        finally:
            self.rec.phase = phase
        self.active[slot] = game
        return game

    async def quit(self) -> None:
        await asyncio.gather(*(u.client.quit() for u in self.users))


async def run(
    args: argparse.Namespace, host: str, port: int, watcher: Watcher | None
) -> dict[str, Any]:
    rec = LabelRecorder()
    probe = Probe(args, host, port, rec)
    spans: dict[str, Any] = {}
    try:
        setup = Span("setup")
        setup.open(watcher)
        await probe.login()
        rec.phase = "setup"
        await probe.discover()
        setup.close(watcher)
        spans["setup"] = setup.result
        print(
            f"{len(probe.users)} probe users, {sum(len(u.games) for u in probe.users)} "
            f"user-games, {len(probe.active)} active games",
            file=sys.stderr,
        )

        if "reads" in args.phases:
            rec.phase = "warmup"
            for i in range(args.warmup):
                await probe.read_round(i)
            reads = Span("reads")
            reads.open(watcher)
            rec.phase = "measure"
            for i in range(args.samples):
                await probe.read_round(i)
            reads.close(watcher)
            spans["reads"] = reads.result
            print(f"reads: {reads.result}", file=sys.stderr)

        if "moves" in args.phases:
            rec.phase = "warmup"
            for i in range(args.warmup):
                await probe.move_round(i)
            moves = Span("moves")
            moves.open(watcher)
            rec.phase = "measure"
            for i in range(args.warmup, args.warmup + args.samples):
                await probe.move_round(i)
            moves.close(watcher)
            spans["moves"] = moves.result
            print(f"moves: {moves.result}", file=sys.stderr)
        rec.phase = "done"
    finally:
        await probe.quit()
    return {
        "commands": {k: rec.summary("measure", k) for k in KINDS if ("measure", k) in rec.samples},
        "refill": {k: rec.summary("refill", k) for k in rec.labels("refill")},
        "setup": {k: rec.summary("setup", k) for k in rec.labels("setup")},
        "login": {k: rec.summary("login", k) for k in rec.labels("login")},
        "spans": spans,
        "events": dict(sorted(probe.events.items())),
        "probe": {
            "users": len(probe.users),
            "games_per_user": sorted({len(u.games) for u in probe.users}),
            "active_games": len(probe.active),
            "plies_of_user_games": sorted({g.next_ply - 1 for u in probe.users for g in u.games}),
        },
    }


# -- the server ------------------------------------------------------------------------


def git(*argv: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *argv], check=True, capture_output=True, text=True
    ).stdout.strip()


def make_snapshot(rev: str) -> tuple[Path, str]:
    """``git archive REV`` extracted into /tmp/ajedrez-<short commit> (reused if there)."""
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    target = Path(tempfile.gettempdir()) / f"ajedrez-{commit[:7]}"
    if not (target / "ajedrez" / "__main__.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.Popen(
            ["git", "-C", str(REPO), "archive", commit], stdout=subprocess.PIPE
        )
        subprocess.run(["tar", "-x", "-C", str(target)], stdin=archive.stdout, check=True)
        assert archive.stdout is not None
        archive.stdout.close()
        if archive.wait() != 0:
            raise SystemExit("git archive failed")
    return target, commit


# -- output ----------------------------------------------------------------------------


def render(report: dict[str, Any]) -> str:
    sc, res = report["scenario"], report["results"]
    lines = [
        f"Ajedrez latency: {sc['database']} {sc['label']}, {sc['samples']} samples per "
        f"command, server {sc['server']['commit'] or sc['server']['source_dir'] or '?'}",
        f"{'command':<12} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'mean ms':>8} {'max ms':>8}  records",
    ]
    for kind, s in res["commands"].items():
        rec = s.get("records")
        lines.append(
            f"{kind:<12} {s['count']:>6} {s['p50_ms']:>8.3f} {s['p95_ms']:>8.3f} "
            f"{s['p99_ms']:>8.3f} {s['mean_ms']:>8.3f} {s['max_ms']:>8.3f}  "
            + (f"{rec['mean']:g}" if rec else "")
        )
    for name, span in res["spans"].items():
        lines.append(
            f"{name}: {span['seconds']} s, loadavg before {span['loadavg_before']!r}, "
            f"machine busy {span['machine_busy_percent']}%, server CPU "
            f"{span['server_cpu_percent']}%"
        )
    lines.append(f"events: {res['events']}")
    return "\n".join(lines)


def compare(base_path: Path, other_path: Path) -> str:
    base = json.loads(base_path.read_text())
    other = json.loads(other_path.read_text())
    lines = [
        f"ratio {other_path.name} / {base_path.name}",
        f"{'command':<12} {'p50 A':>8} {'p50 B':>8} {'ratio':>6}  {'p95 A':>8} {'p95 B':>8} "
        f"{'ratio':>6}  {'p99 A':>8} {'p99 B':>8} {'ratio':>6}",
    ]
    for kind, a in base["results"]["commands"].items():
        b = other["results"]["commands"].get(kind)
        if b is None:
            continue
        cells = []
        for pct in ("p50_ms", "p95_ms", "p99_ms"):
            ratio = b[pct] / a[pct] if a[pct] else float("nan")
            cells.append(f"{a[pct]:>8.3f} {b[pct]:>8.3f} {ratio:>6.2f}")
        lines.append(f"{kind:<12} " + "  ".join(cells))
    return "\n".join(lines)


# -- the command line ------------------------------------------------------------------


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
        print(f"server source: {source} (commit {commit})", file=sys.stderr)
    server: ServerProcess | None = None
    watcher: Watcher | None = None
    started = datetime.now(UTC).isoformat(timespec="seconds")
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
        if server is not None:
            if watcher is not None:
                watcher.poll()
            print(f"server stopped, exit code {server.stop()}", file=sys.stderr)
    if watcher is not None:
        results["server"] = watcher.as_dict()
    url = make_url(args.database_url) if args.database_url else None
    report = {
        "scenario": {
            "label": args.label,
            "database": url.get_backend_name() if url else None,
            "database_url": url.render_as_string(hide_password=True) if url else None,
            "samples": args.samples,
            "phases": sorted(args.phases),
            "warmup": args.warmup,
            "max_plies": args.max_plies,
            "refill_plies": args.refill_plies,
            "seed": args.seed,
            "server": {
                "started_by_bench": bool(args.start_server),
                "address": f"{host}:{port}",
                "args": server.args[1:] if server else None,
                "source_dir": str(source) if source else None,
                "commit": commit,
            },
            "repo_head": git("rev-parse", "HEAD"),
            "loadavg_at_start": load_start,
            "machine": machine(),
            "date": started,
            "command": shlex.join(["python", "-m", "bench.latency", *sys.argv[1:]]),
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
