"""Events cross processes (docs/protocol.md section 6: "whichever server process or server
made it"): a stream sees what a connection served by another worker of ``--workers 2``
did, and what a connection to another server on the same database did, within a bounded
time; a stream resumed on another process or server gets what it missed.

Which worker serves a connection is decided by stopping the other one while it connects
(tests/support/workers.py). Both layouts run on each store: the document promises two
servers on one SQLite file as on one PostgreSQL database (docs/operations.md).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator

import chess
import pytest

from tests.support.common import wait_for
from tests.support.espol import Conn
from tests.support.events import V_EVENTO, V_LATIDO, Stream, connect, parse_event
from tests.support.play import PID, jgda, long_line
from tests.support.server import ServerProcess, start_server
from tests.support.workers import served_by, worker_pids

BOUND = 5.0  # seconds from a command's answer to its event on every stream


@pytest.fixture
def opened() -> Iterator[list[Conn]]:
    conns: list[Conn] = []
    yield conns
    for c in conns:
        c.close()


@pytest.fixture
def two_workers(database_url: str, db) -> Iterator[ServerProcess]:  # type: ignore[no-untyped-def]
    srv = start_server(database_url, "--workers", "2", "--max-connections-per-address", "1000")
    assert wait_for(lambda: srv.log_text().count("serving") >= 2), srv.log_text()
    assert wait_for(lambda: len(worker_pids(srv)) == 2), srv.log_text()
    yield srv
    if srv.proc.poll() is None:
        srv.stop()


@pytest.fixture
def two_servers(database_url: str, db) -> Iterator[list[ServerProcess]]:  # type: ignore[no-untyped-def]
    started = [start_server(database_url) for _ in range(2)]
    yield started
    for srv in started:
        if srv.proc.poll() is None:
            srv.stop()


def everywhere(streams: list[Stream], kind: str, since: float, *expected: str) -> list[float]:
    """Every stream receives the next event, ``kind`` with ``expected`` first fields, within
    BOUND of ``since``; returns the delays."""
    delays = []
    for s in streams:
        e = s.event(timeout=max(0.01, since + BOUND - time.monotonic()))
        delays.append(time.monotonic() - since)
        assert e.kind == kind, (e.raw, kind, expected)
        assert e.fields[: len(expected)] == expected, (e.raw, expected)
    return delays


def play_across(
    white: str,
    black: str,
    whites: list[Conn],
    blacks: list[Conn],
    streams: list[Stream],
    plies: int,
) -> tuple[str, list[float]]:
    """A game whose commands go through each of ``whites``/``blacks`` in turn (so through
    every process), each event awaited on every stream before the next command."""
    delays: list[float] = []
    r = whites[0].cmd(f"JUEG:{black}")
    assert r.code == 200, r
    delays += everywhere(streams, "DESAFIO", time.monotonic(), white, black)
    r = blacks[-1].cmd(f"ACEP:N:{white}")
    assert r.code == 202 and PID.fullmatch(r.text), r
    pid = r.text
    delays += everywhere(streams, "INICIO_PARTIDA", time.monotonic(), pid, white, black)
    board = chess.Board()
    for ply, move in enumerate(long_line(plies) if plies else [], 1):
        turn = ply // 2
        conn = whites[turn % len(whites)] if ply % 2 else blacks[turn % len(blacks)]
        r = conn.cmd(jgda(pid, ply, move))
        assert r.code == 208, (ply, move, r)
        board.push(move)
        got = everywhere(streams, "FIN_DE_TURNO", time.monotonic(), pid, str(ply))
        delays += got
    for s in streams:
        assert s.received[-1].text.endswith(":" + board.fen()), s.received[-1]
    return pid, delays


def report(label: str, delays: list[float]) -> None:
    print(
        f"{label}: {len(delays)} deliveries, median {statistics.median(delays) * 1000:.1f} ms, "
        f"max {max(delays) * 1000:.1f} ms"
    )


def test_events_reach_streams_on_every_worker(two_workers, new_user, opened):
    srv = two_workers
    first, second = worker_pids(srv)
    ana, bob = new_user("xa"), new_user("xb")

    def on(worker: int, name: str) -> Stream:
        s = served_by(srv, worker, lambda: connect(srv, name))  # logged in: accepted
        opened.append(s)
        return s

    streams = [on(w, n) for w in (first, second) for n in (ana, bob)]
    for s in streams:
        s.subscribe()
    whites, blacks = [on(first, ana), on(second, ana)], [on(second, bob), on(first, bob)]
    pid, delays = play_across(ana, bob, whites, blacks, streams, 16)
    # Every pair (made on, seen on) of workers: the moves went through both of each side.
    r = blacks[1].cmd(f"REND:{pid}:{ana}")
    assert r.code == 211, r
    since = time.monotonic()
    delays += everywhere(streams, "ABANDONO", since, pid, bob, "0")
    delays += everywhere(streams, "FINALIZACION", since, pid, "1", "resignation")
    report("--workers 2", delays)

    # A stream cut on one worker and resumed on the other gets what it missed.
    cut = streams[0]  # ana's, on the first worker
    cursor = cut.received[-1].text.split(":", 1)[0]
    cut.close()
    assert whites[1].cmd(f"JUEG:{bob}").code == 200
    assert blacks[0].cmd(f"DECL:{ana}").code == 213
    back = on(second, ana)
    got = back.subscribe(int(cursor))
    assert [e.kind for e in got.events] == ["DESAFIO", "DESAFIO_RECHAZADO"], got
    assert got.events == streams[1].events(2)  # as ana's stream on the other worker got them


def test_events_reach_a_stream_on_another_server(two_servers, new_user, opened):
    a_srv, b_srv = two_servers
    ana, bob = new_user("ya"), new_user("yb")

    def on(srv: ServerProcess, name: str) -> Stream:
        s = connect(srv, name)
        opened.append(s)
        return s

    # Streams on B, commands through A; then the other way round.
    streams_b = [on(b_srv, ana), on(b_srv, bob)]
    streams_a = [on(a_srv, ana), on(a_srv, bob)]
    for s in (*streams_a, *streams_b):
        s.subscribe()
    pid, a_to_b = play_across(ana, bob, [on(a_srv, ana)], [on(a_srv, bob)], streams_b, 12)
    for s in streams_a:  # the servers' own streams got them too
        s.events(2 + 12)
    # Through B, seen on A: a resignation, then a new challenge.
    b_bob = on(b_srv, bob)
    assert b_bob.cmd(f"REND:{pid}:{ana}").code == 211
    since = time.monotonic()
    b_to_a = everywhere(streams_a, "ABANDONO", since, pid, bob, "0")
    b_to_a += everywhere(streams_a, "FINALIZACION", since, pid, "1", "resignation")
    assert b_bob.cmd(f"JUEG:{ana}").code == 200
    b_to_a += everywhere(streams_a, "DESAFIO", time.monotonic(), bob, ana)
    for s in streams_b:
        s.expect("ABANDONO", "FINALIZACION", "DESAFIO")
    report("server A to a stream on server B", a_to_b)
    report("server B to a stream on server A", b_to_a)

    # A stream cut on A and resumed on B gets what it missed, made on either server.
    cut = streams_a[0]
    cursor = int(cut.received[-1].text.split(":", 1)[0])
    cut.close()
    c = on(a_srv, bob)
    d = on(b_srv, bob)
    assert c.cmd(f"DECL:{ana}").code == 213  # withdraws on A the challenge made on B
    assert d.cmd(f"JUEG:{ana}:1d").code == 200  # a new one, on B
    ref = streams_b[0].events(2)
    got = on(b_srv, ana).subscribe(cursor)
    assert got.events == ref, (got, ref)
    assert [e.kind for e in ref] == ["DESAFIO_RETIRADO", "DESAFIO"]


@pytest.mark.parametrize("layout", ["--workers 2", "two servers"])
def test_a_stored_cursor_never_passes_an_event_still_to_come(database_url, db, new_user, layout):
    """A 603's (and a 601's) cursor is one a client may store and resume from: no event
    the stream sends after it may have a cursor at or below it, or a client that stored
    it would never get that event. The stream is on one process, the moves are made on
    another, and heartbeats come every 20 ms of quiet: where the stream's process learns
    of the other's commits late (SQLite's poll), many fall between a move's commit and
    its event."""
    opened: list[Conn] = []
    beat = ("--event-heartbeat", "0.02", "--max-connections-per-address", "1000")
    if layout == "--workers 2":
        srv = start_server(database_url, "--workers", "2", *beat)
        servers = [srv]
        assert wait_for(lambda: len(worker_pids(srv)) == 2), srv.log_text()
    else:
        servers = [start_server(database_url, *beat) for _ in range(2)]
    try:
        ana, bob = new_user("za"), new_user("zb")
        if layout == "--workers 2":
            first, second = worker_pids(srv)
            s = served_by(srv, second, lambda: connect(srv, ana))
            a = served_by(srv, first, lambda: connect(srv, ana))
            b = served_by(srv, first, lambda: connect(srv, bob))
        else:
            s, a, b = connect(servers[1], ana), connect(servers[0], ana), connect(servers[0], bob)
        opened += [s, a, b]
        got = s.subscribe()
        floor, beats, passed = got.aldia, 0, []
        assert a.cmd(f"JUEG:{bob}").code == 200
        r = b.cmd(f"ACEP:N:{ana}")
        assert r.code == 202, r
        pid = r.text
        line = long_line(60)
        for ply, move in enumerate([None, None, *line], -1):
            if move is not None:
                conn = a if ply % 2 else b
                assert conn.cmd(jgda(pid, ply, move)).code == 208
            while True:  # until this step's event, through the heartbeats before it
                r = s.v(timeout=BOUND)
                if r.code == V_LATIDO:
                    beats += 1
                    floor = max(floor, int(r.text))
                    continue
                assert r.code == V_EVENTO, r
                e = parse_event(r.text)
                if e.cursor <= floor:
                    passed.append((floor, e.raw))
                floor = max(floor, e.cursor)
                break
            if ply < 0:  # the game's start is on its way already
                continue
            r = s.v(timeout=BOUND)  # a heartbeat after each event, before the next move
            assert r.code == V_LATIDO, r
            beats += 1
            floor = max(floor, int(r.text))
        print(f"{layout}: {beats} heartbeats among {len(line) + 2} events")
        assert beats >= len(line) + 1, beats
        assert passed == [], passed[:5]
    finally:
        for c in opened:
            c.close()
        for srv_ in servers:
            srv_.stop()
