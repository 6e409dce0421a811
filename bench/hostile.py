"""Play the hostile clients of docs/security.md against a fresh server and print what a
legitimate user sees meanwhile.

    .venv/bin/python -m bench.hostile [--database-url URL] [--only NAME ...]

Each scenario runs against a server of its own (default settings, a new SQLite file
unless ``--database-url``); clients come from many loopback addresses (127.0.0.0/8).
Figures are seconds as seen by the client.
"""

from __future__ import annotations

import argparse
import http.client
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from bench.server_proc import ServerProcess

PASSWORD = "correct horse battery"


class Client:
    def __init__(self, address: tuple[str, int], source: str = "127.0.0.1") -> None:
        self.sock = socket.create_connection(address, timeout=600, source_address=(source, 0))
        self.buf = b""

    def send(self, *lines: str) -> None:
        self.sock.sendall("".join(f"{line}\r\n" for line in lines).encode())

    def reply(self) -> tuple[int, str]:
        while len(self.buf) < 6:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        (length,) = struct.unpack("!H", self.buf[4:6])
        while len(self.buf) < 6 + length:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        code, data = int(self.buf[:3]), self.buf[6 : 6 + length].decode()
        self.buf = self.buf[6 + length :]
        return code, data

    def cmd(self, line: str) -> tuple[int, str]:
        self.send(line)
        return self.reply()

    def close(self) -> None:
        self.sock.close()


def login_seconds(address: tuple[str, int], name: str, source: str) -> float:
    c = Client(address, source)
    started = time.monotonic()
    assert c.cmd(f"USER:{name}")[0] == 101
    code, text = c.cmd(f"PASS:{PASSWORD}")
    assert code == 102, (code, text)
    c.close()
    return time.monotonic() - started


def fail(address: tuple[str, int], name: str, source: str) -> None:
    c = Client(address, source)
    c.send(f"USER:{name}", "PASS:wrong")
    c.reply()
    c.reply()
    c.close()


def held_attempts(address: tuple[str, int], db: Database) -> str:
    for _ in range(4):
        fail(address, "victim", "127.0.0.2")
    held = []
    for _ in range(31):
        c = Client(address, "127.0.0.2")
        c.send("USER:victim", "PASS:wrong")
        held.append(c)
    took = login_seconds(address, "victim", "127.0.0.3")
    for c in held:
        c.close()
    return f"victim's login after 4 failures + 31 held guesses from a stranger: {took:.3f} s"


def dropped_attempts(address: tuple[str, int], db: Database) -> str:
    for i in range(300):
        c = Client(address, f"127.0.1.{i % 10 + 1}")
        c.send("USER:victim", "PASS:wrong")
        c.close()
    took = login_seconds(address, "victim", "127.0.2.1")
    return f"victim's login after 300 guesses sent and dropped from 10 addresses: {took:.3f} s"


def burst(address: tuple[str, int], db: Database) -> str:
    conns = [Client(address, "127.0.3.1") for _ in range(32)]
    started = time.monotonic()
    for c in conns:
        c.send("USER:victim", "PASS:wrong")
    done: list[float] = []

    def wait(c: Client) -> None:
        c.reply()
        c.reply()
        done.append(time.monotonic() - started)

    threads = [threading.Thread(target=wait, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    within = sum(1 for d in done if d <= 0.5)
    return (
        f"32 guesses sent at once from one address: {within} checked within 0.5 s, "
        f"all 32 in {max(done):.1f} s"
    )


def unsu_oracle(address: tuple[str, int], db: Database) -> str:
    Accounts(db).add_user("oracle", PASSWORD)
    guesses, started = 0, time.monotonic()
    while time.monotonic() - started < 10:
        c = Client(address, "127.0.4.1")
        c.send("USER:oracle", f"PASS:{PASSWORD}")
        c.reply()
        c.reply()
        try:
            while True:
                code, _ = c.cmd("UNSU:oracle:a guess")
                guesses += 1
                if code != 815:
                    break
        except ConnectionError:
            pass
        c.close()
    rate = guesses / (time.monotonic() - started)
    return f"UNSU guesses by a logged-in client, one address, 10 s: {rate:.2f} a second"


def silent_flood(address: tuple[str, int], db: Database) -> str:
    accounts, games = Accounts(db), Games(db)
    for name in ("white", "black"):
        accounts.add_user(name, PASSWORD)
    w, b = accounts.login("white", PASSWORD), accounts.login("black", PASSWORD)
    games.challenge(b.id, "white")
    gid = games.accept(w.id, "B", "black")
    flood = [Client(address, f"127.0.9.{i % 40 + 1}") for i in range(1000)]
    started = time.monotonic()
    c = Client(address, "127.0.10.1")
    c.send("USER:white", f"PASS:{PASSWORD}", f"JGDA:P{gid:07d}:1:e2e4:0:1228:0")
    codes = [c.reply()[0] for _ in range(3)]
    took = time.monotonic() - started
    assert codes == [101, 102, 208], codes
    for f in flood:
        f.close()
    return f"login and a move by a newcomer after 1,000 silent connections: {took:.3f} s"


def subs_flood(address: tuple[str, int], db: Database) -> str:
    flood = []
    for i in range(900):
        c = Client(address, f"127.0.11.{i % 40 + 1}")
        c.send(f"SUBS:flood{i}a:secret:", f"SUBS:flood{i}b:secret:")
        flood.append(c)
    time.sleep(1)
    took = login_seconds(address, "victim", "127.0.12.1")
    for c in flood:
        c.close()
    return f"a login while 900 connections queue two SUBS each: {took:.3f} s"


# The metrics port of the scenarios that have the listener on (chosen free at start).
METRICS: dict[str, int] = {}
# A knight's dance (Nf3 Nf6 Ng1 Ng8, three times): twelve legal plies that end nothing.
DANCE = [("g1f3", "0621"), ("g8f6", "6245"), ("f3g1", "2106"), ("f6g8", "4562")] * 3
SCRAPERS = 6
SCRAPE_GAMES = 16  # games played in each phase, 12 moves each


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _move_seconds(address: tuple[str, int], db: Database, tag: str) -> list[float]:
    """Each move's round trip (JGDA to 208) over SCRAPE_GAMES games played one move at a
    time, each game by two players of its own."""
    accounts, games = Accounts(db), Games(db)
    pairs = []
    for i in range(SCRAPE_GAMES):
        white, black = f"{tag}w{i}", f"{tag}b{i}"
        accounts.add_user(white, PASSWORD)
        accounts.add_user(black, PASSWORD)
        w, b = accounts.login(white, PASSWORD), accounts.login(black, PASSWORD)
        games.challenge(b.id, white)
        gid = games.accept(w.id, "B", black)
        sessions = []
        for name in (white, black):
            c = Client(address)
            assert c.cmd(f"USER:{name}")[0] == 101
            assert c.cmd(f"PASS:{PASSWORD}")[0] == 102
            sessions.append(c)
        pairs.append((gid, sessions))
    took = []
    for gid, sessions in pairs:
        for ply, (move, squares) in enumerate(DANCE, 1):
            c = sessions[(ply + 1) % 2]
            started = time.monotonic()
            code, text = c.cmd(f"JGDA:P{gid:07d}:{ply}:{move}:{(ply + 1) % 2}:{squares}:0")
            took.append(time.monotonic() - started)
            assert code == 208, (code, text)
        for c in sessions:
            c.close()
    return took


def _scrape(port: int, stop: threading.Event, counts: dict[int, int]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while not stop.is_set():
        try:
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            r.read()
            counts[r.status] = counts.get(r.status, 0) + 1
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            counts[0] = counts.get(0, 0) + 1
    conn.close()


def scrape_flood(address: tuple[str, int], db: Database) -> str:
    """Moves timed quietly, then while SCRAPERS clients scrape /metrics without pause,
    then quietly again: the same server, the same run."""
    before = _move_seconds(address, db, "q")
    stop = threading.Event()
    counts: list[dict[int, int]] = [{} for _ in range(SCRAPERS)]
    scrapers = [threading.Thread(target=_scrape, args=(METRICS["scrape"], stop, c)) for c in counts]
    for t in scrapers:
        t.start()
    started = time.monotonic()
    try:
        flooded = _move_seconds(address, db, "f")
    finally:
        stop.set()
        for t in scrapers:
            t.join()
    seconds = time.monotonic() - started
    after = _move_seconds(address, db, "a")
    answered = sum(c.get(200, 0) for c in counts)
    refused = sum(n for c in counts for code, n in c.items() if code != 200)

    def p(values: list[float]) -> str:
        ordered = sorted(values)
        p50, p99 = (ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.5, 0.99))
        return f"p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"

    return (
        f"{len(before)} moves quiet: {p(before)}; while {SCRAPERS} clients scrape /metrics "
        f"without pause ({answered / seconds:.0f} scrapes a second answered, {refused} "
        f"not): {p(flooded)}; quiet again: {p(after)}"
    )


SCENARIOS: dict[str, Callable[[tuple[str, int], Database], str]] = {
    "held": held_attempts,
    "dropped": dropped_attempts,
    "burst": burst,
    "unsu": unsu_oracle,
    "silent": silent_flood,
    "subs": subs_flood,
    "scrape": scrape_flood,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", choices=list(SCENARIOS), help="run only these")
    args = p.parse_args()
    for name in args.only or list(SCENARIOS):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'hostile.sqlite3'}"
            db = Database(url)
            upgrade(db)
            Accounts(db).add_user("victim", PASSWORD)
            extra = []
            if name == "scrape":
                METRICS[name] = _free_port()
                extra = ["--metrics-port", str(METRICS[name])]
            server = ServerProcess(url, extra, source_dir=None, log_path=Path(tmp) / "server.log")
            host, port = server.start()
            try:
                print(f"{name}: {SCENARIOS[name]((host, port), db)}", flush=True)
            finally:
                server.stop()
                db.dispose()


if __name__ == "__main__":
    main()
