"""Play the hostile clients of docs/security.md against a fresh server and print what a
legitimate user sees meanwhile.

    .venv/bin/python -m bench.hostile [--only NAME ...] [--server-args "--events-burst 50"]

Each scenario runs against a server of its own (default settings but
``--server-args``, a new SQLite file); clients come from many loopback addresses (127.0.0.0/8).
Figures are seconds as seen by the client.
"""

from __future__ import annotations

import argparse
import http.client
import os
import shlex
import shutil
import socket
import struct
import subprocess
import sys
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

    def answer(self, line: str) -> tuple[int, str, int]:
        """The whole answer to ``line``, events set aside: (code, data of every part
        joined, bytes received for it, headers included)."""
        self.send(line)
        parts, size = [], 0
        while True:
            while len(self.buf) < 6:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                self.buf += chunk
            more = self.buf[3:4] == b"1"
            code, data = self.reply()
            if 600 <= code < 700:
                continue
            parts.append(data)
            size += 6 + len(data.encode())
            if not more:
                return code, "".join(parts), size

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


# What the scenarios below need of the run: the database's URL, the scenario's
# directory, and for "draw" the file the server reads its time from.
RUN: dict[str, str] = {}
START_MS = 1_795_435_200_000  # 2026-11-23 12:00 UTC, as tests/support/clock.py
HOUR_MS = 3_600_000


def session(address: tuple[str, int], name: str, source: str = "127.0.0.1") -> Client:
    c = Client(address, source)
    assert c.cmd(f"USER:{name}")[0] == 101
    code, text = c.cmd(f"PASS:{PASSWORD}")
    assert code == 102, (code, text)
    return c


def _users(db: Database, *names: str) -> None:
    for name in names:
        Accounts(db).add_user(name, PASSWORD)


def _set_time(ms: int) -> None:
    path = Path(RUN["clock"])
    new = path.with_suffix(".new")
    new.write_text(str(ms))
    os.replace(new, path)


def _relj(c: Client, gid: str) -> dict[str, str]:
    code, data = c.cmd(f"RELJ:{gid}")
    assert code == 217, (code, data)
    f = data.split(":")
    return {"reloj_blancas": f[3], "espera": f[5], "limite": f[6]}


def draw_offer(address: tuple[str, int], db: Database) -> str:
    """White, to move in a 10m game, offers a draw and goes silent; then a 1d game in its
    last hour. The server's time is a file (--clock-file) that only this scenario moves."""
    _users(db, "dw", "db", "lw", "lb")
    w, b = session(address, "dw", "127.0.30.1"), session(address, "db", "127.0.30.2")
    assert b.cmd("JUEG:dw:10m")[0] == 200
    code, gid = w.cmd("ACEP:B:db")
    assert code == 202, (code, gid)
    before = _relj(w, gid)
    offer = w.cmd(f"TBLS:{gid}:db")
    after = _relj(b, gid)
    declined = b.cmd(f"RTBL:{gid}:N:dw")
    renewed = w.cmd(f"TBLS:{gid}:db")
    moved = w.cmd(f"JGDA:{gid}:1:e2e4:0:1228:0")
    after_move = w.cmd(f"TBLS:{gid}:db")
    # The 1d game: its clock moved to 30 minutes before white's deadline.
    lw, lb = session(address, "lw", "127.0.30.3"), session(address, "lb", "127.0.30.4")
    assert lb.cmd("JUEG:lw:1d")[0] == 200
    code, lgid = lw.cmd("ACEP:B:lb")
    assert code == 202, (code, lgid)
    deadline = int(_relj(lw, lgid)["limite"])
    _set_time(deadline - HOUR_MS // 2)
    leave_before = lw.cmd("LICE:I")
    loffer = lw.cmd(f"TBLS:{lgid}:lb")
    lrelj = _relj(lw, lgid)
    leave_after = lw.cmd("LICE:I")
    for c in (w, b, lw, lb):
        c.close()
    return (
        f"10m game, white to move: RELJ before the offer {before}; TBLS {offer[0]}; "
        f"RELJ after {after}; RTBL N {declined[0]}; TBLS again {renewed[0]} "
        f"'{renewed[1]}'; white's move {moved[0]}, then TBLS {after_move[0]}. "
        f"1d game, 30 min before white's deadline: LICE:I {leave_before[0]} "
        f"'{leave_before[1]}'; TBLS {loffer[0]}, RELJ espera {lrelj['espera']} limite "
        f"{'unchanged' if int(lrelj['limite']) == deadline else lrelj['limite']}; "
        f"LICE:I {leave_after[0]} '{leave_after[1]}'"
    )


def _count_events(c: Client, kind: str, counts: list[float]) -> None:
    try:
        while True:
            code, data = c.reply()
            if code == 600 and f":{kind}:" in data:
                counts.append(time.monotonic())
    except (ConnectionError, OSError):
        pass


def event_flood(address: tuple[str, int], db: Database) -> str:
    """One account toggles JUEG and DECL at the victim for 5 s while the victim streams;
    then a block (BLOQ) against another account's challenges."""
    _users(db, "flooder", "pest")
    stream = session(address, "victim", "127.0.31.1")
    assert stream.cmd("EVEN")[0] == 219
    seen: list[float] = []
    reader = threading.Thread(target=_count_events, args=(stream, "DESAFIO", seen))
    reader.start()
    f = session(address, "flooder", "127.0.31.2")
    codes: dict[int, int] = {}
    first_refusal = ""
    started = time.monotonic()
    while time.monotonic() - started < 5:
        f.send("JUEG:victim", "DECL:victim")
        for _ in range(2):
            code, text = f.reply()
            codes[code] = codes.get(code, 0) + 1
            if code == 847 and not first_refusal:
                first_refusal = f"{text} ({time.monotonic() - started:.2f} s in)"
    window = time.monotonic() - started
    time.sleep(0.5)
    received = sum(1 for t in seen if t - started <= window + 0.5)
    # The block: pest challenges, the victim blocks pest, pest challenges again.
    pest = session(address, "pest", "127.0.31.3")
    v = session(address, "victim", "127.0.31.4")
    first = pest.cmd("JUEG:victim")
    blocked = v.cmd("BLOQ:pest")
    again = pest.cmd("JUEG:victim")
    time.sleep(0.5)
    stream.sock.shutdown(socket.SHUT_RDWR)
    reader.join()
    for c in (f, pest, v, stream):
        c.close()
    sent = sum(codes.values())
    return (
        f"JUEG/DECL flood for {window:.1f} s: {sent} requests sent, replies "
        f"{dict(sorted(codes.items()))}; the victim's stream got {received} DESAFIO "
        f"events; first 847: '{first_refusal}'. Block: pest's JUEG {first[0]}, the "
        f"victim's BLOQ:pest {blocked[0]}, pest's JUEG again {again[0]} '{again[1]}'; "
        f"DESAFIO events in all {len(seen)}"
    )


def sessions_of_one_account(address: tuple[str, int], db: Database) -> str:
    """Sessions of one account from a new loopback address each, until one is refused;
    then a newcomer of another account."""
    _users(db, "hog")
    held: list[Client] = []
    refusal = (0, "")
    for i in range(100):
        c = Client(address, f"127.0.32.{i + 1}")
        assert c.cmd("USER:hog")[0] == 101
        code, text = c.cmd(f"PASS:{PASSWORD}")
        if code != 102:
            refusal = (code, text)
            c.close()
            break
        held.append(c)
    took = login_seconds(address, "victim", "127.0.33.1")
    for c in held:
        c.close()
    return (
        f"{len(held)} sessions of one account got in from {len(held)} addresses; the next "
        f"got {refusal[0]} '{refusal[1]}'; another account's login meanwhile: {took:.3f} s"
    )


def private_game(address: tuple[str, int], db: Database) -> str:
    """A stranger's replies for a private game and for an id no game has."""
    _users(db, "pw", "pb", "stranger")
    accounts, games = Accounts(db), Games(db)
    w, b = accounts.login("pw", PASSWORD), accounts.login("pb", PASSWORD)
    games.challenge(b.id, "pw", private=True)
    gid = games.accept(w.id, "B", "pb")
    s = session(address, "stranger", "127.0.34.1")
    lines = []
    same = True
    for shape in ("OBSV:{}", "STAT:{}", "JGDA:{}:1:e2e4:0:1228:0"):
        private = s.cmd(shape.format(f"P{gid:07d}"))
        missing = s.cmd(shape.format(f"P{gid + 1:07d}"))
        same = same and (private[0], private[1].replace(f"P{gid:07d}", "#")) == (
            missing[0],
            missing[1].replace(f"P{gid + 1:07d}", "#"),
        )
        verb = shape.split(":")[0]
        lines.append(
            f"{verb} private P{gid:07d}: {private[0]} '{private[1]}', "
            f"none P{gid + 1:07d}: {missing[0]} '{missing[1]}'"
        )
    s.close()
    return "; ".join(lines) + f"; identical but for the id: {same}"


def seek_flood(address: tuple[str, int], db: Database) -> str:
    """10,000 BUSC of distinct controls from one account, then BUSL's size; a live seek
    whose owner disconnects."""
    _users(db, "seeker", "watcher", "live")
    s = session(address, "seeker", "127.0.35.1")
    codes: dict[int, int] = {}
    started = time.monotonic()
    for chunk in range(0, 10_000, 500):
        s.send(*(f"BUSC:{i + 1}m+0" for i in range(chunk, chunk + 500)))
        for _ in range(500):
            code, _ = s.reply()
            codes[code] = codes.get(code, 0) + 1
    took = time.monotonic() - started
    watcher = session(address, "watcher", "127.0.35.2")
    code, busl, size = watcher.answer("BUSL")
    live = session(address, "live", "127.0.35.3")
    assert live.cmd("BUSC:30s-move")[0] == 225
    listed = watcher.answer("BUSL")[1]
    live.close()
    gone_at, after = None, listed
    closed = time.monotonic()
    while time.monotonic() - closed < 5:
        after = watcher.answer("BUSL")[1]
        if "live:" not in after:
            gone_at = time.monotonic() - closed
            break
        time.sleep(0.05)
    s.close()
    watcher.close()
    gone = f"gone {gone_at:.2f} s after the close" if gone_at is not None else "still there"
    return (
        f"10,000 BUSC of distinct controls in {took:.1f} s: replies "
        f"{dict(sorted(codes.items()))}; BUSL afterwards {code}, {size} bytes '{busl}'. "
        f"Live seek: BUSL with its owner connected '{listed}', after the owner's close "
        f"'{after}' ({gone})"
    )


def _admin(*args: str, cfg: Path | None = None) -> tuple[int, str, float, int]:
    """ajedrez-admin in a child process: (exit code, its output, wall seconds, the
    child's peak resident set in KiB from wait4)."""
    admin = Path(sys.executable).parent / "ajedrez-admin"
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        child = subprocess.Popen(
            [str(admin), "--database-url", RUN["url"], *args], stdout=out, stderr=out
        )
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        took = time.monotonic() - started
        out.seek(0)
        text = out.read().decode(errors="replace").strip()
    return child.returncode, text, took, usage.ru_maxrss


def import_espol(address: tuple[str, int], db: Database) -> str:
    """ajedrez-admin import espol on a data directory whose server.cfg names /etc, and on
    one whose usuarios ends with a 300 MB line (a hole: no disk is used)."""
    example = Path(__file__).resolve().parent.parent / "tests" / "data" / "espol1995-example"
    d = Path(RUN["tmp"]).resolve() / "datos"
    shutil.copytree(example, d)
    (d / "server.cfg").write_text(
        "autorizados:autorizados\nest_partida:partidas\nsolicitudes:/etc\n"
    )
    etc = _admin("import", "espol", str(d))
    (d / "server.cfg").write_text(
        "autorizados:autorizados\nest_partida:partidas\nsolicitudes:solicitudes\n"
    )
    with open(d / "autorizados" / "usuarios", "ab") as f:
        f.truncate(f.tell() + 300 * 1024 * 1024)
    huge = _admin("import", "espol", str(d))
    (d / "autorizados" / "usuarios").write_bytes(
        (example / "autorizados" / "usuarios").read_bytes()
    )
    whole = _admin("import", "espol", str(d))
    return (
        f"solicitudes:/etc: exit {etc[0]}, '{etc[1]}', {etc[2]:.2f} s, peak RSS "
        f"{etc[3] / 1024:.0f} MiB; a 300 MB line in usuarios: exit "
        f"{huge[0]}, '{huge[1]}', {huge[2]:.2f} s, peak RSS {huge[3] / 1024:.0f} MiB; "
        f"the same directory without it: exit {whole[0]}, {whole[2]:.2f} s, peak RSS "
        f"{whole[3] / 1024:.0f} MiB"
    )


CHAT_TEXTS = {
    "U+3164 (Hangul filler)": "\u3164",
    "U+2800 (empty braille)": "\u2800",
    "e and 400 U+0301 (combining acute)": "e" + "\u0301" * 400,
    "U+0378 (unassigned)": "\u0378",
    "U+E000 (private use)": "\ue000",
}


def chat_unseen(address: tuple[str, int], db: Database) -> str:
    """CHAT of texts that show nothing, by a player of the game."""
    _users(db, "cw", "cb")
    accounts, games = Accounts(db), Games(db)
    w, b = accounts.login("cw", PASSWORD), accounts.login("cb", PASSWORD)
    games.challenge(b.id, "cw")
    gid = games.accept(w.id, "B", "cb")
    c = session(address, "cw", "127.0.36.1")
    out = []
    for what, text in CHAT_TEXTS.items():
        code, reason = c.cmd(f"CHAT:P{gid:07d}:{text}")
        out.append(f"{what}: {code} '{reason}'")
    ok = c.cmd(f"CHAT:P{gid:07d}:good luck")
    c.close()
    return "; ".join(out) + f"; then 'good luck': {ok[0]}"


SCENARIOS: dict[str, Callable[[tuple[str, int], Database], str]] = {
    "held": held_attempts,
    "dropped": dropped_attempts,
    "burst": burst,
    "unsu": unsu_oracle,
    "silent": silent_flood,
    "subs": subs_flood,
    "scrape": scrape_flood,
    "draw": draw_offer,
    "events": event_flood,
    "sessions": sessions_of_one_account,
    "private": private_game,
    "seeks": seek_flood,
    "import": import_espol,
    "chat": chat_unseen,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", nargs="*", choices=list(SCENARIOS), help="run only these")
    p.add_argument(
        "--server-args",
        default="",
        help="more arguments for every server started (one string, split as a shell does)",
    )
    args = p.parse_args()
    for name in args.only or list(SCENARIOS):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite:///{Path(tmp) / 'hostile.sqlite3'}"
            db = Database(url)
            upgrade(db)
            Accounts(db).add_user("victim", PASSWORD)
            extra = []
            RUN.update(url=url, tmp=tmp, clock=str(Path(tmp) / "clock"))
            if name == "draw":
                _set_time(START_MS)
                extra = ["--clock-file", RUN["clock"]]
            if name == "scrape":
                METRICS[name] = _free_port()
                extra = ["--metrics-port", str(METRICS[name])]
            extra += shlex.split(args.server_args)
            server = ServerProcess(url, extra, source_dir=None, log_path=Path(tmp) / "server.log")
            host, port = server.start()
            try:
                print(f"{name}: {SCENARIOS[name]((host, port), db)}", flush=True)
            finally:
                server.stop()
                db.dispose()


if __name__ == "__main__":
    main()
