"""Concurrency over TCP: races for one ply, and the fecha sync guarantee under writers.

(a) Many sessions of the player to move send different legal moves for the same ply at
    the same moment: exactly one is stored, the others fail with 834/835.
(b) The same with the sessions spread over two server processes on one database.
(c) While challengers and players write, a reader follows TRAN and PPEN by always sending
    back the last fecha it got: every challenge and every game change must reach it.

No timing is asserted; sleeps only spread the writes over several seconds (fechas are
whole seconds, so changes must straddle second boundaries to test the guarantee).
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import chess
import pytest
from sqlalchemy import select

from ajedrez.store.models import GameRequest, Move, User
from tests.support.common import PASSWORD
from tests.support.espol import Conn, Reply
from tests.support.play import (
    challenge_and_accept,
    jgda,
    jugada,
    move_rows,
    posicion,
    promocion,
    quiet_line,
    since_answer,
    spar,
    spar_record,
    stat,
)
from tests.support.server import ServerProcess, start_server
from tests.support.together import run_together

SESSIONS = 16  # sessions of the player to move racing for one ply
OPPONENT_SESSIONS = 4  # sessions of the other player sending for the same ply
RACED_PLIES = 8


# Up to ~40 sessions come from 127.0.0.1 at once here; the default per-address cap is lower.
WIDE_OPEN = ("--max-connections-per-address", "512")


@pytest.fixture(scope="module")
def servers(database_url: str, db) -> Iterator[list[ServerProcess]]:  # type: ignore[no-untyped-def]
    """Two server processes on the test database (``db`` has brought its schema up to date)."""
    started: list[ServerProcess] = []
    try:
        for _ in range(2):
            started.append(start_server(database_url, *WIDE_OPEN))
        yield started
    finally:
        for srv in started:
            srv.stop()


@pytest.fixture
def connect_as() -> Iterator[Callable[[ServerProcess, str], Conn]]:
    """Log in on a given server; every connection is closed after the test."""
    opened: list[Conn] = []

    def do(srv: ServerProcess, name: str) -> Conn:
        conn = srv.connect()
        opened.append(conn)
        r = conn.cmd(f"USER:{name}")
        assert r.code == 101, r
        r = conn.cmd(f"PASS:{PASSWORD}")
        assert r.code == 102, r
        return conn

    yield do
    for conn in opened:
        conn.close()


def one_reply(conn: Conn, line: str) -> Callable[[], Reply]:
    def job() -> Reply:
        conn.send(line)
        parts = conn.replies()
        assert len(parts) == 1, parts
        return parts[0]

    return job


def race_for_ply(
    pid: str, board: chess.Board, movers: list[Conn], others: list[Conn], db
) -> chess.Move:  # type: ignore[no-untyped-def]
    """All movers send a different legal move for the next ply at once; the opponent's
    sessions send one too. Returns the stored move (and checks it is the only one)."""
    ply = len(board.move_stack) + 1
    # Moves that give no check, so the next ply has plenty of legal moves to race with too.
    quiet = [mv for mv in board.legal_moves if not board.gives_check(mv)]
    candidates = sorted(quiet, key=lambda mv: mv.uci())[: len(movers)]
    assert len(candidates) >= 8, "too few legal moves for a meaningful race"
    lines = [jgda(pid, ply, mv) for mv in candidates]
    jobs = [one_reply(conn, line) for conn, line in zip(movers, lines, strict=False)]
    jobs += [one_reply(conn, lines[0]) for conn in others]
    replies = run_together(jobs)
    mine, theirs = replies[: len(candidates)], replies[len(candidates) :]

    accepted = [mv for mv, r in zip(candidates, mine, strict=True) if r.code == 208]
    assert len(accepted) == 1, [(mv.uci(), r.code) for mv, r in zip(candidates, mine, strict=True)]
    winner = accepted[0]
    for mv, r in zip(candidates, mine, strict=True):
        # The losers lost the race: the turn passed (834) or the ply is gone (835).
        assert r.code == 208 if mv == winner else r.code in (834, 835), (mv.uci(), r)
    for r in theirs:  # never the opponent's turn for this ply
        assert r.code in (834, 835), r

    rows = move_rows(db, pid)
    assert [row[0] for row in rows] == list(range(1, ply + 1))
    assert rows[-1] == (ply, jugada(winner), 0, posicion(winner), promocion(winner))
    board.push(winner)
    return winner


def _race(servers: list[ServerProcess], connect_as, new_user, db) -> None:  # type: ignore[no-untyped-def]
    white, black = new_user("race"), new_user("race")
    n = SESSIONS
    w_conns = [connect_as(servers[i % len(servers)], white) for i in range(n)]
    b_conns = [connect_as(servers[(i + 1) % len(servers)], black) for i in range(n)]
    m = challenge_and_accept(white, w_conns[0], black, b_conns[0])
    board = chess.Board()
    stored = []
    for _ in range(RACED_PLIES):
        if board.turn == chess.WHITE:
            movers, others = w_conns, b_conns[:OPPONENT_SESSIONS]
        else:
            movers, others = b_conns, w_conns[:OPPONENT_SESSIONS]
        stored.append(race_for_ply(m.pid, board, movers, others, db))
        # Every session, on either server, sees the same game.
        for conn in (w_conns[-1], b_conns[-1]):
            assert stat(conn, m.pid).next_ply == len(stored) + 1
    expected = [spar_record(i, mv) for i, mv in enumerate(stored, start=1)]
    assert spar(w_conns[1], m.pid, 0) == expected
    assert spar(b_conns[1], m.pid, 0) == expected
    assert len(move_rows(db, m.pid)) == RACED_PLIES


def test_race_for_a_ply_one_server(servers, connect_as, new_user, db):
    _race(servers[:1], connect_as, new_user, db)


def test_race_for_a_ply_two_servers(servers, connect_as, new_user, db):
    _race(servers, connect_as, new_user, db)


def test_race_same_move_from_two_sessions(servers, connect_as, new_user, db):
    """The very same move from several sessions of the player: all 208 (the later ones
    are resends), one row."""
    white, black = new_user("same"), new_user("same")
    w_conns = [connect_as(servers[i % 2], white) for i in range(6)]
    b = connect_as(servers[0], black)
    m = challenge_and_accept(white, w_conns[0], black, b)
    line = jgda(m.pid, 1, chess.Move.from_uci("d2d4"))
    replies = run_together([one_reply(conn, line) for conn in w_conns])
    assert [r.code for r in replies] == [208] * len(w_conns)
    assert move_rows(db, m.pid) == [(1, "d2d4", 0, "1127", 0)]


# == (c) the sync guarantee ====================================================================


@dataclass
class Poll:
    kind: str  # "TRAN" or "PPEN"
    started: float  # time.monotonic() before the request was sent
    since: int
    fecha: int
    items: set[str]


@dataclass
class Change:
    kind: str
    item: str  # challenger name (TRAN) or game id (PPEN)
    acked: float  # time.monotonic() after the success reply arrived
    stamp: int = -1  # the server's fecha of the change, read from the database


def _reader(conn: Conn, stop: threading.Event, polls: list[Poll]) -> None:
    fechas = {"TRAN": "0", "PPEN": "0"}
    codes = {"TRAN": 200, "PPEN": 203}

    def poll(kind: str) -> None:
        started = time.monotonic()
        since = fechas[kind]
        parts = conn.cmd_all(f"{kind}:{since}")
        fecha, recs = since_answer(parts, codes[kind])
        items = {r.split(":")[0] for r in recs}
        polls.append(Poll(kind, started, int(since), int(fecha), items))
        fechas[kind] = fecha

    while not stop.is_set():
        poll("TRAN")
        poll("PPEN")
    # One last look after every writer is done.
    poll("TRAN")
    poll("PPEN")


def _seen(change: Change, polls: list[Poll]) -> bool:
    """Some poll read after the change committed, from a fecha not past it, and listed it.

    A poll certainly read after the commit when it was sent after the writer got its
    success reply, or when its own fecha is past the change's stamp (writes that start
    after a sync read stamp at least its fecha)."""
    return any(
        p.kind == change.kind
        and p.since <= change.stamp
        and change.item in p.items
        and (p.started > change.acked or change.stamp < p.fecha)
        for p in polls
    )


def _sync(servers: list[ServerProcess], connect_as, new_user, db) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random()
    reader = new_user("sync")
    challengers = [new_user("syc") for _ in range(20)]
    opponents = [new_user("syo") for _ in range(4)]
    plies = 24

    # Games between the reader and each opponent, created before the reader starts.
    matches = []
    for i, opp in enumerate(opponents):
        mine = connect_as(servers[i % len(servers)], reader)  # the reader's own moves
        theirs = connect_as(servers[(i + 1) % len(servers)], opp)
        matches.append(challenge_and_accept(opp, theirs, reader, mine))
    chall_conns = [
        connect_as(servers[i % len(servers)], name) for i, name in enumerate(challengers)
    ]
    reading = connect_as(servers[0], reader)

    changes: list[Change] = []
    lock = threading.Lock()

    def challenger(conn: Conn, target: str, name: str) -> Callable[[], None]:
        def job() -> None:
            time.sleep(rng.uniform(0, 2.5))  # think-time: challenges straddle whole seconds
            r = conn.cmd(f"JUEG:{target}")
            acked = time.monotonic()
            assert r.code == 200, r
            with lock:
                changes.append(Change("TRAN", name, acked))

        return job

    def player(m) -> Callable[[], None]:  # type: ignore[no-untyped-def]
        line = quiet_line(chess.Board(), plies, seed=rng.randrange(1 << 30))

        def job() -> None:
            board = chess.Board()
            for ply, mv in enumerate(line, start=1):
                time.sleep(rng.uniform(0, 0.12))  # think-time: moves spread over seconds
                conn = m.w if board.turn == chess.WHITE else m.b
                r = conn.cmd(jgda(m.pid, ply, mv))
                acked = time.monotonic()
                assert r.code == 208, (m.pid, ply, r)
                board.push(mv)
                with lock:
                    changes.append(Change("PPEN", m.pid, acked))

        return job

    polls: list[Poll] = []
    stop = threading.Event()
    reader_thread = threading.Thread(target=_reader, args=(reading, stop, polls), daemon=True)
    reader_thread.start()
    try:
        jobs = [challenger(c, reader, n) for c, n in zip(chall_conns, challengers, strict=True)]
        jobs += [player(m) for m in matches]
        run_together(jobs)
    finally:
        stop.set()
        reader_thread.join(60)
    assert not reader_thread.is_alive()

    # The stamp of each change, as the server wrote it.
    with db.engine.connect() as c:
        reader_id = c.execute(select(User.id).where(User.name == reader)).scalar_one()
        requests = dict(
            c.execute(
                select(User.name, GameRequest.created_at)
                .join(GameRequest, GameRequest.challenger_id == User.id)
                .where(GameRequest.challenged_id == reader_id)
            ).all()
        )
        move_stamps = {
            (f"P{g:07d}", ply): at
            for g, ply, at in c.execute(
                select(Move.game_id, Move.ply, Move.created_at).where(
                    Move.game_id.in_([m.game_id for m in matches])
                )
            )
        }
    assert set(requests) == set(challengers)
    assert len(move_stamps) == plies * len(matches)
    per_game: dict[str, int] = {}
    for ch in changes:
        if ch.kind == "TRAN":
            ch.stamp = requests[ch.item]
        else:
            per_game[ch.item] = per_game.get(ch.item, 0) + 1
            ch.stamp = move_stamps[(ch.item, per_game[ch.item])]
    assert len(changes) == len(challengers) + plies * len(matches)

    missed = [ch for ch in changes if not _seen(ch, polls)]
    assert not missed, (missed[:5], len(polls))
    # Sanity: the chains of fechas never go backwards.
    for kind in ("TRAN", "PPEN"):
        chain = [p for p in polls if p.kind == kind]
        assert all(a.fecha <= b.fecha for a, b in itertools.pairwise(chain))
        assert all(b.since == a.fecha for a, b in itertools.pairwise(chain))


def test_sync_guarantee_one_server(servers, connect_as, new_user, db):
    _sync(servers[:1], connect_as, new_user, db)


def test_sync_guarantee_two_servers(servers, connect_as, new_user, db):
    _sync(servers, connect_as, new_user, db)
