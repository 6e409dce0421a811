"""The event stream over TCP (EVEN, docs/protocol.md section 6), black box: a real server
process, clients written from the document alone (tests/support/events.py).

What a user receives live (challenges, games, moves, draws, endings), commands answered
on a streaming connection, resuming from a cursor, a user leaving the service (UNSU and
``ajedrez-admin users remove``), malformed cursors, EVEN before login, the idle timeout
and the heartbeat. The burst with random reconnects is in test_events_load.py, the
fan-out across processes and servers in test_events_fanout.py.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator

import chess
import pytest

from tests.support.common import wait_for
from tests.support.espol import Conn
from tests.support.events import (
    V_ALDIA,
    V_EVENTO,
    V_LATIDO,
    Event,
    Stream,
    bodies,
    connect,
    fields_of,
    parse_event,
)
from tests.support.play import (
    FOOLS_MATE,
    KNIGHT_SHUFFLE,
    LOYD_STALEMATE,
    PID,
    Match,
    jgda,
    jugada,
    long_line,
    promocion,
)
from tests.support.server import ServerProcess, admin, start_server

# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ev_server(database_url: str, db) -> Iterator[ServerProcess]:  # type: ignore[no-untyped-def]
    srv = start_server(database_url, "--max-connections-per-address", "1000")
    yield srv
    srv.stop()


@pytest.fixture
def conns() -> Iterator[list[Conn]]:
    opened: list[Conn] = []
    yield opened
    for c in opened:
        c.close()


@pytest.fixture
def stream(ev_server: ServerProcess, conns: list[Conn]) -> Callable[..., Stream]:
    """stream(name): a logged-in ``Stream`` to the module's server, not streaming yet."""

    def make(name: str | None = None, srv: ServerProcess | None = None, **kw: object) -> Stream:
        s = connect(srv or ev_server, name, **kw)  # type: ignore[arg-type]
        conns.append(s)
        return s

    return make


@pytest.fixture
def watching(stream: Callable[..., Stream]) -> Callable[..., Stream]:
    """watching(name): a connection of ``name`` that streams from now (EVEN, 219, 601)."""

    def make(name: str, srv: ServerProcess | None = None) -> Stream:
        s = stream(name, srv)
        got = s.subscribe()
        assert got.events == [] and got.gap is None, got
        return s

    return make


def match(white: str, w: Stream, black: str, b: Stream, control: str = "") -> Match:
    r = w.cmd(f"JUEG:{black}" + (f":{control}" if control else ""))
    assert (r.code, r.text) == (200, ""), r
    r = b.cmd(f"ACEP:N:{white}")
    assert r.code == 202 and PID.fullmatch(r.text), r
    return Match(r.text, white, black, w, b)


def increasing(s: Stream) -> list[int]:
    """The cursors of every event this connection received: strictly increasing."""
    cursors = [parse_event(r.text).cursor for r in s.received if r.code == V_EVENTO]
    assert all(a < b for a, b in itertools.pairwise(cursors)), cursors
    return cursors


def same_for_all(
    streams: list[Stream], *kinds: str, timeout: float = 10, at: int | None = None
) -> list[Event]:
    """The next events of every stream are of ``kinds``, the same on each (their bodies);
    returns the first stream's. Their time is ``at`` when given (a server that reads its
    time from a file), else about now (the server's clock is this machine's)."""
    got = [s.expect(*kinds, timeout=timeout) for s in streams]
    for other in got[1:]:
        assert bodies(other) == bodies(got[0]), (other, got[0])
    now = time.time() * 1000
    for e in got[0]:
        if at is None:
            assert abs(e.ms - now) < 120_000, e
        else:
            assert e.ms == at, (e, at)
    return got[0]


def check_move(e: Event, m: Match, move: chess.Move, ply: int) -> None:
    """A FIN_DE_TURNO of ``move`` (already pushed on ``m.board``) at ``ply``."""
    before = m.board.copy()
    before.pop()
    assert e.kind == "FIN_DE_TURNO", e
    fields_of(
        e,
        m.pid,
        str(ply),
        jugada(move),  # as JGDA sent it: no promotion letter
        str(promocion(move)),
        before.san(move),
        m.name(m.board.turn),
        m.board.fen(),
    )


def play_and_see(m: Match, streams: list[Stream], *sans: str) -> None:
    for san in sans:
        move = m.move(san)
        ply = m.ply
        m.play(san)
        [e] = same_for_all(streams, "FIN_DE_TURNO")
        check_move(e, m, move, ply)


# == 1. live events ==========================================================================


def test_even_without_a_cursor_streams_from_now(stream, watching, new_user):
    ana, bob = new_user("ea"), new_user("eb")
    a, b = stream(ana), stream(bob)
    earlier = match(ana, a, bob, b)  # events before the stream starts
    earlier.play("e4")
    s = stream(ana)
    start = s.even()
    got = s.until_caught_up(start)
    assert got.gap is None and got.events == [], got  # nothing stored is replayed
    assert got.aldia >= start
    empty = stream(ana)  # an empty cursor is as none
    assert empty.cmd("EVEN:").code == 219
    assert empty.until_caught_up(start).events == []
    earlier.play("e5")
    [e] = s.expect("FIN_DE_TURNO")
    assert empty.event() == e
    assert e.cursor > got.aldia
    assert e["partida"] == earlier.pid and e["ply"] == "2" and e["jugada"] == "e7e5"
    # The 219's cursor is a place to resume from: the moves before it are not after it.
    again = stream(ana).subscribe(start)
    assert bodies(again.events) == [e.body]


def test_a_stream_from_now_starts_after_every_change_acknowledged_before_it(stream, new_user):
    """EVEN without a cursor right after a move's 208 (pipelined behind the JGDA on the
    same connection, or on another connection once the opponent's move was answered):
    the move is behind the stream's start. Its 219 and its 601 stand at or after the
    move's event, which never comes as live (issue: a stale cursor sent it, or put the
    601 after it)."""
    ana, bob = new_user("na"), new_user("nb")
    a, b = stream(ana), stream(bob)
    m = match(ana, a, bob, b)
    for san in ("e4", "e5", "Nf3", "Nc6", "Bb5", "a6"):
        move = m.board.parse_san(san)
        line = jgda(m.pid, m.board.ply() + 1, move)
        m.board.push(move)
        watcher = stream(ana)
        if m.board.ply() % 2:  # ana's move: JGDA and EVEN in one write
            watcher.send_raw(f"{line}\nEVEN\n".encode())
            r = watcher.reply()
            assert (r.code, r.text) == (208, ""), r
        else:  # bob's move answered, then ana's stream from now
            r = b.cmd(line)
            assert (r.code, r.text) == (208, ""), r
            watcher.send("EVEN")
        r = watcher.reply()
        assert r.code == 219, r
        got = watcher.until_caught_up(int(r.text))
        assert got.events == [] and got.aldia == int(r.text), (san, r, got)
        assert watcher.quiet(0.2) == [], san  # the move is not sent as live either
        watcher.send("EVEN:0")  # and it is the newest event there is
        r = watcher.reply()
        assert r.code == 219, r
        stored = watcher.until_caught_up(0)
        assert stored.events[-1].kind == "FIN_DE_TURNO", stored
        assert stored.events[-1].cursor == got.aldia, (stored.events[-1], got)
        watcher.close()


def test_challenges_made_declined_and_withdrawn(stream, watching, new_user):
    ana, bob = new_user("ca"), new_user("cb")
    a, b = stream(ana), stream(bob)
    sa, sb = watching(ana), watching(bob)
    both = [sa, sb]

    assert a.cmd(f"JUEG:{bob}").code == 200
    [e] = same_for_all(both, "DESAFIO")
    fields_of(e, ana, bob, "none")
    assert b.cmd(f"DECL:{ana}").code == 213  # the challenged declines
    [e] = same_for_all(both, "DESAFIO_RECHAZADO")
    fields_of(e, ana, bob)

    assert a.cmd(f"JUEG:{bob}:3d").code == 200
    [e] = same_for_all(both, "DESAFIO")
    fields_of(e, ana, bob, "3d")
    assert a.cmd(f"DECL:{bob}").code == 213  # the maker withdraws
    [e] = same_for_all(both, "DESAFIO_RETIRADO")
    fields_of(e, ana, bob)

    assert b.cmd(f"JUEG:{ana}:10m").code == 200  # the other way round
    [e] = same_for_all(both, "DESAFIO")
    fields_of(e, bob, ana, "10m")
    assert b.cmd(f"DECL:{ana}").code == 213
    [e] = same_for_all(both, "DESAFIO_RETIRADO")
    fields_of(e, bob, ana)

    assert a.cmd(f"DECL:{bob}").code == 822  # nothing left: no event
    for s in both:
        assert s.quiet(0.3) == []
        increasing(s)


def test_a_game_from_challenge_to_draw_by_agreement(stream, watching, new_user):
    ana, bob = new_user("ga"), new_user("gb")
    a, b = stream(ana), stream(bob)
    both = [watching(ana), watching(bob), watching(bob)]  # bob on two machines

    assert a.cmd(f"JUEG:{bob}:3d").code == 200
    same_for_all(both, "DESAFIO")
    r = b.cmd(f"ACEP:N:{ana}:3d")
    assert r.code == 202, r
    m = Match(r.text, ana, bob, a, b)
    [e] = same_for_all(both, "INICIO_PARTIDA")
    fields_of(e, m.pid, ana, bob, "3d", ana)

    # A capture, en passant, castling on both sides, a check.
    play_and_see(m, both, "e4", "Nf6", "e5", "d5", "exd6", "exd6", "Nf3", "Be7", "Bc4")
    play_and_see(m, both, "O-O", "O-O", "Nc6", "Bxf7+")

    assert a.cmd(f"TBLS:{m.pid}:{bob}").code == 209  # white offers, black to move
    [e] = same_for_all(both, "TABLAS")
    fields_of(e, m.pid, ana)
    assert b.cmd(f"RTBL:{m.pid}:N:{ana}").code == 210
    [e] = same_for_all(both, "TABLAS_RECHAZADAS")
    fields_of(e, m.pid, bob)
    play_and_see(m, both, "Rxf7")
    assert b.cmd(f"TBLS:{m.pid}:{ana}").code == 209
    [e] = same_for_all(both, "TABLAS")
    fields_of(e, m.pid, bob)
    assert a.cmd(f"RTBL:{m.pid}:S:{bob}").code == 210
    accepted, end = same_for_all(both, "TABLAS_ACEPTADAS", "FINALIZACION")
    fields_of(accepted, m.pid, ana)
    fields_of(end, m.pid, "3", "agreement")
    for s in both:
        assert s.quiet(0.3) == []
        increasing(s)
    assert [r.code for r in both[1].received] == [r.code for r in both[2].received]


def test_promotion_and_resignation(stream, watching, new_user):
    ana, bob = new_user("pa"), new_user("pb")
    a, b = stream(ana), stream(bob)
    both = [watching(ana), watching(bob)]
    m = match(bob, b, ana, a)  # bob white
    same_for_all(both, "DESAFIO", "INICIO_PARTIDA")
    play_and_see(m, both, "e4", "d5", "exd5", "c6", "dxc6", "Nf6", "cxb7", "Nbd7", "bxa8=Q")
    last = both[0].received[-1]
    assert ":b7a8:5:bxa8=Q:" in last.text, last  # the move as JGDA sent it, and its SAN
    assert a.cmd(f"REND:{m.pid}:{bob}").code == 211  # black resigns
    gone, end = same_for_all(both, "ABANDONO", "FINALIZACION")
    fields_of(gone, m.pid, ana, "0")
    fields_of(end, m.pid, "1", "resignation")
    for s in both:
        increasing(s)


@pytest.mark.parametrize(
    "line, winner, reason",
    [(FOOLS_MATE, "2", "checkmate"), (LOYD_STALEMATE, "3", "stalemate")],
    ids=["checkmate", "stalemate"],
)
def test_a_game_that_ends_on_the_board(stream, watching, new_user, line, winner, reason):
    ana, bob = new_user("ma"), new_user("mb")
    a, b = stream(ana), stream(bob)
    both = [watching(ana), watching(bob)]
    m = match(ana, a, bob, b)
    same_for_all(both, "DESAFIO", "INICIO_PARTIDA")
    play_and_see(m, both, *line[:-1])
    move = m.move(line[-1])
    m.play(line[-1])
    turn, end = same_for_all(both, "FIN_DE_TURNO", "FINALIZACION")
    check_move(turn, m, move, len(line))
    fields_of(end, m.pid, winner, reason)
    relj = a.cmd(f"RELJ:{m.pid}")
    assert relj.code == 217 and relj.text.split(":")[-1] == reason, relj
    for s in both:
        assert s.quiet(0.3) == []
        increasing(s)


def test_a_claimed_draw_ends_in_an_event(stream, watching, new_user):
    ana, bob = new_user("fa"), new_user("fb")
    a, b = stream(ana), stream(bob)
    both = [watching(ana), watching(bob)]
    m = match(ana, a, bob, b)
    same_for_all(both, "DESAFIO", "INICIO_PARTIDA")
    play_and_see(m, both, *KNIGHT_SHUFFLE, *KNIGHT_SHUFFLE)
    assert b.cmd(f"FINP:{m.pid}:{ana}").code == 212
    [end] = same_for_all(both, "FINALIZACION")
    relj = a.cmd(f"RELJ:{m.pid}")
    assert relj.code == 217, relj
    fields_of(end, m.pid, "3", relj.text.split(":")[-1])  # the text 833 gives


# == 2. commands on a streaming connection ===================================================


def test_commands_are_answered_between_events(stream, watching, new_user):
    """The streaming connection plays and asks (pipelined batches with a multi-part HELP)
    while another user makes events for it all the time: each command gets its own answer,
    in order, and no event is lost or comes inside a multi-part answer."""
    ana, bob, carol = new_user("sa"), new_user("sb"), new_user("sc")
    sa = watching(ana)  # streams, and plays white
    b, c = stream(bob), stream(carol)
    m = match(ana, sa, bob, b)
    stop = threading.Event()
    made: list[int] = []

    failed: list[BaseException] = []

    def pester() -> None:  # carol challenges ana and withdraws, over and over
        try:
            while not stop.is_set():
                assert c.cmd(f"JUEG:{ana}").code == 200
                assert c.cmd(f"DECL:{ana}").code == 213
                made.append(2)
        except BaseException as e:  # reported by the test's thread
            failed.append(e)

    t = threading.Thread(target=pester, daemon=True)
    t.start()
    try:
        assert wait_for(lambda: len(made) >= 3)
        line = iter(long_line(24))
        for _ in range(12):
            # white's move and questions, pipelined, then black answers on its own connection
            move = next(line)
            ply = m.ply
            sa.send(jgda(m.pid, ply, move))
            sa.send(f"STAT:{m.pid}")
            sa.send("HELP")
            sa.send(f"SPAR:{m.pid}:{ply - 1}")
            sa.send("EVEN:x")
            r = sa.reply()
            assert (r.code, r.text) == (208, ""), r
            m.board.push(move)
            st = sa.reply()
            assert st.code == 206 and st.text.split(":")[-1] == str(ply + 1), st
            help_parts = sa.replies()  # Stream.replies: no event between its parts
            assert all(p.code == 110 for p in help_parts) and "EVEN" in "".join(
                p.text for p in help_parts
            )
            sp = sa.reply()
            assert sp.code == 207 and sp.text.startswith(f"{ply}:"), sp
            assert sa.reply().code == 802
            m.play(next(line).uci())
    finally:
        stop.set()
        t.join(20)
    assert not t.is_alive() and not failed, failed
    moves = 2 * 12
    challenges = 2 * len(made)

    def of_carol(evs: list[Event]) -> list[Event]:
        return [e for e in evs if e.kind.startswith("DESAFIO") and e["retador"] == carol]

    got = sa.wait_events(
        lambda evs: (
            sum(e.kind == "FIN_DE_TURNO" for e in evs) == moves and len(of_carol(evs)) == challenges
        ),
        timeout=20,
    )
    assert [e["ply"] for e in got if e.kind == "FIN_DE_TURNO"] == [
        str(p) for p in range(1, moves + 1)
    ]
    kinds = [e.kind for e in of_carol(got)]
    assert kinds == ["DESAFIO", "DESAFIO_RETIRADO"] * len(made)
    increasing(sa)
    assert sa.quiet(0.3) == []  # and nothing more
    # Events did come while commands waited for their answers (they were set aside).
    assert sa.set_aside > 0


# == what makes no event, and events made by the server's own clock =======================


def test_refused_commands_make_no_event(stream, watching, new_user):
    """An event is stored with the change it reports: no change, no event. An exact resend
    of a move is answered 208 and stores nothing; two sessions racing for one ply store
    one move."""
    ana, bob = new_user("na"), new_user("nb")
    a, b, b2 = stream(ana), stream(bob), stream(bob)
    both = [watching(ana), watching(bob)]
    m = match(ana, a, bob, b)
    same_for_all(both, "DESAFIO", "INICIO_PARTIDA")
    e4 = m.move("e4")
    m.play("e4")
    same_for_all(both, "FIN_DE_TURNO")
    refused = [
        (a, jgda(m.pid, 1, e4), 208),  # the exact resend: answered, nothing stored
        (a, jgda(m.pid, 2, chess.Move.from_uci("e7e5")), 834),  # not ana's turn
        (b, jgda(m.pid, 3, chess.Move.from_uci("e7e5")), 835),  # not the next ply
        (b, "JGDA:" + m.pid + ":2:e8e6:0:6044:0", 838),  # illegal
        (a, f"JUEG:{bob}", 821),  # a game between them already
        (b, f"RTBL:{m.pid}:S:{ana}", 841),  # no offer
        (a, f"DECL:{bob}", 822),  # no challenge
        (a, f"FINP:{m.pid}:{bob}", 842),  # nothing to claim
        (a, f"TBLS:{m.pid}:{ana}", 832),  # not the opponent
    ]
    for conn, line, code in refused:
        r = conn.cmd(line)
        assert r.code == code, (line, r)
    assert a.cmd(f"TBLS:{m.pid}:{bob}").code == 209
    assert a.cmd(f"TBLS:{m.pid}:{bob}").code == 840  # one offer at a time
    [offer] = same_for_all(both, "TABLAS")
    assert b.cmd(f"RTBL:{m.pid}:N:{ana}").code == 210
    [declined] = same_for_all(both, "TABLAS_RECHAZADAS")
    assert declined.cursor > offer.cursor
    # Two sessions of bob send different replies to e4 at once: one is stored.
    b.send(jgda(m.pid, 2, chess.Move.from_uci("e7e5")))
    b2.send(jgda(m.pid, 2, chess.Move.from_uci("c7c5")))
    answers = {b.reply().code: "e7e5", b2.reply().code: "c7c5"}
    assert 208 in answers and len(answers) == 2, answers
    [e] = same_for_all(both, "FIN_DE_TURNO")
    assert (e["ply"], e["jugada"]) == ("2", answers[208])
    assert a.cmd(f"REND:{m.pid}:{bob}").code == 211
    same_for_all(both, "ABANDONO", "FINALIZACION")
    assert a.cmd(f"REND:{m.pid}:{bob}").code == 833  # over: no second ending
    for s in both:
        assert s.quiet(0.5) == []
        increasing(s)


def test_leave_reaches_the_opponents_of_correspondence_games(stream, watching, new_user):
    ana, bob, carol, dave = (new_user(p) for p in ("va", "vb", "vc", "vd"))
    a = stream(ana)
    opponents = {bob: "3d", carol: "none", dave: "10m"}  # correspondence, no clock, live
    for name, control in opponents.items():
        assert a.cmd(f"JUEG:{name}:{control}").code == 200
        assert stream(name).cmd(f"ACEP:N:{ana}:{control}").code == 202  # ana white, to move
    sb, sc, sd = watching(bob), watching(carol), watching(dave)
    r = a.cmd("LICE:I:2")
    assert r.code == 218, r
    hasta = r.text.split(":")[0]
    assert int(hasta) > time.time() * 1000
    [e] = sb.expect("LICENCIA")
    fields_of(e, ana, hasta)
    r = a.cmd("LICE:F")
    assert r.code == 218 and r.text.split(":")[0] == "0", r
    [e] = sb.expect("FIN_LICENCIA")
    fields_of(e, ana)
    for s in (sc, sd):  # their games' clocks do not stop for leave: nothing to tell
        assert s.quiet(0.5) == []
    assert sb.quiet(0.3) == []


def test_games_ended_by_the_clock_reach_the_streams(own_db, tmp_path, conns):
    """With nobody acting, the server's scheduler ends games on time: the events carry the
    server's time (a file here, moved by the test)."""
    from ajedrez.domain.accounts import Accounts
    from tests.support.clock import SECOND_MS, FileTime

    url, database = own_db
    now = FileTime(tmp_path / "now")
    srv = start_server(
        url, "--clock-file", str(now.path), "--clock-poll", "0.05", "--flag-grace", "0"
    )
    try:
        ana, bob = "ana", "bob"
        for name in (ana, bob):
            Accounts(database).add_user(name, "correct horse battery")

        def open_(name: str) -> Stream:
            s = connect(srv, name)
            conns.append(s)
            return s

        a, b = open_(ana), open_(bob)
        both = [open_(ana), open_(bob)]
        for s in both:
            s.subscribe()
        for plies, winner, reason in ((1, "0", "aborted"), (2, "2", "timeout")):
            assert a.cmd(f"JUEG:{bob}:30s-move").code == 200
            r = b.cmd(f"ACEP:N:{ana}:30s-move")
            assert r.code == 202, r
            m = Match(r.text, ana, bob, a, b)
            same_for_all(both, "DESAFIO", "INICIO_PARTIDA", at=now.now)
            for san in ("e4", "e5")[:plies]:
                m.play(san)
                same_for_all(both, "FIN_DE_TURNO", at=now.now)
            now.advance(30 * SECOND_MS)  # the side to move has spent its 30 s
            [end] = same_for_all(both, "FINALIZACION", timeout=20, at=now.now)
            fields_of(end, m.pid, winner, reason)
            now.advance(SECOND_MS)
        for s in both:
            increasing(s)
    finally:
        srv.stop()


# == 3. resuming from a cursor ===============================================================


def test_resume_gives_exactly_the_missed_events(stream, watching, new_user):
    ana, bob = new_user("ra"), new_user("rb")
    a, b = stream(ana), stream(bob)
    always = watching(ana)  # never disconnects: what ana should get
    s = watching(ana)
    m = match(ana, a, bob, b)
    m.play("d4", "d5")
    seen = s.events(4)
    assert [e.kind for e in seen] == ["DESAFIO", "INICIO_PARTIDA", "FIN_DE_TURNO", "FIN_DE_TURNO"]
    cursor = seen[-1].cursor
    s.close()

    # More happens while it is away: moves, an offer declined, a challenge withdrawn.
    m.play("c4", "e6", "Nc3")
    assert b.cmd(f"TBLS:{m.pid}:{ana}").code == 209
    assert a.cmd(f"RTBL:{m.pid}:N:{bob}").code == 210
    carol = new_user("rc")
    c = stream(carol)
    assert c.cmd(f"JUEG:{ana}").code == 200
    assert c.cmd(f"DECL:{ana}").code == 213
    missed = 3 + 2 + 2
    reference = always.events(4 + missed)
    assert bodies(reference[:4]) == bodies(seen)
    assert [e.cursor for e in reference[:4]] == [e.cursor for e in seen]

    back = stream(ana)
    got = back.subscribe(cursor)
    assert got.gap is None
    assert got.events == reference[4:]  # exactly those, cursors and times too
    assert got.aldia >= reference[-1].cursor
    # Then live, from the 601's cursor on.
    m.play("Nf6")
    [e] = back.expect("FIN_DE_TURNO")
    assert e.cursor > got.aldia and e == always.event()
    # From any cursor, exactly what followed it.
    for i in (0, 3, 6):
        again = stream(ana).subscribe(reference[i].cursor)
        assert again.events == [*reference[i + 1 :], e], i
    # From the 601's cursor: nothing is missed, nothing comes twice.
    again = stream(ana).subscribe(got.aldia)
    assert again.events == [e]


def test_a_cursor_too_far_back_gets_602_and_a_sync_by_fecha(database_url, conns, new_user):
    """More than ``--event-catch-up-limit`` of the user's events after the cursor: 602 at
    the newest event, no replay; within the limit, the replay as always."""
    srv = start_server(database_url, "--event-catch-up-limit", "5")
    try:

        def open_(name: str) -> Stream:
            c = connect(srv, name)
            conns.append(c)
            return c

        ana, bob = new_user("la"), new_user("lb")
        a, b, s = open_(ana), open_(bob), open_(ana)
        start = s.subscribe()
        m = match(ana, a, bob, b)
        m.play("e4", "e5", "Nf3", "Nc6")
        seen = s.events(6)  # DESAFIO, INICIO_PARTIDA, four moves
        far = open_(ana).subscribe(start.aldia)
        assert far.gap is not None and far.gap >= seen[-1].cursor, far
        assert far.events == []
        near = open_(ana).subscribe(seen[0].cursor)
        assert near.gap is None and near.events == seen[1:]
    finally:
        srv.stop()


def test_even_again_on_the_same_connection_starts_over(stream, watching, new_user):
    ana, bob = new_user("aa"), new_user("ab")
    a, b = stream(ana), stream(bob)
    s = watching(ana)
    m = match(ana, a, bob, b)
    m.play("e4", "e5", "Nf3")
    first = s.events(5)
    again = s.subscribe(first[1].cursor)
    assert again.events == first[2:]
    assert s.subscribe(0).events[-5:] == first
    m.play("Nc6")
    [e] = s.expect("FIN_DE_TURNO")
    assert e["ply"] == "4"
    assert s.quiet(0.3) == []


def test_even_again_while_events_flow(stream, watching, new_user):
    """EVEN sent again on a stream while events keep coming: after its 219 the stream
    is the stored events after the new cursor, in order, then the live ones, with no gap
    and nothing out of order, whatever was on its way from before."""
    ana, carol = new_user("wa"), new_user("wc")
    s, c = watching(ana), stream(carol)
    stop = threading.Event()
    failed: list[BaseException] = []

    def pester() -> None:
        try:
            while not stop.is_set():
                assert c.cmd(f"JUEG:{ana}").code == 200
                assert c.cmd(f"DECL:{ana}").code == 213
        except BaseException as e:
            failed.append(e)

    t = threading.Thread(target=pester, daemon=True)
    t.start()
    try:
        since: list[Event] = s.events(6)
        for _ in range(15):
            back = since[-min(len(since), 4)].cursor  # a few events back
            s.send(f"EVEN:{back}")
            while (r := s.frame()).code != 219:  # what was on its way before the answer
                assert r.code in (V_EVENTO, V_LATIDO), r
            assert int(r.text) == back, r
            since = []
            while (r := s.frame()).code != V_ALDIA:
                assert r.code == V_EVENTO, r
                since.append(parse_event(r.text))
            while len(since) < 6:  # and live after it
                r = s.frame()
                assert r.code in (V_EVENTO, V_LATIDO), r
                if r.code == V_EVENTO:
                    since.append(parse_event(r.text))
            cursors = [e.cursor for e in since]
            assert cursors[0] > back and cursors == sorted(set(cursors)), (back, cursors)
            # No gap: exactly what a fresh stream from the same cursor gives, as far as it goes.
            fresh = stream(ana).subscribe(back).events
            assert fresh[: len(since)] == since, (back, since, fresh)
    finally:
        stop.set()
        t.join(20)
    assert not t.is_alive() and not failed, failed


def test_a_client_started_without_cursor_syncs_then_follows(stream, watching, new_user):
    """What happened before the 219 is in the fecha sync; what happens after, in events."""
    ana, bob = new_user("ya"), new_user("yb")
    a, b = stream(ana), stream(bob)
    m = match(ana, a, bob, b)
    m.play("e4")
    s = watching(ana)
    ppen = s.cmd("PPEN:0")
    assert ppen.code == 203 and m.pid in ppen.text, ppen
    m.play("e5")
    [e] = s.expect("FIN_DE_TURNO")
    assert (e["partida"], e["ply"]) == (m.pid, "2")


# == 6. leaving the service: UNSU and ajedrez-admin ==========================================


@pytest.mark.parametrize("how", ["admin", "unsu"])
def test_a_user_leaving_reaches_the_streams(
    stream, watching, new_user, database_url, ev_server, how
):
    ana, bob, carol, dave = (new_user(p) for p in ("la", "lb", "lc", "ld"))
    a, b, c = stream(ana), stream(bob), stream(carol)
    sb, sc, sd, sa = watching(bob), watching(carol), watching(dave), watching(ana)
    m = match(bob, b, ana, a)  # ana black against bob
    m.play("e4", "e5")
    assert c.cmd(f"JUEG:{ana}").code == 200  # carol challenges ana
    assert a.cmd(f"JUEG:{dave}").code == 200  # ana challenges dave
    sb.expect("DESAFIO", "INICIO_PARTIDA", "FIN_DE_TURNO", "FIN_DE_TURNO")
    sc.expect("DESAFIO")
    sd.expect("DESAFIO")
    sa.expect("DESAFIO", "INICIO_PARTIDA", "FIN_DE_TURNO", "FIN_DE_TURNO", "DESAFIO", "DESAFIO")

    if how == "admin":
        done = admin(database_url, "users", "remove", ana)
        assert done.returncode == 0, done.stderr
        assert m.pid in done.stdout, done.stdout
    else:
        r = a.cmd(f"UNSU:{ana}:correct horse battery")
        assert r.code == 104, r

    gone, end = sb.expect("ABANDONO", "FINALIZACION")
    fields_of(gone, m.pid, ana, "0")
    relj = b.cmd(f"RELJ:{m.pid}")
    assert relj.code == 217, relj
    reason = relj.text.split(":")[-1]
    assert reason, relj
    fields_of(end, m.pid, "1", reason)  # bob, white, wins; the motivo RELJ gives
    over = b.cmd(jgda(m.pid, 3, m.move("Nf3")))
    assert over.code == 833 and reason in over.text, over
    [e] = sc.expect("DESAFIO_RECHAZADO")  # the challenged left
    fields_of(e, carol, ana)
    [e] = sd.expect("DESAFIO_RETIRADO")  # the maker left
    fields_of(e, ana, dave)
    for s in (sb, sc, sd):
        assert s.quiet(0.3) == []
        increasing(s)
    # Stored too: a stream resumed from before the leave gets them again.
    assert stream(bob).subscribe(gone.cursor - 1).events == [gone, end]
    # ana's own other session stays connected, and its stream hears of what it concerns.
    left = sa.events(4)
    assert sorted(e.kind for e in left) == sorted(
        ["ABANDONO", "FINALIZACION", "DESAFIO_RECHAZADO", "DESAFIO_RETIRADO"]
    ), [e.raw for e in left]


# == 7. robustness ===========================================================================


@pytest.mark.parametrize(
    "cursor",
    ["abc", "1" * 25, "-1", "+1", "1.5", " 1", "1 ", "0x10", "\uff11", "99999999999999999999"],
)
def test_a_malformed_cursor_is_refused_and_the_connection_goes_on(stream, new_user, cursor):
    ana = new_user("mc")
    s = stream(ana)
    r = s.cmd(f"EVEN:{cursor}")
    assert r.code == 802, r
    assert "cursor" in r.text.lower(), r
    assert s.cmd("EVEN:1:2").code == 801
    # Not streaming after the refusal: nothing comes, and the connection still works.
    assert s.cmd("HELP:EVEN").code == 110
    assert not s.pending and s.received == []
    got = s.subscribe()
    assert got.events == []


def test_even_before_login_gets_805_and_closes(ev_server, new_user):
    with connect(ev_server) as s:
        r = s.cmd("EVEN")
        assert r.code == 805, r
        assert s.is_closed()
    with connect(ev_server) as s:  # USER alone is no login
        assert s.cmd(f"USER:{new_user('bl')}").code == 101
        r = s.cmd("EVEN")
        assert r.code == 805, r
        assert s.is_closed()
    with connect(ev_server) as s:
        r = s.cmd("EVEN:0")
        assert r.code == 805, r
        assert s.is_closed()


@pytest.fixture(scope="module")
def idle_server(database_url: str, db) -> Iterator[ServerProcess]:  # type: ignore[no-untyped-def]
    srv = start_server(database_url, "--idle-timeout", "2")
    yield srv
    srv.stop()


def test_a_streaming_connection_is_not_closed_for_being_idle(idle_server, stream, new_user, conns):
    ana = new_user("it")
    s = stream(ana, idle_server)
    plain = stream(ana, idle_server)
    s.subscribe()
    started = time.monotonic()
    assert plain.is_closed(timeout=15)  # the idle timeout is at work
    closed_after = time.monotonic() - started
    assert closed_after >= 1.5, closed_after
    # Well past the timeout the streaming connection, silent all along, is still there.
    assert s.quiet(max(0.0, 2 * 2.0 + 1 - (time.monotonic() - started))) == []
    assert time.monotonic() - started > 2 * 2.0
    r = s.cmd("HELP:EVEN")
    assert r.code == 110, r
    # It still streams: a challenge reaches it.
    bob = new_user("it")
    b = stream(bob, idle_server)
    assert b.cmd(f"JUEG:{ana}").code == 200
    [e] = s.expect("DESAFIO")
    fields_of(e, bob, ana, "none")
    # After QUIT it is closed, as any connection.
    s.send("QUIT")
    assert s.is_closed()


@pytest.fixture(scope="module")
def heartbeat_server(database_url: str, db) -> Iterator[ServerProcess]:  # type: ignore[no-untyped-def]
    srv = start_server(database_url, "--event-heartbeat", "0.5")
    yield srv
    srv.stop()


def test_a_quiet_stream_gets_heartbeats(heartbeat_server, stream, new_user):
    ana, bob = new_user("hb"), new_user("hb")
    s = stream(ana, heartbeat_server)
    got = s.subscribe()
    times: list[float] = [time.monotonic()]
    beats: list[int] = []
    for _ in range(4):
        r = s.v(timeout=5)
        assert r.code == V_LATIDO, r
        times.append(time.monotonic())
        beats.append(int(r.text))
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # About every 0.5 s of quiet (the first counted from when the stream began, which
    # the 601 may follow by a little).
    assert gaps[0] <= 3 and all(0.3 <= g <= 3 for g in gaps[1:]), gaps
    assert all(c >= got.aldia for c in beats), (got.aldia, beats)
    # An event, then quiet again: heartbeats resume, with a cursor to resume from.
    b = stream(bob, heartbeat_server)
    assert b.cmd(f"JUEG:{ana}").code == 200
    e = s.event()
    assert e.kind == "DESAFIO"
    r = s.v(timeout=5)
    assert r.code == V_LATIDO, r
    later = int(r.text)
    assert stream(ana, heartbeat_server).subscribe(later).events == []
    # Resuming from a heartbeat taken before the event gives the event.
    assert stream(ana, heartbeat_server).subscribe(beats[0]).events == [e]
    # A connection that does not stream gets none.
    plain = stream(ana, heartbeat_server)
    assert plain.quiet(1.2) == [] and plain.received == []
    assert all(r.code in (V_ALDIA, V_LATIDO, V_EVENTO) for r in s.received)
