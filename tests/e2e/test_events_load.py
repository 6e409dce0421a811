"""No event is lost (docs/protocol.md section 6): a burst of games played as fast as the
server answers, while every user's stream is cut at random moments and resumed from its
last cursor; and a client that stops reading while thousands of events are made for it.

The random choices (the games' moves, the cuts) come from one seed, printed, and taken
from ``AJEDREZ_EVENTS_SEED`` when it is set: a failure is replayed with the same seed.
(The server's timing still varies from run to run.)
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter, deque
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

import chess
import pytest

from tests.support.common import PASSWORD, wait_for
from tests.support.espol import Conn, Reply
from tests.support.events import (
    V_ALDIA,
    V_EVENTO,
    V_HUECO,
    V_LATIDO,
    Event,
    Stream,
    connect,
    parse_event,
)
from tests.support.play import PID, jgda, jugada, promocion, winner_code
from tests.support.server import ServerProcess, start_server
from tests.support.sockets import tcp_queues

PAIRS = 12
PLIES = 300  # per pair, over as many games as it takes
DROP = 0.008  # the chance, each round, that a stream is cut
DROP_CATCHING_UP = 0.1  # the same between its 219 and its 601, as the stored events come
CUT_IN_CATCH_UP = 0.03  # the chance, after each stored event read then, that it is cut
REASONS = {chess.Termination.CHECKMATE: "checkmate", chess.Termination.STALEMATE: "stalemate"}


# Many connections from 127.0.0.1; heartbeats after short quiet spells, so that streams
# are often resumed from a 603's cursor too.
MANY = ("--max-connections-per-address", "1000", "--event-heartbeat", "0.05")


@pytest.fixture(scope="module")
def load_server(database_url: str, db) -> Iterator[ServerProcess]:  # type: ignore[no-untyped-def]
    srv = start_server(database_url, *MANY)
    yield srv
    srv.stop()


# Layouts, and the size of the burst (pairs, plies a pair) in each.
LAYOUTS = {"one process": (PAIRS, PLIES), "--workers 2": (8, 250), "two servers": (8, 250)}


@pytest.fixture(params=list(LAYOUTS))
def layout(request, database_url: str, load_server) -> Iterator[list[ServerProcess]]:  # type: ignore[no-untyped-def]
    """The servers a test's clients spread over: one process; one server of two workers
    (each connection goes to either); two servers on the one database."""
    if request.param == "one process":
        yield [load_server]
        return
    if request.param == "--workers 2":
        started = [start_server(database_url, "--workers", "2", *MANY)]
        assert wait_for(lambda: started[0].log_text().count("serving") >= 2)
    else:
        started = [start_server(database_url, *MANY) for _ in range(2)]
    yield started
    for srv in started:
        srv.stop()


@pytest.fixture
def seed() -> int:
    value = int(os.environ.get("AJEDREZ_EVENTS_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"AJEDREZ_EVENTS_SEED={value}")
    return value


def player(srv: ServerProcess, name: str, opened: list[Conn]) -> Conn:
    c = srv.connect()
    opened.append(c)
    assert c.cmd(f"USER:{name}").code == 101
    assert c.cmd(f"PASS:{PASSWORD}").code == 102
    return c


# -- the players: each pair plays games one after another, one command a round ---------------


@dataclass
class GameRecord:
    pid: str
    white: str
    black: str
    moves: list[chess.Move] = field(default_factory=list)
    fens: list[str] = field(default_factory=list)
    sans: list[str] = field(default_factory=list)
    offers: int = 0
    winner: int = 0
    reason: str | None = None  # the motivo when the document names it


Step = tuple[Conn, str, int]


@dataclass
class Pair:
    white: str
    black: str
    w: Conn
    b: Conn
    rng: random.Random
    plies: int
    games: list[GameRecord] = field(default_factory=list)

    def script(self) -> Generator[Step, Reply, None]:
        """The pair's commands, each with the code its answer must have."""
        w, b, rng = self.w, self.b, self.rng
        played = 0
        while played < self.plies:
            yield (w, f"JUEG:{self.black}", 200)
            r = yield (b, f"ACEP:N:{self.white}", 202)
            assert PID.fullmatch(r.text), r
            game = GameRecord(r.text, self.white, self.black)
            self.games.append(game)
            board = chess.Board()
            # One offer per move of its maker's (docs/protocol.md, TBLS).
            may_offer = {chess.WHITE: True, chess.BLACK: True}
            while board.outcome() is None and played < self.plies:
                first = rng.random() < 0.5
                if rng.random() < 0.02 and may_offer[first]:  # a draw offered and declined
                    offerer, answerer = (w, b) if first else (b, w)
                    names = (self.white, self.black) if first else (self.black, self.white)
                    yield (offerer, f"TBLS:{game.pid}:{names[1]}", 209)
                    yield (answerer, f"RTBL:{game.pid}:N:{names[0]}", 210)
                    may_offer[first] = False
                    game.offers += 1
                move = rng.choice(sorted(board.legal_moves, key=lambda m: m.uci()))
                mover = w if board.turn == chess.WHITE else b
                may_offer[board.turn] = True
                yield (mover, jgda(game.pid, len(board.move_stack) + 1, move), 208)
                game.sans.append(board.san(move))
                board.push(move)
                game.moves.append(move)
                game.fens.append(board.fen())
                played += 1
            outcome = board.outcome()
            if outcome is not None:  # the server ends it by itself
                game.winner = winner_code(outcome)
                game.reason = REASONS.get(outcome.termination)
            elif rng.random() < 0.5 or not may_offer[chess.WHITE]:
                loser_white = rng.random() < 0.5
                loser, other = (w, self.black) if loser_white else (b, self.white)
                yield (loser, f"REND:{game.pid}:{other}", 211)
                game.winner, game.reason = (2 if loser_white else 1), "resignation"
            else:
                yield (w, f"TBLS:{game.pid}:{self.black}", 209)
                yield (b, f"RTBL:{game.pid}:S:{self.white}", 210)
                game.offers += 1
                game.winner, game.reason = 3, "agreement"


def run_scripts(pairs: list[Pair], each_round=lambda n: None) -> int:  # type: ignore[no-untyped-def]
    """Every pair's script, one command of each a round, sent before any answer is read
    (so the server has them all at once); ``each_round(n)`` after each. Returns the rounds."""
    scripts = [p.script() for p in pairs]
    steps: list[Step | None] = [next(s) for s in scripts]
    rounds = 0
    while any(steps):
        live = [i for i, st in enumerate(steps) if st is not None]
        for i in live:
            conn, line, _ = steps[i]  # type: ignore[misc]
            conn.send(line)
        for i in live:
            conn, line, code = steps[i]  # type: ignore[misc]
            r = conn.reply()
            assert r.code == code, (line, r)
            try:
                steps[i] = scripts[i].send(r)
            except StopIteration:
                steps[i] = None
        rounds += 1
        each_round(rounds)
    return rounds


# -- an observer: a user's stream, cut and resumed ------------------------------------------


class Observer:
    """One user's client that streams, keeps the cursor of the last thing it received
    (600, 601, 603) and, when cut, reconnects with it (USER, PASS and EVEN pipelined)."""

    def __init__(self, servers: list[ServerProcess], name: str, rng: random.Random) -> None:
        self.servers, self.name, self.rng = servers, name, rng
        self.cursor: int | None = None
        self.conn: Stream | None = None
        self.answers: deque[int] = deque()
        self.last_here = 0  # the last cursor received on this connection
        self.seen: dict[int, Event] = {}
        self.duplicates = 0
        self.cuts = 0
        self.cut_at: Counter[str] = Counter()  # when: logging in, catching up, live
        self.caught_up = False
        self.down_until = 0
        self.round = 0
        self.calm = False  # no more cuts
        self.cursor_from = 219  # what gave the cursor: 219, 600, 601 or 603
        self.resumed_from: Counter[int] = Counter()

    def open(self) -> None:
        self.resumed_from[self.cursor_from] += 1
        srv = self.rng.choice(self.servers)  # resumed wherever it reconnects
        s = Stream(srv.host, srv.port, 20)
        even = "EVEN" if self.cursor is None else f"EVEN:{self.cursor}"
        s.send(f"USER:{self.name}\r\nPASS:{PASSWORD}\r\n{even}")
        self.conn, self.answers = s, deque([101, 102, 219])
        self.last_here = self.cursor or 0
        self.caught_up = False

    def cut(self) -> None:
        """Close the connection: whatever is still on its way, or read and not yet
        handled, is lost with it. Back after a few rounds, or at once."""
        assert self.conn is not None
        self.cuts += 1
        self.cut_at["live" if self.caught_up else "logging in" if self.answers else "catch-up"] += 1
        self.conn.close()
        self.conn = None
        self.down_until = self.round + self.rng.randrange(8)

    def pump(self) -> None:
        s = self.conn
        if s is None:
            return
        s.poll()
        while s.answers:
            r = s.answers.popleft()
            assert self.answers, f"{self.name}: unexpected answer {r}"
            code = self.answers.popleft()
            assert r.code == code, (self.name, r)
            if code == 219:
                if self.cursor is None:
                    self.cursor = self.last_here = int(r.text)
                else:
                    assert int(r.text) == self.cursor, (self.name, self.cursor, r)
        while s.pending:
            r = s.pending.popleft()
            assert not self.answers, f"{self.name}: {r} before the 219"
            if r.code == V_EVENTO:
                e = parse_event(r.text)
                assert e.cursor > self.last_here, (self.name, self.last_here, e.raw)
                self.last_here = e.cursor
                if e.cursor in self.seen:
                    assert self.seen[e.cursor] == e, (self.seen[e.cursor], e)
                    self.duplicates += 1
                self.seen[e.cursor] = e
                self.cursor, self.cursor_from = e.cursor, V_EVENTO
                if self.catching_up and not self.calm and self.rng.random() < CUT_IN_CATCH_UP:
                    self.cut()  # in the middle of the stored events
                    return
                continue
            elif r.code in (V_ALDIA, V_LATIDO):
                assert int(r.text) >= self.last_here, (self.name, self.last_here, r)
                self.caught_up = True
                # A cursor the client may store: every later event must come after it.
                self.last_here = int(r.text)
            else:
                assert r.code != V_HUECO, f"{self.name}: a gap after a recent cursor: {r}"
                raise AssertionError(f"{self.name}: unexpected {r}")
            self.cursor = int(r.text)
            self.cursor_from = r.code

    def tick(self, rounds: int) -> None:
        self.round = rounds
        if self.conn is None:
            if rounds >= self.down_until:
                self.open()
        elif self.rng.random() < (DROP_CATCHING_UP if self.catching_up else DROP):
            self.pump()
            if self.conn is not None:
                self.cut()
        self.pump()

    @property
    def catching_up(self) -> bool:
        """Between the 219 and the 601."""
        return not (self.caught_up or self.answers)

    def settle(self) -> int:
        """No more cuts: back if cut, read what came; the last cursor received."""
        self.calm = True
        if self.conn is None:
            self.open()
        self.pump()
        return max(self.seen, default=0)


def user_events(srv: ServerProcess, name: str, opened: list[Conn]) -> dict[int, Event]:
    """Everything the server keeps for ``name``: a fresh EVEN:0."""
    s = connect(srv, name)
    opened.append(s)
    got = s.subscribe(0)
    assert got.gap is None, got
    return {e.cursor: e for e in got.events}


def check_games(pairs: list[Pair], seen_by: dict[str, dict[int, Event]]) -> None:
    """Each game as each of its players received it: the moves sent, plies 1..N with no
    gap, the position after each, the offers, and how it ended."""
    for p in pairs:
        for g in p.games:
            for name in (g.white, g.black):
                evs = [e for _, e in sorted(seen_by[name].items()) if e.fields[:1] == (g.pid,)]
                turns = [e for e in evs if e.kind == "FIN_DE_TURNO"]
                where = (name, g.pid)
                assert [int(e["ply"]) for e in turns] == list(range(1, len(g.moves) + 1)), where
                assert [e["jugada"] for e in turns] == [jugada(m) for m in g.moves], where
                assert [e["promocion"] for e in turns] == [str(promocion(m)) for m in g.moves]
                assert [e["san"] for e in turns] == g.sans, where
                assert [e["fen"] for e in turns] == g.fens, where
                movers = [g.white, g.black]
                assert [e["turno"] for e in turns] == [
                    movers[i % 2 == 0] for i in range(len(turns))
                ]
                kinds = Counter(e.kind for e in evs)
                assert kinds["INICIO_PARTIDA"] == 1, (where, kinds)
                assert kinds["TABLAS"] == g.offers, (where, kinds)
                assert kinds["TABLAS_RECHAZADAS"] + kinds["TABLAS_ACEPTADAS"] == g.offers
                assert kinds["FINALIZACION"] == 1, (where, kinds)
                assert evs[-1].kind == "FINALIZACION", (where, evs[-1].raw)
                assert evs[-1]["ganador"] == str(g.winner), (where, evs[-1].raw)
                if g.reason is not None:
                    assert evs[-1]["motivo"] == g.reason, (where, evs[-1].raw)


def test_no_event_is_lost_across_random_reconnects(layout, new_user, seed, request):
    servers, rng = layout, random.Random(seed)
    count, plies = LAYOUTS[request.node.callspec.params["layout"]]
    opened: list[Conn] = []
    observers: list[Observer] = []
    try:
        pairs = []
        for i in range(count):
            white, black = new_user("lw"), new_user("lb")
            pairs.append(
                Pair(
                    white,
                    black,
                    player(servers[i % len(servers)], white, opened),
                    player(servers[(i + 1) % len(servers)], black, opened),
                    random.Random(rng.randrange(1 << 32)),
                    plies,
                )
            )
        names = [n for p in pairs for n in (p.white, p.black)]
        observers = [Observer(servers, n, random.Random(rng.randrange(1 << 32))) for n in names]
        for o in observers:
            o.open()
        for o in observers:  # every stream has begun before anything happens
            assert wait_for(lambda o=o: (o.pump(), o.caught_up)[1], timeout=20), o.name

        started = time.monotonic()
        rounds = run_scripts(pairs, lambda n: [o.tick(n) for o in observers])
        burst = time.monotonic() - started

        expected = {n: user_events(rng.choice(servers), n, opened) for n in names}
        for o in observers:  # the last cut ones come back, and all catch up
            last = max(expected[o.name])
            assert wait_for(lambda o=o, last=last: o.settle() >= last, timeout=30), (
                seed,
                o.name,
                last,
                max(o.seen, default=0),
            )

        for o in observers:
            mine = expected[o.name]
            missing = sorted(set(mine) - set(o.seen))
            extra = sorted(set(o.seen) - set(mine))
            assert not missing and not extra, (seed, o.name, missing[:10], extra[:10])
            for c, e in mine.items():
                assert o.seen[c] == e, (seed, o.name, o.seen[c].raw, e.raw)
        check_games(pairs, {o.name: o.seen for o in observers})

        total = sum(len(v) for v in expected.values())
        moves = sum(len(g.moves) for p in pairs for g in p.games)
        cuts = sum(o.cuts for o in observers)
        when = sum((o.cut_at for o in observers), Counter())
        print(
            f"seed {seed}: {moves} moves in {sum(len(p.games) for p in pairs)} games, "
            f"{rounds} rounds in {burst:.1f} s; {total} events delivered to {len(names)} "
            f"users; {cuts} cuts ({dict(when)}), resumed from the cursor of "
            f"{dict(sum((o.resumed_from for o in observers), Counter()))}; "
            f"{sum(o.duplicates for o in observers)} duplicates"
        )
        assert total > 2 * count * plies and cuts > 20, (total, cuts)  # a move: two users
    finally:
        for o in observers:
            if o.conn is not None:
                o.conn.close()
        for c in opened:
            c.close()
    for srv in servers:
        assert srv.proc.poll() is None and "Traceback" not in srv.log_text()


# -- a client that does not read ------------------------------------------------------------


def test_a_client_that_does_not_read_catches_up_later(load_server, new_user, seed):
    """ana plays eight games at once; one of her connections streams and reads nothing
    (small buffers) while over three thousand events are made for her. Nothing
    stalls: the games go on, her other stream follows live; when the sleeper reads, it
    gets every event, in order, once."""
    srv, rng = load_server, random.Random(seed)
    opened: list[Conn] = []
    try:
        ana = new_user("sl")
        sleeper = connect(srv, ana, rcvbuf=2048)
        opened.append(sleeper)
        start = sleeper.subscribe()
        awake = connect(srv, ana)
        opened.append(awake)
        awake.subscribe()
        pairs = []
        for _ in range(8):
            other = new_user("so")
            pairs.append(
                Pair(
                    ana,
                    other,
                    player(srv, ana, opened),
                    player(srv, other, opened),
                    random.Random(rng.randrange(1 << 32)),
                    400,
                )
            )
        live: dict[int, Event] = {}

        def follow(_rounds: int) -> None:  # the awake stream keeps up as things happen
            awake.poll()
            while awake.pending:
                r = awake.pending.popleft()
                if r.code == V_EVENTO:
                    e = parse_event(r.text)
                    assert e.cursor > max(live, default=0)
                    live[e.cursor] = e

        started = time.monotonic()
        run_scripts(pairs, follow)
        burst = time.monotonic() - started
        expected = {c: e for c, e in user_events(srv, ana, opened).items() if c > start.aldia}
        assert len(expected) > 3000, len(expected)
        # More than the kernel holds between the server and the sleeper was made for it:
        # the server had to keep the rest (or find it again in the store). The kernel's
        # share is read, not assumed, because the server's send buffer grows by itself
        # (tcp_wmem autotuning) to a size that differs from machine to machine.
        size = sum(6 + len(e.raw.encode()) for e in expected.values())
        me, peer = sleeper.sock.getsockname(), sleeper.sock.getpeername()
        queues = tcp_queues()
        in_kernel = queues[(me, peer)][1] + queues[(peer, me)][0]
        assert size > in_kernel + 64 * 1024, (size, in_kernel)
        last = max(expected)
        assert wait_for(lambda: (follow(0), max(live) >= last)[1], timeout=10), (
            "the reading stream fell behind",
            max(live),
            last,
        )
        assert live == expected

        # Now the sleeper reads: everything, in order, each once.
        got: list[Event] = []
        deadline = time.monotonic() + 60
        while not got or got[-1].cursor < last:
            r = sleeper.v(timeout=max(0.1, deadline - time.monotonic()))
            if r.code == V_EVENTO:
                got.append(parse_event(r.text))
            else:  # its 601 came before: only events, and heartbeats, from then on
                assert r.code == V_LATIDO, r
        cursors = [e.cursor for e in got]
        assert cursors == sorted(set(cursors)), "out of order or twice on one stream"
        assert {e.cursor: e for e in got} == expected
        assert sleeper.quiet(0.3) == []

        # A client that stops reading in the middle of its catch-up (EVEN:0, all of the
        # above), while more happens: later it gets the stored events, one 601, the new
        # events, in order, each once.
        late = connect(srv, ana, rcvbuf=2048)
        opened.append(late)
        late.send("EVEN:0")
        me, peer = late.sock.getsockname(), late.sock.getpeername()
        sent: list[int] = []

        def stalled() -> bool:  # the server's side holds the same unsent bytes a while
            sent.append(tcp_queues()[(peer, me)][0])
            return len(sent) > 5 and sent[-1] > 0 and len(set(sent[-5:])) == 1

        assert wait_for(stalled, timeout=20, interval=0.1), sent[-10:]
        more = []
        for p in pairs[:5]:
            assert p.b.cmd(f"JUEG:{ana}").code == 200
            assert p.b.cmd(f"DECL:{ana}").code == 213
            more += [p.black] * 2
        r = late.frame(timeout=10)
        assert (r.code, r.text) == (219, "0"), r
        stream: list[Reply] = []
        everything = user_events(srv, ana, opened)
        assert len(everything) >= len(expected) + len(more)
        deadline = time.monotonic() + 60
        while sum(r.code == V_EVENTO for r in stream) < len(everything) or not any(
            r.code == V_ALDIA for r in stream
        ):
            try:
                stream.append(late.frame(timeout=max(0.1, deadline - time.monotonic())))
            except TimeoutError:
                events = [parse_event(r.text) for r in stream if r.code == V_EVENTO]
                raise AssertionError(
                    f"the stalled catch-up stopped: {len(events)} of {len(everything)} "
                    f"events, up to {events[-1].cursor if events else None} of "
                    f"{max(everything)}; 601s: {[r.text for r in stream if r.code == V_ALDIA]}"
                ) from None
        assert late.quiet(0.3) == []
        assert [r.code for r in stream].count(V_ALDIA) == 1, "one 601"
        assert {r.code for r in stream} <= {V_EVENTO, V_ALDIA, V_LATIDO}
        events = [parse_event(r.text) for r in stream if r.code == V_EVENTO]
        assert [e.cursor for e in events] == sorted(everything), "in order, each once"
        assert {e.cursor: e for e in events} == everything
        check_games(
            pairs, {ana: expected, **{p.black: user_events(srv, p.black, opened) for p in pairs}}
        )
        print(
            f"seed {seed}: {len(expected)} events ({size} bytes) for the sleeper, "
            f"{in_kernel} bytes of them in the kernel's buffers; burst {burst:.1f} s"
        )
    finally:
        for c in opened:
            c.close()
    assert srv.proc.poll() is None and "Traceback" not in srv.log_text()
