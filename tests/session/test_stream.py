"""The hub and its streams (``service/hub.py``) without a socket or a database: an
in-memory event log stands for the store (its reads complete when the test lets them),
a list of frames for the connection. What matters is the stream's promise: every event
of its user after its cursor, each once, in order, across catch-up, live delivery, a
client that stops reading, and observers joining and leaving.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from ajedrez.domain.events import StoredEvent, Value
from ajedrez.espol.codes import Reply
from ajedrez.espol.framing import decode_header
from ajedrez.espol.stream import stream_frame
from ajedrez.service import hub as stream_module
from ajedrez.service.hub import Hub, Stream

HEADER = 6


@dataclass
class Log:
    """The events table and the observers table, read the way ``EventReads`` reads them.
    Each read is a future the test completes with ``settle`` (or at once, ``eager``)."""

    rows: list[StoredEvent] = field(default_factory=list)
    observing: set[tuple[int, int]] = field(default_factory=set)  # (game, user)
    eager: bool = True
    waiting: list[tuple[asyncio.Future[list[Any]], Callable[[], list[Any]]]] = field(
        default_factory=list
    )
    pruned_through: int = 0
    beyond_asked: int = 0

    def add(self, kind: str, fields: dict[str, Value], **who: Any) -> StoredEvent:
        row = StoredEvent(
            len(self.rows) + 1 + self.pruned_through,
            1_000,
            kind,
            fields,
            who.get("game_id"),
            who.get("user_a"),
            who.get("user_b"),
            who.get("actor_id"),
            who.get("observers", False),
        )
        self.rows.append(row)
        return row

    def _read(self, answer: Callable[[], list[Any]]) -> asyncio.Future[list[Any]]:
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        if self.eager:
            future.set_result(answer())
        else:
            self.waiting.append((future, answer))
        return future

    def settle(self) -> None:
        """Complete the reads asked so far, with the table as it is now."""
        waiting, self.waiting = self.waiting, []
        for future, answer in waiting:
            future.set_result(answer())

    # -- EventReads --------------------------------------------------------------------------

    def horizon(self) -> asyncio.Future[list[Any]]:
        last = self.rows[-1].id if self.rows else self.pruned_through

        @dataclass
        class H:
            last: int
            pruned_through: int

        return self._read(lambda: [H(last, self.pruned_through)])

    def after(self, cursor: int, limit: int) -> asyncio.Future[list[Any]]:
        return self._read(lambda: [r for r in self.rows if r.id > cursor][:limit])

    def of_user(self, user_id: int, cursor: int, limit: int) -> asyncio.Future[list[Any]]:
        def mine(r: StoredEvent) -> bool:
            watching = r.observers and (r.game_id, user_id) in self.observing
            return user_id in (r.user_a, r.user_b) or watching

        return self._read(lambda: [r for r in self.rows if r.id > cursor and mine(r)][:limit])

    def observed(self, user_id: int) -> asyncio.Future[list[Any]]:
        @dataclass
        class Observed:
            game_id: int

        return self._read(lambda: [Observed(g) for g, u in sorted(self.observing) if u == user_id])

    def beyond(self, user_id: int, cursor: int, limit: int) -> asyncio.Future[bool]:
        self.beyond_asked += 1
        mine = self.of_user(user_id, cursor, limit + 1)
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        mine.add_done_callback(lambda f: done.set_result(len(f.result()) > limit))
        return done

    def close(self) -> None:
        pass


class FakeDb:
    event_poll = 3600.0  # the tests wake the hub themselves

    def on_events(self, wake: Callable[[], None]) -> Callable[[], None]:
        return lambda: None


@dataclass
class Sink:
    frames: list[tuple[int, str]] = field(default_factory=list)
    reading: bool = True

    def send_event(self, item: Any) -> bool:
        frame = stream_frame(item)
        code, _more, length = decode_header(frame[:HEADER])
        assert len(frame) == HEADER + length
        self.frames.append((code, frame[HEADER:].decode()))
        return self.reading

    def events(self) -> list[int]:
        """The cursors of the events sent, in order."""
        return [int(data.split(":")[0]) for code, data in self.frames if code == Reply.V_EVENTO]

    def codes(self) -> list[int]:
        return [code for code, _data in self.frames]


@pytest.fixture
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def run(loop: asyncio.AbstractEventLoop, steps: int = 20) -> None:
    """Let the loop run its ready tasks (a few turns; nothing here sleeps)."""
    for _ in range(steps):
        loop.run_until_complete(asyncio.sleep(0))


def started_hub(loop: asyncio.AbstractEventLoop, log: Log, **options: Any) -> Hub:
    hub = Hub(FakeDb(), heartbeat=3600, **options)  # type: ignore[arg-type]
    hub.reads = log  # type: ignore[assignment]
    loop.run_until_complete(hub.start())
    return hub


def move(log: Log, n: int, a: int = 1, b: int = 2, game: int = 7) -> StoredEvent:
    fields: dict[str, Value] = {
        "partida": game, "jugada_n": n, "jugada": "e2e4", "promocion": 0, "san": "e4",
        "turno": "bob", "fen": "8/8/8/8/8/8/8/8 w - - 0 1",
    }  # fmt: skip
    return log.add("FIN_DE_TURNO", fields, game_id=game, user_a=a, user_b=b, actor_id=a,
                   observers=True)  # fmt: skip


def open_stream(loop, hub: Hub, user: int, cursor: int | None) -> tuple[Stream, Sink]:
    sink = Sink()
    stream = hub.open(sink, user, cursor)
    run(loop)
    return stream, sink


def test_from_now_it_sends_only_new_events_and_601_first(loop):
    log = Log()
    move(log, 1)
    hub = started_hub(loop, log)
    stream, sink = open_stream(loop, hub, 2, None)
    assert stream.start_cursor == 1
    assert sink.frames == [(Reply.V_ALDIA, "1")]
    move(log, 2)
    hub.wake()
    run(loop)
    assert sink.events() == [2]


def test_from_now_starts_after_what_the_store_committed_not_what_the_hub_has_read(loop):
    """An event committed (and acknowledged) before the stream was asked for, which the
    hub has not read yet (its wake is still on the way), is behind the stream's start:
    not sent, and the 219 and the 601 both stand after it."""
    log = Log()
    move(log, 1)
    hub = started_hub(loop, log)
    move(log, 2)  # committed; the hub is not woken yet
    assert hub.last == 1
    now = loop.run_until_complete(hub.now())
    sink = Sink()
    stream = hub.open(sink, 2, None, now=now)
    run(loop)
    assert stream.start_cursor == 2 and sink.frames == [(Reply.V_ALDIA, "2")]
    hub.wake()
    move(log, 3)
    run(loop)
    hub.wake()
    run(loop)
    assert sink.events() == [3]


def test_from_now_sends_what_the_hub_handed_out_after_now_before_the_stream_opened(loop):
    log = Log()
    move(log, 1)
    hub = started_hub(loop, log)
    now = loop.run_until_complete(hub.now())
    move(log, 2)  # committed after "now" was read, and handed out before the stream opened
    hub.wake()
    run(loop)
    assert hub.last == 2
    sink = Sink()
    stream = hub.open(sink, 2, None, now=now)
    assert stream.start_cursor == 1  # what the 219 says
    run(loop)
    assert sink.events() == [2] and sink.frames[-1] == (Reply.V_ALDIA, "2")


def test_with_nobody_streaming_the_hub_reads_the_counter_alone(loop):
    """Every commit wakes the hub; with no stream open it reads the counter's one row, not
    the events (a move's commit would otherwise read its events back for nobody), and a
    stream opened afterwards still starts after the newest event and misses none."""
    log = Log()
    hub = started_hub(loop, log)
    read: list[str] = []
    for name in ("after", "horizon"):
        real = getattr(log, name)
        setattr(log, name, lambda *a, _r=real, _n=name: read.append(_n) or _r(*a))
    for n in range(1, 4):
        move(log, n)
        hub.wake()
        run(loop)
    assert read and set(read) == {"horizon"}
    assert hub.last == 3
    stream, sink = open_stream(loop, hub, 2, None)
    assert stream.start_cursor == 3 and sink.frames == [(Reply.V_ALDIA, "3")]
    move(log, 4)
    hub.wake()
    run(loop)
    assert sink.events() == [4] and read[-1] == "after"


def test_a_cursor_gets_the_stored_events_then_601_then_live(loop):
    log = Log()
    for n in range(1, 6):
        move(log, n)
    challenge: dict[str, Value] = {"retador": "x", "retado": "y", "control": "none",
                                   "privada": False}  # fmt: skip
    log.add("DESAFIO", challenge, user_a=3, user_b=4)  # not user 2's
    hub = started_hub(loop, log)
    _stream, sink = open_stream(loop, hub, 2, 2)
    assert sink.events() == [3, 4, 5]
    assert sink.frames[-1] == (Reply.V_ALDIA, "6")  # past the other users' event
    move(log, 6)
    hub.wake()
    run(loop)
    assert sink.events() == [3, 4, 5, 7]


def test_events_that_come_while_it_catches_up_are_sent_once_in_order(loop, monkeypatch):
    monkeypatch.setattr(stream_module, "CATCH_UP_PAGE", 3)
    log = Log()
    for n in range(1, 8):
        move(log, n)
    hub = started_hub(loop, log)
    log.eager = False
    _stream, sink = open_stream(loop, hub, 2, 0)
    for n in range(8, 12):  # committed and dispatched while the first page is read
        move(log, n)
    hub.wake()
    run(loop)
    for _ in range(10):
        log.settle()
        run(loop)
    assert sink.events() == list(range(1, 12))
    assert sink.codes().count(Reply.V_ALDIA) == 1


def test_too_many_live_events_while_catching_up_are_read_again(loop, monkeypatch):
    monkeypatch.setattr(stream_module, "PENDING_LIMIT", 2)
    log = Log()
    move(log, 1)
    hub = started_hub(loop, log)
    log.eager = False
    _stream, sink = open_stream(loop, hub, 2, 0)
    for n in range(2, 10):
        move(log, n)
    hub.wake()
    for _ in range(10):
        log.settle()
        run(loop)
    assert sink.events() == list(range(1, 10))


def test_a_client_that_stops_reading_catches_up_from_the_store(loop):
    log = Log()
    hub = started_hub(loop, log)
    stream, sink = open_stream(loop, hub, 2, None)
    move(log, 1)
    hub.wake()
    run(loop)
    sink.reading = False
    move(log, 2)  # written, and then the transport's buffer is full
    move(log, 3)
    hub.wake()
    run(loop)
    assert sink.events() == [1, 2]  # nothing more is written, nothing held
    assert stream.pending == []
    for n in range(4, 7):
        move(log, n)
    hub.wake()
    run(loop)
    assert sink.events() == [1, 2]
    sink.reading = True
    stream.writable()
    run(loop)
    assert sink.events() == [1, 2, 3, 4, 5, 6]
    move(log, 7)
    hub.wake()
    run(loop)
    assert sink.events()[-1] == 7
    assert sink.codes().count(Reply.V_ALDIA) == 1


def test_a_cursor_older_than_the_retention_gets_602(loop):
    log = Log(pruned_through=10)
    move(log, 11)
    hub = started_hub(loop, log)
    _stream, sink = open_stream(loop, hub, 2, 3)
    assert sink.frames[0] == (Reply.V_HUECO, "10")
    assert sink.events() == [11]


def test_a_cursor_beyond_the_newest_event_gets_602_and_misses_none_after(loop):
    # A database restored from an older backup numbers its new events from its own
    # counter: a client's cursor from before the restore may be ahead of it.
    log = Log()
    for n in range(1, 4):
        move(log, n)
    hub = started_hub(loop, log)
    _stream, sink = open_stream(loop, hub, 2, 99)
    assert sink.frames[0] == (Reply.V_HUECO, "3")
    assert sink.frames[1] == (Reply.V_ALDIA, "3")
    move(log, 4)
    hub.wake()
    run(loop)
    assert sink.events() == [4]


def test_a_cursor_at_the_newest_event_gets_no_602(loop):
    log = Log(pruned_through=2)
    for n in range(3, 6):
        move(log, n)
    hub = started_hub(loop, log)
    _stream, sink = open_stream(loop, hub, 2, 5)
    assert sink.frames == [(Reply.V_ALDIA, "5")]


def test_a_cursor_further_back_than_the_catch_up_limit_gets_602_at_the_newest(loop):
    log = Log()
    for n in range(1, 13):
        move(log, n)
    hub = started_hub(loop, log, catch_up_limit=10)
    _stream, sink = open_stream(loop, hub, 2, 1)  # 11 of its events back
    assert sink.frames == [(Reply.V_HUECO, "12"), (Reply.V_ALDIA, "12")]
    move(log, 13)
    hub.wake()
    run(loop)
    assert sink.events() == [13]
    _stream, sink = open_stream(loop, hub, 2, 3)  # 10 back: replayed
    assert sink.events() == list(range(4, 14))
    assert Reply.V_HUECO not in sink.codes()


def test_other_users_events_do_not_count_against_the_catch_up_limit(loop):
    log = Log()
    for n in range(1, 40):
        move(log, n, a=5, b=6)
    move(log, 40)
    hub = started_hub(loop, log, catch_up_limit=10)
    _stream, sink = open_stream(loop, hub, 2, 0)
    assert sink.frames[0][0] == Reply.V_EVENTO and sink.events() == [40]
    assert log.beyond_asked == 1
    # within the limit by the counter alone: the store is not asked
    _stream, sink = open_stream(loop, hub, 2, 35)
    assert sink.events() == [40] and log.beyond_asked == 1


def test_one_stream_of_an_account_catches_up_at_a_time(loop, monkeypatch):
    monkeypatch.setattr(stream_module, "CATCH_UP_PAGE", 2)
    log = Log()
    for n in range(1, 6):
        move(log, n)
    hub = started_hub(loop, log)
    pages: list[tuple[int, int]] = []
    of_user = log.of_user

    def recorded(user_id: int, cursor: int, limit: int) -> asyncio.Future[list[Any]]:
        pages.append((user_id, cursor))
        return of_user(user_id, cursor, limit)

    log.of_user = recorded  # type: ignore[method-assign]
    log.eager = False  # each read waits for the test: the streams' reads interleave
    sinks = [Sink(), Sink(), Sink()]
    for sink, user in zip(sinks, (2, 2, 1), strict=True):
        hub.open(sink, user, 0)
    for _ in range(20):
        run(loop)
        log.settle()
    assert [sink.events() for sink in sinks] == [[1, 2, 3, 4, 5]] * 3
    # the second stream of user 2 began when the first had finished; user 1's did not wait
    assert [c for u, c in pages if u == 2] == [0, 2, 4, 0, 2, 4]
    assert pages.index((1, 2)) < pages.index((2, 4))
    assert hub._turns == {}


def test_a_catch_up_sends_a_slice_of_events_per_turn_of_the_loop(loop):
    log = Log()
    total = 2 * stream_module.SEND_SLICE + 7
    for n in range(1, total + 1):
        move(log, n)
    hub = started_hub(loop, log)
    sink = Sink()
    counts: list[int] = []

    def each_turn() -> None:  # runs once per turn of the loop
        counts.append(len(sink.events()))
        if len(counts) < 50:
            loop.call_soon(each_turn)

    loop.call_soon(each_turn)
    hub.open(sink, 2, 0)
    for _ in range(10):
        loop.run_until_complete(asyncio.sleep(0.001))
    steps = [b - a for a, b in itertools.pairwise(counts)]
    assert counts[-1] == total
    assert 0 < max(steps) <= stream_module.SEND_SLICE, steps


def test_an_observer_gets_the_game_from_joining_to_leaving(loop):
    log = Log()
    hub = started_hub(loop, log)
    _stream, sink = open_stream(loop, hub, 9, None)
    move(log, 1)  # not observed yet
    log.observing.add((7, 9))
    eve: dict[str, Value] = {"partida": 7, "usuario": "eve", "observador": True}
    log.add("INCORPORACION", eve, game_id=7, user_a=1, user_b=2, actor_id=9, observers=True)
    move(log, 2)
    log.add("CHAT", {"partida": 7, "usuario": "ana", "texto": "hola"}, game_id=7, user_a=1,
            user_b=2, actor_id=1)  # fmt: skip
    log.add("SUSURRO", {"partida": 7, "usuario": "eve", "texto": "hi"}, game_id=7, actor_id=9,
            observers=True)  # fmt: skip
    log.observing.discard((7, 9))
    log.add("ABANDONO", eve, game_id=7, user_a=1, user_b=2, actor_id=9, observers=True)
    move(log, 3)
    hub.wake()
    run(loop)
    # its join, the move, the whisper, its leave; never the players' chat
    assert sink.events() == [2, 3, 5, 6]


def test_an_observers_stream_opened_later_takes_the_observed_games(loop):
    log = Log()
    log.observing.add((7, 9))
    move(log, 1)
    hub = started_hub(loop, log)
    _stream, sink = open_stream(loop, hub, 9, 0)
    move(log, 2)
    hub.wake()
    run(loop)
    assert sink.events() == [1, 2]


def test_heartbeats_only_for_quiet_live_streams(loop):
    log = Log()
    hub = started_hub(loop, log)
    quiet, quiet_sink = open_stream(loop, hub, 2, None)
    busy, busy_sink = open_stream(loop, hub, 3, None)
    now = loop.time()
    busy.last_write = now + 1  # wrote after the silence began
    quiet.last_write = now - 10
    quiet.beat(now)
    busy.beat(now)
    assert quiet_sink.frames[-1][0] == Reply.V_LATIDO
    assert busy_sink.codes() == [Reply.V_ALDIA]


def test_closed_streams_get_nothing_and_leave_no_trace(loop):
    log = Log()
    log.observing.add((7, 2))
    hub = started_hub(loop, log)
    stream, sink = open_stream(loop, hub, 2, None)
    assert hub.streams == 1 and 7 in hub.watching
    hub.close(stream)
    move(log, 1)
    hub.wake()
    run(loop)
    assert sink.events() == []
    assert hub.streams == 0 and hub.watching == {} and hub.by_user == {}


def test_the_players_get_an_event_before_its_observers(loop):
    log = Log()
    for watcher in range(100, 110):
        log.observing.add((7, watcher))
    hub = started_hub(loop, log)
    order: list[int] = []

    @dataclass
    class Recorder(Sink):
        user: int = 0

        def send_event(self, item: Any) -> bool:
            if decode_header(stream_frame(item)[:HEADER])[0] == Reply.V_EVENTO:
                order.append(self.user)
            return super().send_event(item)

    for user in [*range(100, 110), 1, 2]:
        hub.open(Recorder(user=user), user, None)
    run(loop)
    move(log, 1)
    hub.wake()
    run(loop)
    assert sorted(order[:2]) == [1, 2]
    assert sorted(order[2:]) == list(range(100, 110))
