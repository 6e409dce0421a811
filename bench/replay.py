"""One account replaying its long history over many sessions, and what another pair's
moves cost meanwhile (docs/security.md, "Streams, chat and seeks").

    .venv/bin/python -m bench.replay [--server-source DIR] [--history 10000]
        [--sessions 32] [--seconds 15] [--server-arg=--event-catch-up-limit=20000]

A fresh server on a new SQLite file (``--database-url`` for another). The account
``replayer`` is given ``--history`` events; then a pair plays moves one after the other
(each sent when the last was answered) for ``--seconds`` on a quiet server, then again
while a process of its own holds ``--sessions`` sessions of ``replayer``, from one
address, each sending ``EVEN:0`` again as soon as its ``601`` arrives. Printed: the
pair's JGDA round trip (p50, p90, p99, max, in ms) in each phase, and what the replayers
got. ``--server-source`` runs another build's server (a snapshot directory, as
``bench.load``'s), so two builds are measured by the same command.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

import chess
from sqlalchemy import text

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.events import Event, Value
from ajedrez.store.db import Database
from bench.server_proc import ServerProcess
from bench.stats import percentile

PASSWORD = "correct horse battery"
SEED_BATCH = 500


class Conn:
    """A blocking ESPOL connection: lines out, (code, data) frames in."""

    def __init__(self, address: tuple[str, int], source: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection(address, timeout=600, source_address=(source, 0))
        self.buf = b""

    def send(self, *lines: str) -> None:
        self.sock.sendall("".join(f"{line}\r\n" for line in lines).encode())

    def frame(self) -> tuple[int, str]:
        while len(self.buf) < 6 or len(self.buf) < 6 + struct.unpack("!H", self.buf[4:6])[0]:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        (length,) = struct.unpack("!H", self.buf[4:6])
        code, data = int(self.buf[:3]), self.buf[6 : 6 + length].decode()
        self.buf = self.buf[6 + length :]
        return code, data

    def cmd(self, line: str) -> tuple[int, str]:
        self.send(line)
        return self.frame()

    def login(self, name: str) -> None:
        self.send(f"USER:{name}", f"PASS:{PASSWORD}")
        assert [self.frame()[0] for _ in range(2)] == [101, 102], name


def seed_history(db: Database, user_id: int, other_id: int, events: int) -> None:
    """``events`` events of the account's (draw offers by it), written as the server
    writes them."""
    for start in range(0, events, SEED_BATCH):
        with db.write() as tx:
            for n in range(start, min(events, start + SEED_BATCH)):
                fields: dict[str, Value] = {"partida": n + 1, "usuario": "replayer"}
                tx.emit(Event("TABLAS", fields, 1_000, None, user_id, other_id, user_id))


def play(address: tuple[str, int], seconds: float, rng: random.Random) -> list[float]:
    """The pair's moves for ``seconds``: each JGDA's round trip, in ms."""
    w, b = Conn(address, "127.0.5.1"), Conn(address, "127.0.5.2")
    w.login("white")
    b.login("black")
    took: list[float] = []
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            assert w.cmd("JUEG:black")[0] == 200
            code, pid = b.cmd("ACEP:N:white")
            assert code == 202, (code, pid)
            board = chess.Board()
            while board.outcome(claim_draw=True) is None and time.monotonic() < end:
                move = rng.choice(sorted(board.legal_moves, key=chess.Move.uci))
                conn = w if board.turn == chess.WHITE else b
                frm, to = move.from_square, move.to_square
                promo = {None: 0, chess.QUEEN: 5, chess.ROOK: 4, chess.BISHOP: 3}.get(
                    move.promotion, 2
                )
                line = (
                    f"JGDA:{pid}:{len(board.move_stack) + 1}:{chess.square_name(frm)}"
                    f"{chess.square_name(to)}:0:{frm:02d}{to:02d}:{promo}"
                )
                started = time.perf_counter()
                code, data = conn.cmd(line)
                took.append((time.perf_counter() - started) * 1000)
                assert code == 208, (line, code, data)
                board.push(move)
            if board.outcome(claim_draw=True) is None or board.outcome() is None:
                code, _ = w.cmd(f"REND:{pid}:black")
                assert code in (211, 833), code
    finally:
        w.sock.close()
        b.sock.close()
    return took


def replayers(address: tuple[str, int], sessions: int, stop: object, out: object) -> None:
    """The hostile process: ``sessions`` sessions of ``replayer`` from one address, each
    sending EVEN:0 again on every 601, until ``stop`` is set; ``out`` gets
    (replays, events, gaps)."""
    counts = [0, 0, 0]
    lock = threading.Lock()

    def one() -> None:
        c = Conn(address, "127.0.6.1")
        c.login("replayer")
        while not stop.is_set():  # type: ignore[attr-defined]
            c.send("EVEN:0")
            events = gaps = 0
            while True:
                code, _ = c.frame()
                if code == 600:
                    events += 1
                elif code == 602:
                    gaps += 1
                elif code == 601:
                    break
            with lock:
                counts[0] += 1
                counts[1] += events
                counts[2] += gaps
        c.sock.close()

    threads = [threading.Thread(target=one, daemon=True) for _ in range(sessions)]
    for t in threads:
        t.start()
    stop.wait()  # type: ignore[attr-defined]
    for t in threads:
        t.join(30)
    out.put(tuple(counts))  # type: ignore[attr-defined]


def summary(took: list[float]) -> str:
    ordered = sorted(took)
    ps = ", ".join(f"p{p} {percentile(ordered, p):.1f}" for p in (50, 90, 99))
    return f"{len(took)} moves, JGDA ms {ps}, max {ordered[-1]:.1f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--server-source", type=Path, help="run this build's server instead")
    p.add_argument("--database-url", help="default: a new SQLite file")
    p.add_argument("--history", type=int, default=10_000, help="the replayer's events")
    p.add_argument("--sessions", type=int, default=32, help="replaying sessions")
    p.add_argument("--seconds", type=float, default=15.0, help="each phase's length")
    p.add_argument("--server-arg", action="append", default=[], help="passed to the server")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{Path(tmp) / 'replay.sqlite3'}"
        server_args = ["--max-connections-per-address", "1000", *args.server_arg]
        server = ServerProcess(
            url, server_args, source_dir=args.server_source, log_path=Path(tmp) / "server.log"
        )
        host, port = server.start()  # the server brings the schema to its own head
        db = Database(url)
        try:
            accounts = Accounts(db)
            for name in ("replayer", "mirror", "white", "black"):
                accounts.add_user(name, PASSWORD)
            with db.engine.connect() as conn:
                ids = {name: uid for name, uid in conn.execute(text("SELECT name, id FROM users"))}
            seed_history(db, ids["replayer"], ids["mirror"], args.history)
            rng = random.Random(1)
            quiet = play((host, port), args.seconds, rng)
            ctx = multiprocessing.get_context("spawn")
            stop, out = ctx.Event(), ctx.Queue()
            hostile = ctx.Process(target=replayers, args=((host, port), args.sessions, stop, out))
            hostile.start()
            time.sleep(1.0)  # every session logged in and replaying
            loaded = play((host, port), args.seconds, rng)
            stop.set()
            replays, events, gaps = out.get(timeout=120)
            hostile.join(60)
            print(f"quiet: {summary(quiet)}")
            print(f"while {args.sessions} sessions replay {args.history} events: {summary(loaded)}")
            print(f"replays finished: {replays}, events streamed: {events}, 602s: {gaps}")
        finally:
            server.stop()
            db.dispose()


if __name__ == "__main__":
    main()
