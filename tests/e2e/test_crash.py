"""Crash safety: an acknowledged move is durable.

Several client threads play random legal games (python-chess picks the moves) while the
server process is killed with SIGKILL at random moments and started again on the same
database. Each client remembers every move it saw acknowledged (208). A move whose reply
was lost to a kill is unknown: after the restart the client resynchronises with SPAR and
STAT; if the move was stored, it resends it exactly and must get 208 (the contract's
retry rule), and otherwise it simply goes on from what is stored.

At the end (after one last SIGKILL): every acknowledged move is in ``moves``; every game
of these players replays legally with python-chess, has ``next_ply`` = plies + 1, the
stored position and status agree with the replay; on SQLite ``PRAGMA integrity_check``
is ``ok``; ``ajedrez-admin db check`` finds no problem in the test's database. A server
restarted on the result must serve those games.

``AJEDREZ_CRASH_SEED`` and ``AJEDREZ_CRASH_KILLS`` reproduce or lengthen a run.
"""

from __future__ import annotations

import os
import random
import sqlite3
import threading
import time
import traceback
from dataclasses import dataclass, field

import chess
from sqlalchemy import bindparam, text

from ajedrez.domain.accounts import Accounts
from tests.support.common import PASSWORD, unique_name
from tests.support.espol import Closed, Conn, Reply
from tests.support.hardening import ask, log_in, sqlite_path, stored_move
from tests.support.play import (
    PID,
    jgda,
    jugada,
    move_rows,
    posicion,
    promocion,
    since_answer,
)
from tests.support.server import ServerProcess, admin, start_server

KILLS = int(os.environ.get("AJEDREZ_CRASH_KILLS", "24"))  # plus the final one
PAIRS = 6  # client threads, each playing one game at a time between its two users
MAX_PAUSE = 1.2  # seconds of play, at most, between the first move after a start and a kill
PROGRESS_TIMEOUT = 60.0  # a restarted server must acknowledge a move within this
SEED = int(os.environ.get("AJEDREZ_CRASH_SEED", str(random.randrange(1 << 32))))


class Supervisor:
    """The server currently running; clients wait here for the next one after a kill."""

    def __init__(self, srv: ServerProcess) -> None:
        self.cond = threading.Condition()
        self.srv = srv
        self.generation = 0
        self.stopping = False
        self.acked = 0  # moves acknowledged, all clients
        self.logs: list[str] = []

    def address(self) -> tuple[int, str, int]:
        with self.cond:
            return self.generation, self.srv.host, self.srv.port

    def replace(self, srv: ServerProcess) -> None:
        with self.cond:
            self.logs.append(self.srv.log_text())
            self.srv = srv
            self.generation += 1
            self.cond.notify_all()

    def wait_newer(self, generation: int) -> None:
        with self.cond:
            self.cond.wait_for(lambda: self.generation > generation or self.stopping, 120)

    def wait_acked(self, count: int, timeout: float) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.acked >= count, timeout)

    def ack(self) -> None:
        with self.cond:
            self.acked += 1
            self.cond.notify_all()


@dataclass(frozen=True)
class Acked:
    game_id: int
    ply: int
    jugada: str
    reverso: int
    posicion: str
    promocion: int


@dataclass
class Stats:
    acked: list[Acked] = field(default_factory=list)
    games: set[str] = field(default_factory=set)
    lost_replies: int = 0  # commands whose answer was cut off by a kill
    unknown_stored: int = 0  # moves with a lost reply that turned out to be stored
    unknown_lost: int = 0  # moves with a lost reply that were not stored (allowed)
    resends: int = 0  # exact resends answered 208 after a restart
    retried_401: int = 0
    finished: int = 0


class Pair(threading.Thread):
    """Two users playing game after game; the thread plays both colours."""

    def __init__(self, sup: Supervisor, white: str, black: str, seed: int) -> None:
        super().__init__(daemon=True, name=f"pair-{white}")
        self.sup = sup
        self.white, self.black = white, black
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.error: str | None = None
        self.w: Conn | None = None
        self.b: Conn | None = None
        self.generation = -1
        self.pid: str | None = None
        self.board = chess.Board()
        self.moves: list[tuple[int, str, int, str, int]] = []  # the game's stored moves
        self.pending: tuple[str, int, chess.Move, int] | None = None  # reply not seen
        self.to_resend: tuple[int, chess.Move, int] | None = None  # stored, 208 not seen

    # -- the loop ----------------------------------------------------------------------

    def run(self) -> None:
        try:
            while not self.sup.stopping:
                try:
                    if self.w is None:
                        self.connect()
                        self.resync()
                    self.step()
                except (Closed, ConnectionError):
                    # The server died under us (EOF or reset): wait for the next one.
                    self.stats.lost_replies += 1
                    self.disconnect()
                    self.sup.wait_newer(self.generation)  # a new server, listening already
        except BaseException:
            self.error = traceback.format_exc()
        finally:
            self.disconnect()

    def connect(self) -> None:
        self.generation, host, port = self.sup.address()
        self.w = log_in(host, port, self.white, PASSWORD)
        self.b = log_in(host, port, self.black, PASSWORD)

    def disconnect(self) -> None:
        for conn in (self.w, self.b):
            if conn is not None:
                conn.close()
        self.w = self.b = None

    def cmd(self, conn: Conn | None, line: str) -> Reply:
        assert conn is not None
        while True:
            reply = ask(conn, line)
            if reply.code != 401:
                return reply
            # Storage unavailable: nothing was done (contract); try again a little later.
            self.stats.retried_401 += 1
            time.sleep(0.2)  # a client's retry interval: only asking again shows it is back

    # -- games -------------------------------------------------------------------------

    def conn_of(self, color: chess.Color) -> Conn | None:
        return self.w if color == chess.WHITE else self.b

    def find_active_game(self) -> str | None:
        """PPEN: the active game between the two, if a lost ACEP reply hid its id."""
        assert self.w is not None
        self.w.send("PPEN:0")
        parts = self.w.replies()
        if parts[0].code == 401:
            self.stats.retried_401 += 1
            return None
        _, records = since_answer(parts, 203)
        active = [r.split(":")[0] for r in records if r.split(":")[1:] == [self.black, "N", "0"]]
        assert len(active) <= 1, f"two active games between {self.white} and {self.black}"
        return active[0] if active else None

    def new_game(self) -> None:
        """Challenge and accept until a game exists; any reply may have been lost before."""
        while not self.sup.stopping:
            pid = self.find_active_game()
            if pid is not None:
                self.pid = pid
                self.board, self.moves = chess.Board(), []
                self.resync()
                return
            r = self.cmd(self.w, f"JUEG:{self.black}")
            assert r.code in (200, 820, 821), r  # 820: our challenge survived a lost reply
            if r.code == 821:
                continue
            r = self.cmd(self.b, f"ACEP:N:{self.white}")
            assert r.code in (202, 822, 821), r
            if r.code == 202:
                assert PID.fullmatch(r.text), r
                self.pid = r.text
                self.board, self.moves = chess.Board(), []
                self.stats.games.add(r.text)
                return

    def resync(self) -> None:
        """Bring the board to what the server stores; settle a move whose reply was lost."""
        if self.pid is None:
            return
        self.stats.games.add(self.pid)
        stored = [(int(f[0]), f[1], int(f[2]), f[3], int(f[4])) for f in _spar(self, self.pid)]
        assert [s[0] for s in stored] == list(range(1, len(stored) + 1)), stored
        known = len(self.moves)
        assert stored[:known] == self.moves, (
            f"{self.pid}: moves this client saw stored are gone or changed: "
            f"{stored[:known]} != {self.moves}"
        )
        extra = stored[known:]
        if self.pending is not None and self.pending[0] == self.pid:
            _, ply, move, reverso = self.pending
            self.pending = None
            if extra and extra[0] == _record(ply, move, reverso):
                # Stored although the reply was lost: it is part of the game now, and an
                # exact resend must answer 208 (again after a restart if need be).
                self.stats.unknown_stored += 1
                self.adopt(ply, move, reverso)
                self.to_resend = (ply, move, reverso)
                extra = extra[1:]
            else:
                self.stats.unknown_lost += 1
        assert not extra, f"{self.pid}: moves nobody sent are stored: {extra}"
        if self.to_resend is not None:
            ply, move, reverso = self.to_resend
            assert ply == len(self.moves), (self.pid, ply, len(self.moves))
            r = self.cmd(self.conn_of(not self.board.turn), jgda(self.pid, ply, move, reverso))
            assert r.code == 208, (self.pid, ply, move, r)
            self.to_resend = None
            self.stats.resends += 1
            self.acked(ply, move, reverso)
        st = self.cmd(self.w, f"STAT:{self.pid}").text.split(":")
        assert int(st[9]) == len(self.moves) + 1, (st, len(self.moves))
        if st[4] == "2":
            self.game_over(st)

    def adopt(self, ply: int, move: chess.Move, reverso: int) -> None:
        """A move known to be stored."""
        self.board.push(move)
        self.moves.append(_record(ply, move, reverso))

    def acked(self, ply: int, move: chess.Move, reverso: int) -> None:
        """A move answered 208."""
        assert self.pid is not None
        self.stats.acked.append(Acked(int(self.pid[1:]), *_record(ply, move, reverso)))
        self.sup.ack()

    def game_over(self, st: list[str]) -> None:
        """The game is finished: it must be by the rules; the next game starts."""
        outcome = self.board.outcome(claim_draw=False)
        assert outcome is not None, (self.pid, st, self.board.fen())
        expected = 3 if outcome.winner is None else (1 if outcome.winner else 2)
        assert int(st[5]) == expected, (self.pid, st, outcome)
        self.stats.finished += 1
        self.pid = None
        self.board = chess.Board()
        self.moves = []

    def step(self) -> None:
        if self.pid is None:
            self.new_game()
            return
        if self.board.outcome(claim_draw=False) is not None:
            st = self.cmd(self.w, f"STAT:{self.pid}").text.split(":")
            assert st[4] == "2", (self.pid, st, "the server did not end the game")
            self.game_over(st)
            return
        move = self.rng.choice(sorted(self.board.legal_moves, key=chess.Move.uci))
        ply = len(self.board.move_stack) + 1
        reverso = self.rng.randrange(2)
        self.pending = (self.pid, ply, move, reverso)
        r = self.cmd(self.conn_of(self.board.turn), jgda(self.pid, ply, move, reverso))
        assert r.code == 208, (self.pid, ply, move.uci(), r)
        self.pending = None
        self.adopt(ply, move, reverso)
        self.acked(ply, move, reverso)


def _record(ply: int, move: chess.Move, reverso: int) -> tuple[int, str, int, str, int]:
    return (ply, jugada(move), reverso, posicion(move), promocion(move))


def _spar(pair: Pair, pid: str) -> list[list[str]]:
    assert pair.w is not None
    pair.w.send(f"SPAR:{pid}:0")
    parts = pair.w.replies()
    if parts[0].code == 839:
        return []
    assert all(p.code == 207 for p in parts), parts
    return [rec.split(":") for p in parts for rec in p.text.split(",")]


def test_acknowledged_moves_survive_sigkill(own_db):
    # A database of its own: ajedrez-admin db check at the end judges every game in it.
    database_url, db = own_db
    accounts = Accounts(db)
    rng = random.Random(SEED)
    names = [unique_name("k") for _ in range(2 * PAIRS)]
    for name in names:
        accounts.add_user(name, PASSWORD)
    sup = Supervisor(start_server(database_url))
    pairs = [
        Pair(sup, names[2 * i], names[2 * i + 1], rng.randrange(1 << 32)) for i in range(PAIRS)
    ]
    kills = 0
    started = time.monotonic()
    try:
        for p in pairs:
            p.start()
        for _ in range(KILLS):
            # Random moments: some play first (at least one acknowledged move since this
            # server started, so every restart is proved to serve), then a random pause.
            assert sup.wait_acked(sup.acked + 1, PROGRESS_TIMEOUT), "no move acknowledged"
            time.sleep(rng.uniform(0.0, MAX_PAUSE))  # play goes on until a random moment
            _check_clients(pairs)
            sup.srv.proc.kill()
            sup.srv.proc.wait(30)
            kills += 1
            sup.replace(start_server(database_url))
        assert sup.wait_acked(sup.acked + 1, PROGRESS_TIMEOUT), "no move acknowledged"
        time.sleep(rng.uniform(0.0, MAX_PAUSE))  # the last kill, too, at a random moment
    finally:
        with sup.cond:
            sup.stopping = True
            sup.cond.notify_all()
        for p in pairs:
            p.join(60)
        # The last moment: kill it too, and check what a crash leaves behind.
        sup.srv.proc.kill()
        sup.srv.proc.wait(30)
        kills += 1
    _check_clients(pairs)
    assert not any(p.is_alive() for p in pairs)
    logs = "\n".join([*sup.logs, sup.srv.log_text()])
    assert "Traceback" not in logs, logs[-4000:]

    acked = [a for p in pairs for a in p.stats.acked]
    game_ids = {int(pid[1:]) for p in pairs for pid in p.stats.games}
    _check_acknowledged_stored(db, acked)
    replayed = _check_games_replay(db, names)
    assert game_ids <= replayed
    integrity = _check_sqlite_integrity(database_url)
    checked = admin(database_url, "db", "check")
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
    assert checked.stdout.splitlines()[-1] == "ok", checked.stdout

    # A server started on what the crashes left serves the games as stored.
    srv = start_server(database_url)
    try:
        first = pairs[0]
        with log_in(srv.host, srv.port, first.white, PASSWORD) as conn:
            for pid in sorted(first.stats.games)[-3:]:
                rows = move_rows(db, pid)
                conn.send(f"SPAR:{pid}:0")
                parts = conn.replies()
                got = [] if parts[0].code == 839 else [r for p in parts for r in p.text.split(",")]
                assert got == [":".join(map(str, row)) for row in rows], pid
    finally:
        srv.stop()

    figures = {
        "seed": SEED,
        "kills": kills,
        "acknowledged moves": len(acked),
        "games": len(game_ids),
        "games finished by the rules": sum(p.stats.finished for p in pairs),
        "commands cut off by a kill": sum(p.stats.lost_replies for p in pairs),
        "unacknowledged moves found stored (resent, 208)": sum(
            p.stats.unknown_stored for p in pairs
        ),
        "unacknowledged moves not stored": sum(p.stats.unknown_lost for p in pairs),
        "401 retried": sum(p.stats.retried_401 for p in pairs),
        "integrity_check": integrity,
        "backend": "sqlite" if db.is_sqlite else "postgresql",
        "seconds": round(time.monotonic() - started, 1),
    }
    print("\ncrash-safety figures: " + ", ".join(f"{k}={v}" for k, v in figures.items()))
    assert kills >= 20
    assert len(acked) >= kills  # every restart served at least one move


def _check_clients(pairs: list[Pair]) -> None:
    errors = [p.error for p in pairs if p.error]
    assert not errors, "\n".join(errors)


def _games_of(db, name: str) -> set[int]:  # type: ignore[no-untyped-def]
    with db.engine.connect() as c:
        return set(
            c.scalars(
                text(
                    "SELECT g.id FROM games g JOIN users u ON u.id IN (g.white_id, g.black_id) "
                    "WHERE u.name = :n"
                ),
                {"n": name},
            )
        )


def _check_acknowledged_stored(db, acked: list[Acked]) -> None:  # type: ignore[no-untyped-def]
    stored: set[tuple] = set()
    for gid in {a.game_id for a in acked}:
        stored |= {(gid, *row) for row in move_rows(db, f"P{gid:07d}")}
    missing = [
        a
        for a in acked
        if (a.game_id, a.ply, a.jugada, a.reverso, a.posicion, a.promocion) not in stored
    ]
    assert not missing, f"{len(missing)} acknowledged moves are not stored: {missing[:10]}"


def _check_games_replay(db, names: list[str]) -> set[int]:  # type: ignore[no-untyped-def]
    """Every game of these players replays legally and its row agrees with the replay."""
    with db.engine.connect() as c:
        games = c.execute(
            text(
                "SELECT g.id, g.next_ply, g.status, g.winner, g.fen FROM games g "
                "JOIN users w ON w.id = g.white_id WHERE w.name IN :names"
            ).bindparams(bindparam("names", expanding=True)),
            {"names": names},
        ).all()
    assert games
    for gid, next_ply, status, winner, fen in games:
        rows = move_rows(db, f"P{gid:07d}")
        assert [r[0] for r in rows] == list(range(1, len(rows) + 1)), (gid, rows)
        assert next_ply == len(rows) + 1, (gid, next_ply, len(rows))
        board = chess.Board()
        for ply, jug, _reverso, pos, promo in rows:
            move = stored_move(jug, promo)
            assert move in board.legal_moves, (gid, ply, jug, promo, board.fen())
            assert pos == f"{move.from_square:02d}{move.to_square:02d}", (gid, ply, pos)
            board.push(move)
        assert fen == board.fen(), (gid, fen, board.fen())
        outcome = board.outcome(claim_draw=False)
        if outcome is None:
            assert (status, winner) == (0, 0), (gid, status, winner)
        else:
            expected = 3 if outcome.winner is None else (1 if outcome.winner else 2)
            assert (status, winner) == (2, expected), (gid, status, winner, outcome)
    return {g[0] for g in games}


def _check_sqlite_integrity(database_url: str) -> str:
    path = sqlite_path(database_url)
    if path is None:
        return "n/a (PostgreSQL)"
    con = sqlite3.connect(path, timeout=30)
    try:
        rows = con.execute("PRAGMA integrity_check").fetchall()
        fk = con.execute("PRAGMA foreign_key_check").fetchall()
    finally:
        con.close()
    assert rows == [("ok",)], rows
    assert fk == [], fk
    return rows[0][0]
