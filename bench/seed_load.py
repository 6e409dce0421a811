"""Moves/s and move latency on the seed protocols' listeners beside ESPOL's, in one run.

    .venv/bin/python -m bench.seed_load --tables 100 --duration 15 \\
        --json bench/out/seed-load.json

One server is started with ``--hash-port 0 --binary-port 0`` (the listeners' ports are
read from its log). Then, one after the other on that server and in this one asyncio
process, for ``--warmup`` + ``--duration`` seconds each:

1. ``hash``: ``--tables`` tables of the ``#`` protocol (seed 000): twice --tables guests,
   each on its own connection, send ``#INSCRIBIR#name#``, are paired by the server and
   play random legal moves (``#MOVIMIENTO#codigo#e2e4#``), each as soon as the server's
   ``#OK#turno#tablero#estado#`` says it is its turn; a game over (``#FIN#...#``), both
   register again for a new table.
2. ``binary``: the same on the binary listener (seed 004): ``JOIN`` name, ``INIT`` 1,
   ``PLAY`` on the ``UPDT`` that gives the player the turn.
3. ``espol``: ``bench.load``'s players (twice --tables seeded accounts, one game per pair:
   JUEG with the same time control, ACEP, JGDA) with ``--wait notify``, the closest
   ESPOL has to the pushed updates of the seed listeners (the waiting player is woken by
   its opponent's task, then fetches the move with one SPAR).

A move's latency runs from just before its bytes are written to when the mover's task
has its acknowledgement: the ``#OK#...#`` update on the ``#`` listener, the ``UPDT`` on
the binary one; ESPOL's comparable figure is ``JGDA+wake`` (``bench/README.md``). A
game still running at ``--max-plies`` is resigned by the player to move. Every
game's time control, on the three listeners, is ``--time-control`` (``1d``): clocks run,
and none runs out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import re
import secrets
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess

from ajedrez.server import loops
from bench.host import CpuSpan, machine
from bench.load import build_parser as build_load_parser
from bench.load_phases import run as run_espol
from bench.report import command_line, database_fields, log, server_fields, utc_now, write_json
from bench.seed import seed_users, user_names
from bench.server_proc import ServerProcess, Watcher, start_or_attach, stop_server, with_defaults
from bench.stats import Recorder, Summary, summarize

LISTENERS = {
    "hash": re.compile(r"# protocol \(seed 000\) listening on (\S+):(\d+)"),
    "binary": re.compile(r"binary protocol \(seed 004\) listening on (\S+):(\d+)"),
}
HASH_FINAL = ("JAQUE_MATE", "TABLAS")  # estado after a move that ends the game
BINARY_FIXED = {"NAME": 1, "JOIN": 1, "MOVE": 1, "CHEK": 0, "CKMT": 0, "UNDO": 0, "DENY": 0}
BINARY_ENDS = {1: "white", 2: "black", 3: "no winner"}


class Tally:
    """One listener's moves, their latencies and the games' ends, in the measured window."""

    def __init__(self) -> None:
        self.measuring = False
        self.latencies: list[float] = []
        self.games = 0
        self.ends: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()

    def move(self, seconds: float) -> None:
        if self.measuring:
            self.latencies.append(seconds)

    def game(self) -> None:
        if self.measuring:
            self.games += 1

    def end(self, how: str) -> None:
        if self.measuring:
            self.ends[how] += 1

    def error(self, what: str) -> None:
        self.errors[what] += 1  # every phase: none is expected


@dataclass
class Player:
    name: str
    host: str
    port: int
    tally: Tally
    rng: random.Random
    max_plies: int
    timeout: float
    stop: asyncio.Event
    reader: asyncio.StreamReader | None = None
    writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port), self.timeout
        )

    async def send(self, data: bytes) -> None:
        assert self.writer is not None
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()

    async def play(self) -> None:
        """Name the player, then play game after game until the phase stops."""
        raise NotImplementedError


# -- the # protocol (seed 000) ---------------------------------------------------------------


class HashPlayer(Player):
    async def msg(self) -> list[str]:
        """The next message's fields: ``#OK#B#12#`` is ``["OK", "B", "12"]``."""
        assert self.reader is not None
        line = await asyncio.wait_for(self.reader.readline(), self.timeout)
        if not line:
            raise EOFError("the server closed the connection")
        text = line.decode().strip()
        return text[1:-1].split("#")

    async def say(self, *fields: str) -> None:
        await self.send(("#" + "#".join(fields) + "#\n").encode())

    async def play(self) -> None:
        await self.connect()
        while not self.stop.is_set():
            await self.say("INSCRIBIR", self.name)
            msg = await self.msg()
            while msg[0] == "NOK":  # a move sent as the game ended, answered late
                self.tally.error(f"NOK {msg[1]}")
                msg = await self.msg()
            colour, code = msg[1], msg[2]
            while (msg := await self.msg())[0] != "INICIO":
                self.tally.error(" ".join(msg))
            if colour == "B":  # each game counted once, by white
                self.tally.game()
            await self.game(colour, code, msg[2])

    async def game(self, colour: str, code: str, fen: str) -> None:
        plies = 0
        sent: float | None = None
        if colour == "B":
            sent = await self.move(code, fen, plies)
        while True:
            msg = await self.msg()
            if msg[0] == "OK" and len(msg) == 4:  # a move: turno, tablero, estado
                plies += 1
                if sent is not None:
                    self.tally.move(time.perf_counter() - sent)
                    sent = None
                turn, fen, state = msg[1:]
                if turn == colour and state not in HASH_FINAL and not self.stop.is_set():
                    sent = await self.move(code, fen, plies)
            elif msg[0] == "FIN":
                if colour == "B":
                    self.tally.end(msg[1])
                return
            elif msg[0] == "NOK":
                self.tally.error(f"NOK {msg[1]}")
                sent = None
            # #OK#ganador# (a resignation) is followed by #FIN#: nothing to do

    async def move(self, code: str, fen: str, plies: int) -> float | None:
        """Send a random legal move (or resign at the ply cap); the time it was sent."""
        if plies >= self.max_plies:
            await self.say("RENDIRSE", code)
            return None
        move = self.rng.choice(list(chess.Board(fen).legal_moves))
        started = time.perf_counter()
        await self.say("MOVIMIENTO", code, move.uci())
        return started


# -- the binary protocol (seed 004) ----------------------------------------------------------


@dataclass
class Table:
    """One game's position, shared by its two players (UPDT's board has no castling rights
    or en passant square): the mover pushes its move before sending it."""

    board: chess.Board = field(default_factory=chess.Board)
    seated: set[int] = field(default_factory=set)


class BinaryPlayer(Player):
    tables: dict[tuple[str, str], Table]

    async def packet(self) -> tuple[str, bytes]:
        assert self.reader is not None
        take = self.reader.readexactly
        kind = (await asyncio.wait_for(take(4), self.timeout)).decode()
        if kind in BINARY_FIXED:
            return kind, await take(BINARY_FIXED[kind])
        if kind == "UPDT":
            return kind, await take(66)
        if kind == "INIT":
            head = await take(4)
            return kind, head + await take(head[1] + head[2] + (64 if head[3] else 0))
        if kind == "CHAT":
            head = await take(3)
            return kind, head + await take(head[0] + int.from_bytes(head[1:3], "big"))
        raise RuntimeError(f"unexpected packet {kind!r}")

    async def expect(self, wanted: str) -> bytes:
        while True:
            kind, body = await self.packet()
            if kind == wanted:
                return body
            if kind not in ("CHEK", "CKMT"):  # the last move's, after its UPDT
                self.tally.error(f"{kind} {body[:1].hex()}")

    async def play(self) -> None:
        await self.connect()
        raw = self.name.encode()
        await self.send(b"JOIN" + bytes([len(raw)]) + raw)
        if (answer := await self.expect("NAME")) != b"\x01":
            raise RuntimeError(f"{self.name}: NAME {answer.hex()}")
        while not self.stop.is_set():
            await self.send(b"INIT\x01")
            if (answer := await self.expect("JOIN")) != b"\x01":
                raise RuntimeError(f"{self.name}: JOIN {answer.hex()}")
            init = await self.expect("INIT")
            role, n1, n2 = init[0], init[1], init[2]
            names = (init[4 : 4 + n1].decode(), init[4 + n1 : 4 + n1 + n2].decode())
            table = self.tables.get(names)
            if table is None or role in table.seated:  # the pair's previous game
                table = self.tables[names] = Table()
            table.seated.add(role)
            if role == 1:  # each game counted once, by white
                self.tally.game()
            await self.game(role, table.board)

    async def game(self, role: int, board: chess.Board) -> None:
        sent = await self.move(board) if role == 1 else None
        while True:
            kind, body = await self.packet()
            if kind == "UPDT":
                if sent is not None:
                    self.tally.move(time.perf_counter() - sent)
                    sent = None
                turn, victory = body[0], body[1]
                if victory:
                    if role == 1:
                        self.tally.end(BINARY_ENDS.get(victory, str(victory)))
                    return
                if turn == role and not self.stop.is_set():
                    sent = await self.move(board)
            elif kind == "MOVE":
                self.tally.error(f"MOVE {body[0]}")
                sent = None
            elif kind not in ("CHEK", "CKMT"):
                self.tally.error(kind)

    async def move(self, board: chess.Board) -> float | None:
        """Push and send a random legal move (or resign at the ply cap); when it was sent.
        A pawn reaching the last rank becomes a queen: two squares name no other piece."""
        if board.ply() >= self.max_plies:
            await self.send(b"RSGN")
            return None
        moves = [m for m in board.legal_moves if m.promotion in (None, chess.QUEEN)]
        move = self.rng.choice(moves)
        board.push(move)
        a, b = move.from_square, move.to_square
        packet = b"PLAY" + bytes([a & 7, a >> 3, b & 7, b >> 3])
        started = time.perf_counter()
        await self.send(packet)
        return started


# -- the run ---------------------------------------------------------------------------------


async def seed_phase(
    kind: str,
    args: argparse.Namespace,
    host: str,
    port: int,
    watcher: Watcher | None,
) -> dict[str, Any]:
    """``--tables`` tables on one seed listener: warm up, measure, stop."""
    tally, stop = Tally(), asyncio.Event()
    tables: dict[tuple[str, str], Table] = {}
    prefix = f"{args.prefix}{kind[0]}"
    players: list[Player] = []
    for i in range(2 * args.tables):
        rng = random.Random(f"{args.seed}:{kind}:{i}")
        common = (f"{prefix}{i:04d}", host, port, tally, rng, args.max_plies, args.timeout, stop)
        if kind == "hash":
            players.append(HashPlayer(*common))
        else:
            player = BinaryPlayer(*common)
            player.tables = tables
            players.append(player)
    failures: list[str] = []
    tasks = [asyncio.create_task(_guarded(p.play, p.name, failures)) for p in players]
    log(f"{kind}: {len(players)} players, warming up {args.warmup:g} s")
    await asyncio.sleep(args.warmup)
    window = CpuSpan(watcher).open()
    tally.measuring = True
    await asyncio.sleep(args.duration)
    tally.measuring = False
    window.close()
    stop.set()
    await asyncio.wait(tasks, timeout=1.0)  # let the moves in flight land
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(*(p.close() for p in players))
    await asyncio.sleep(1.0)  # the server ends the guests' games
    return _figures(
        kind,
        summarize("move", tally.latencies, {}),
        window.seconds,
        cpu={
            "server_cpu_percent": window.server_cpu_percent,
            "load_generator_cpu_percent": window.own_cpu_percent,
            "machine_cpu_busy_percent": window.machine_busy_percent,
        },
        games=tally.games,
        ends=dict(tally.ends),
        errors=dict(tally.errors),
        failures=failures,
    )


async def _guarded(play: Callable[[], Awaitable[None]], name: str, failures: list[str]) -> None:
    try:
        await play()
    except asyncio.CancelledError:
        raise
    except Exception as e:  # a player that fails is reported, the others go on
        failures.append(f"{name}: {type(e).__name__}: {e}")


async def espol_phase(
    args: argparse.Namespace, host: str, port: int, watcher: Watcher | None
) -> dict[str, Any]:
    """``bench.load``'s players, one game per pair, on the ESPOL listener."""
    load_args = build_load_parser().parse_args(
        [
            *("--server", f"{host}:{port}", "--database-url", args.database_url),
            *("--clients", str(2 * args.tables), "--duration", str(args.duration)),
            *("--warmup", str(args.warmup), "--wait", "notify"),
            *("--max-plies", str(args.max_plies), "--seed", str(args.seed)),
            *("--timeout", str(args.timeout), "--time-control", args.time_control),
        ]
    )
    load_args.names = user_names(f"{args.prefix}e", 2 * args.tables)
    seconds = seed_users(args.database_url, load_args.names)
    log(f"espol: seeded {len(load_args.names)} accounts in {seconds:.1f} s")
    recorder = Recorder()
    results = await run_espol(load_args, host, port, watcher, recorder)
    jgda = recorder.summary("measure", "JGDA")
    return _figures(
        "espol",
        recorder.summary("measure", "JGDA+wake"),
        results["window_seconds"],
        cpu={
            "server_cpu_percent": (results["server"] or {}).get("cpu_percent"),
            "load_generator_cpu_percent": results["load_generator_cpu_percent"],
            "machine_cpu_busy_percent": results["machine_cpu_busy_percent"],
        },
        games=results["games_started"],
        ends=results["game_ends"],
        # SPAR's 839 F_NOMASJUG is "nothing yet" with --wait notify, on its +wake row too
        errors=recorder.errors("measure", {("SPAR", "839"), ("SPAR+wake", "839")}),
        failures=[],
    ) | {
        "players_failed": results["players_failed"],
        "player_failures_sample": results["player_failures_sample"],
        "jgda_until_bytes": {**jgda.percentiles_ms(), "p90_ms": round(jgda.p90, 3)},
    }


def _figures(
    kind: str,
    moves: Summary,
    seconds: float,
    *,
    cpu: dict[str, float | None],
    games: int,
    ends: dict[str, int],
    errors: dict[str, int],
    failures: list[str],
) -> dict[str, Any]:
    """One listener's row: its moves (their latencies), games and CPU in the window."""
    rate = moves.count / seconds if seconds > 0 else 0.0
    server_cpu = cpu.get("server_cpu_percent")
    return {
        "listener": kind,
        "window_seconds": round(seconds, 3),
        "moves": moves.count,
        "moves_per_second": round(rate, 1),
        # the server's CPU time per move (ms): what the move costs, whatever else ran
        "server_cpu_ms_per_move": (
            round(server_cpu * 10 / rate, 3) if server_cpu is not None and rate > 0 else None
        ),
        "latency": {**moves.percentiles_ms(), "p90_ms": round(moves.p90, 3)},
        "games_started": games,
        "game_ends": dict(sorted(ends.items())),
        "errors": errors,
        "players_failed": len(failures),
        "player_failures_sample": failures[:5],
        **cpu,
    }


async def run_all(
    args: argparse.Namespace, host: str, ports: dict[str, int], watcher: Watcher | None
) -> list[dict[str, Any]]:
    results = [
        await seed_phase("hash", args, host, ports["hash"], watcher),
        await seed_phase("binary", args, host, ports["binary"], watcher),
        await espol_phase(args, host, ports["espol"], watcher),
    ]
    return results


def listener_ports(server: ServerProcess, timeout: float = 30.0) -> dict[str, int]:
    """The seed listeners' ports, from the server's log (they follow ESPOL's line)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = server.log_path.read_text(errors="replace")
        found = {kind: pattern.search(text) for kind, pattern in LISTENERS.items()}
        if all(found.values()):
            return {kind: int(m.group(2)) for kind, m in found.items() if m}
        time.sleep(0.05)
    raise RuntimeError(f"the seed listeners did not show in the log: {server.tail()}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.seed_load", description=__doc__.split("\n")[0]
    )
    p.add_argument(
        "--database-url",
        help="the server's database (default: a new SQLite file in the temp directory)",
    )
    p.add_argument("--tables", type=int, default=100, help="tables (games) at once (100)")
    p.add_argument("--duration", type=float, default=15.0, help="measured seconds each (15)")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds of play before (3)")
    p.add_argument("--max-plies", type=int, default=200, help="resign at this ply (200)")
    p.add_argument("--time-control", default="1d", help="the seed listeners' time control (1d)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a reply (30)")
    p.add_argument("--seed", type=int, default=1, help="random seed of the move choices (1)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON")
    p.add_argument("--label", default="", help="free text stored in the JSON scenario")
    p.add_argument(
        "--server-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="another server argument, e.g. --server-arg=--log-level=WARNING",
    )
    p.add_argument(
        "--server-source",
        type=Path,
        metavar="DIR",
        help="run the server from this source tree (default: the installed one)",
    )
    p.add_argument("--server-log", type=Path, help="the server's log file (a temp file)")
    return p


def server_args(args: argparse.Namespace) -> list[str]:
    # Every player connects from 127.0.0.1: lift the per-address caps above them, with
    # room for a phase's connections the server has not closed yet when the next begins.
    room = str(6 * args.tables + 10)
    return with_defaults(
        list(args.server_arg),
        [
            ("--hash-port", "0"),
            ("--binary-port", "0"),
            ("--hash-time-control", args.time_control),
            ("--binary-time-control", args.time_control),
            ("--max-connections-per-address", room),
            ("--max-guests-per-address", room),
        ],
    )


def render(results: list[dict[str, Any]]) -> str:
    head = (
        f"{'listener':<8} {'moves/s':>8} {'moves':>7} {'p50 ms':>8} {'p90 ms':>8} "
        f"{'p99 ms':>8} {'max ms':>8} {'games':>6} {'srv CPU':>8} {'ms/move':>8} "
        f"{'gen CPU':>8} {'fail':>5}"
    )
    lines = [head]
    for r in results:
        lat = r["latency"]
        srv = "-" if r["server_cpu_percent"] is None else f"{r['server_cpu_percent']:.0f}%"
        per_move = r["server_cpu_ms_per_move"]
        cost = "-" if per_move is None else f"{per_move:.3f}"
        lines.append(
            f"{r['listener']:<8} {r['moves_per_second']:>8.1f} {r['moves']:>7} "
            f"{lat['p50_ms']:>8.2f} {lat['p90_ms']:>8.2f} {lat['p99_ms']:>8.2f} "
            f"{lat['max_ms']:>8.2f} {r['games_started']:>6} {srv:>8} {cost:>8} "
            f"{r['load_generator_cpu_percent']:>7.0f}% {r['players_failed']:>5}"
        )
    for r in results:
        if r["errors"]:
            lines.append(f"{r['listener']} errors: {r['errors']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.tables < 1:
        print("--tables must be >= 1", file=sys.stderr)
        return 2
    if args.database_url is None:
        fd, name = tempfile.mkstemp(prefix="ajedrez-seed-load-", suffix=".sqlite3")
        os.close(fd)
        os.unlink(name)  # the server creates it with its schema
        args.database_url = f"sqlite:///{name}"
    args.prefix = f"s{secrets.token_hex(3)}"
    server: ServerProcess | None = None
    watcher: Watcher | None = None
    try:
        server, host, port, watcher = start_or_attach(
            args.database_url,
            server_args(args),
            address=None,
            pid=None,
            source_dir=args.server_source,
            log_path=args.server_log,
            log_prefix="ajedrez-seed-load-",
        )
        assert server is not None
        ports = {"espol": port, **listener_ports(server)}
        log(f"listeners: {ports}")
        results = loops.run(run_all(args, host, ports, watcher), loops.default())
    finally:
        stop_server(server, watcher)
    assert server is not None
    report = {
        "scenario": {
            "label": args.label,
            "tables": args.tables,
            "players_per_listener": 2 * args.tables,
            **database_fields(args.database_url),
            "server": server_fields(server, f"{host}:{port}", args.server_source),
            "duration": args.duration,
            "warmup": args.warmup,
            "max_plies": args.max_plies,
            "time_control": args.time_control,
            "espol_wait": "notify",
            "seed": args.seed,
            "load_generator_event_loop": loops.default(),
            "machine": machine(),
            "date": utc_now(),
            "command": command_line("bench.seed_load"),
        },
        "results": results,
        "server": {
            **(watcher.as_dict() if watcher else {}),
            "exit_code": server.exit_code,
            "log": str(server.log_path),
        },
    }
    print(render(results))
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
