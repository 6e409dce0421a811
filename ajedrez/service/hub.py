"""Streaming connections (EVEN, docs/protocol.md section 6): one hub per process, one
:class:`Stream` per streaming connection.

Events are stored by the transactions that make them, numbered in commit order, so the
store is the only source: the :class:`Hub` reads every event after the last it saw
whenever it is woken (this process committed some, PostgreSQL notified, or its poll
came round) and hands each to the streams of its recipients: one ``StoredEvent``,
decoded once by the store, for all of them, so a front end that memoises its encoding
encodes an event once however many streams send it. A stream first catches up
from the store (its user's events after the client's cursor), holding live events
meanwhile, then goes live. A stream whose client does not read fast enough stops taking
live events and, once the client reads again, catches up from the store: nothing is
ever dropped, and a slow client costs no memory.

Catching up is kept fair: one stream of an account catches up at a time, its pages are
read off the event loop (``EventReads``), a few events are sent per turn of the loop,
and a stream asked to start more than ``catch_up_limit`` of its user's events back is
told to resynchronise by fecha instead (602).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol, TypeVar

from ajedrez.domain import event_kinds as ev
from ajedrez.domain.clocks import Clock, SystemClock
from ajedrez.domain.events import StoredEvent
from ajedrez.service.metrics import Metrics
from ajedrez.store.db import Database
from ajedrez.store.events import EventReads

log = logging.getLogger("ajedrez.server")
R = TypeVar("R")

HUB_PAGE = 1000  # events the hub reads at once
CATCH_UP_PAGE = 200  # events a stream reads at once while catching up
SEND_SLICE = 50  # events a catching-up stream sends per turn of the loop
CATCH_UP_LIMIT = 1000  # of a user's events: a stream starting further back gets 602
PENDING_LIMIT = 2000  # live events a catching-up stream holds; beyond, it reads them again
CATCH_UP_RETRY_SECONDS = 1.0


class Mark(Enum):
    """What a stream tells its client besides events, each with the cursor it stands at."""

    CAUGHT_UP = "caught_up"  # every stored event up to the cursor was sent
    GAP = "gap"  # the stream cannot go on from the cursor asked: it goes on after this one
    HEARTBEAT = "heartbeat"  # the stream is alive (sent when idle)


@dataclass(frozen=True, slots=True)
class Marker:
    mark: Mark
    cursor: int


class Sink(Protocol):
    """What a stream writes to: its connection, which encodes what it is given."""

    def send_event(self, item: StoredEvent | Marker) -> bool:
        """Send ``item``: a stored event (the same value to every stream it goes to, so
        a front end may encode it once) or a :class:`Marker`. False when the client is
        not reading (the stream then waits for :meth:`Stream.writable`)."""
        ...


def _observer_change(event: StoredEvent) -> tuple[str, int, int] | None:
    """(INCORPORACION or ABANDONO, the user, the game) when ``event`` says an observer
    joined or left a game."""
    user, game = event.actor_id, event.game_id
    if event.kind not in (ev.INCORPORACION, ev.ABANDONO) or user is None or game is None:
        return None
    return (event.kind, user, game) if event.fields.get("observador") is True else None


class Hub:
    def __init__(
        self,
        db: Database,
        *,
        heartbeat: float = 60.0,
        metrics: Metrics | None = None,
        clock: Clock | None = None,
        catch_up_limit: int = CATCH_UP_LIMIT,
    ) -> None:
        self.reads = EventReads(db)
        self.catch_up_limit = catch_up_limit
        self._turns: dict[int, tuple[asyncio.Lock, list[int]]] = {}  # user -> (lock, [users])
        self.metrics = metrics or Metrics()
        self.clock = clock or SystemClock()  # the one events are stamped with: their lag
        self.db = db
        self.heartbeat = heartbeat
        self.last = 0  # the newest event dispatched
        self.by_user: dict[int, set[Stream]] = {}
        self.watching: dict[int, set[Stream]] = {}  # game id -> streams observing it
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken = threading.Event()
        self._reading = False
        self._again = False
        self._stop_wake: Callable[[], None] | None = None
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        rows = await self.reads.horizon()
        self.last = int(rows[0].last)
        self._stop_wake = self.db.on_events(self._wake_from_any_thread)
        self._tasks = [
            self._loop.create_task(self._poll(), name="event-poll"),
            self._loop.create_task(self._beat(), name="event-heartbeat"),
        ]

    async def stop(self) -> None:
        if self._stop_wake is not None:
            self._stop_wake()
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.reads.close()

    @contextlib.asynccontextmanager
    async def catch_up_turn(self, user_id: int) -> AsyncIterator[None]:
        """The account's turn to catch up: one stream of an account at a time, so many
        sessions replaying one history cost what one does."""
        lock, users = self._turns.setdefault(user_id, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._turns[user_id]

    # -- waking ------------------------------------------------------------------------------

    def _wake_from_any_thread(self) -> None:
        # Many commits between two turns of the loop make one wake-up.
        if self._loop is None or self._woken.is_set():
            return
        self._woken.set()
        with contextlib.suppress(RuntimeError):  # the loop is closed: stopping
            self._loop.call_soon_threadsafe(self.wake)

    def wake(self) -> None:
        self._woken.clear()
        if self._reading:
            self._again = True
            return
        self._reading = True
        assert self._loop is not None
        self._loop.create_task(self._read())

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.db.event_poll)
            newest = await self._newest()
            if newest is not None and newest > self.last:
                self.wake()

    async def _newest(self) -> int | None:
        """The events counter: the newest event's id (None: the store cannot say now,
        logged and counted)."""
        try:
            rows = await self.reads.horizon()
        except Exception as e:
            log.warning("event stream: cannot read the counter: %s", e)
            self.metrics.store_error("events")
            return None
        return int(rows[0].last) if rows else None

    async def _beat(self) -> None:
        # Each stream gets a heartbeat after between one and two heartbeats of silence.
        assert self._loop is not None
        while True:
            await asyncio.sleep(self.heartbeat)
            quiet_since = self._loop.time() - self.heartbeat
            for streams in list(self.by_user.values()):
                for stream in list(streams):
                    stream.beat(quiet_since)

    async def _read(self) -> None:
        try:
            while True:
                self._again = False
                if not self.by_user:
                    # Nobody streams: only the newest id matters (a stream opened later
                    # starts after it), so read the counter's one row, not every event.
                    newest = await self._newest()
                    if newest is None:
                        return
                    if not self.by_user:  # else a stream opened meanwhile: read its events
                        self.last = max(self.last, newest)
                        if not self._again:
                            return
                        continue
                try:
                    page = await self.reads.after(self.last, HUB_PAGE)
                except Exception as e:
                    log.warning("event stream: cannot read events: %s", e)
                    self.metrics.store_error("events")
                    return
                for event in page:
                    self._dispatch(event)
                    self.last = event.id
                if len(page) < HUB_PAGE and not self._again:
                    return
        finally:
            self._reading = False

    def _dispatch(self, event: StoredEvent) -> None:
        # An observer's streams take the game's events from the one saying they joined,
        # up to the one saying they left.
        observer = _observer_change(event)
        if observer is not None and observer[0] == ev.INCORPORACION:
            for stream in self.by_user.get(observer[1], set()):
                self._watch(stream, observer[2])
        # The players first: a game with many observers makes them wait for none.
        players: set[Stream] = set()
        for user in (event.user_a, event.user_b):
            if user is not None:
                players |= self.by_user.get(user, set())
        for stream in players:
            stream.live(event)
        if event.observers and event.game_id is not None:
            for stream in self.watching.get(event.game_id, ()):
                if stream not in players:
                    stream.live(event)
        if observer is not None and observer[0] == ev.ABANDONO:
            for stream in self.by_user.get(observer[1], set()):
                self._unwatch(stream, observer[2])

    # -- streams -----------------------------------------------------------------------------

    async def now(self) -> int:
        """The newest event the store has committed, from any process: a stream "from
        now on" starts after it, so that every change acknowledged to anyone before it
        was asked for is behind its cursor (this hub may not have read them yet)."""
        rows = await self.reads.horizon()
        return int(rows[0].last)

    def open(
        self, sink: Sink, user_id: int, cursor: int | None, *, now: int | None = None
    ) -> Stream:
        """A stream for ``sink``'s user from ``cursor``; None: from now on, which is
        after ``now`` (read by :meth:`now` just before) or, not given, after the newest
        event this hub has handed out."""
        stream = Stream(self, sink, user_id)
        self.by_user.setdefault(user_id, set()).add(stream)
        # From now on the hub hands it every event after ``self.last``; those up to the
        # cursor are not asked for, and those after it the hub handed out already (after
        # ``now``, before the stream opened) come from the store.
        if cursor is None:
            cursor, catch_up = (self.last, False) if now is None else (now, now < self.last)
        else:
            catch_up = True
        stream.sent = cursor
        assert self._loop is not None
        stream.task = self._loop.create_task(stream.start(catch_up=catch_up))
        return stream

    def close(self, stream: Stream) -> None:
        streams = self.by_user.get(stream.user_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del self.by_user[stream.user_id]
        for game_id in list(stream.games):
            self._unwatch(stream, game_id)
        if stream.task is not None and not stream.task.done():
            stream.task.cancel()

    def _watch(self, stream: Stream, game_id: int) -> None:
        stream.games.add(game_id)
        self.watching.setdefault(game_id, set()).add(stream)

    def _unwatch(self, stream: Stream, game_id: int) -> None:
        stream.games.discard(game_id)
        streams = self.watching.get(game_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del self.watching[game_id]

    @property
    def streams(self) -> int:
        return sum(len(s) for s in self.by_user.values())


class Stream:
    """One streaming connection: catching up from the store, or live."""

    def __init__(self, hub: Hub, sink: Sink, user_id: int) -> None:
        self.hub = hub
        self.sink = sink
        self.user_id = user_id
        self.games: set[int] = set()  # observed
        self.sent = 0  # the cursor of the last event sent (or skipped as not newer)
        self.is_live = False
        self.pending: list[StoredEvent] = []  # live events that came while catching up
        self.overflow = False
        self.stalled = False  # the client stopped reading: see writable()
        self.catching_up = True  # live events wait in ``pending`` until it is live
        self.caught_up = False  # 601 was sent
        self.last_write = 0.0  # loop time of the last frame: heartbeats fill silences
        self.task: asyncio.Task[None] | None = None

    @property
    def start_cursor(self) -> int:
        return self.sent

    async def start(self, *, catch_up: bool) -> None:
        hub = self.hub
        try:
            for row in await hub.reads.observed(self.user_id):
                hub._watch(self, row.game_id)
        except Exception as e:
            log.warning("event stream: cannot read the observed games: %s", e)
        if not catch_up:
            self._go_live()
            return
        async with hub.catch_up_turn(self.user_id):
            gap = await self._gap()
            if gap is not None:
                self._write(Marker(Mark.GAP, gap))
                self.sent = gap
            await self._catch_up()

    async def _gap(self) -> int | None:
        """Where the stream must go on from, when it cannot from the cursor asked: after
        the newest event discarded, for a cursor older than that; after the newest event
        there is, for a cursor beyond it (a database restored from an older backup: the
        events numbered up to the client's cursor will be new ones), or for a cursor more
        than ``catch_up_limit`` of the user's events back (a client that far behind
        resynchronises by fecha, which costs far less than the replay). The counter is
        read from the store, not from the hub, which may not have seen another process's
        newest events yet."""
        rows = await self._from_store(self.hub.reads.horizon)
        newest, pruned = int(rows[0].last), int(rows[0].pruned_through)
        if self.sent > newest:
            return newest
        if self.sent < pruned:
            return pruned
        limit = self.hub.catch_up_limit
        if newest - self.sent > limit and await self._from_store(
            lambda: self.hub.reads.beyond(self.user_id, self.sent, limit)
        ):
            return newest
        return None

    async def _from_store(self, read: Callable[[], Awaitable[R]]) -> R:
        """What ``read`` gets from the store, asked again after a pause while it fails."""
        while True:
            try:
                return await read()
            except Exception as e:
                log.warning("event stream of user %d: %s; trying again", self.user_id, e)
                self.hub.metrics.store_error("events")
                await asyncio.sleep(CATCH_UP_RETRY_SECONDS)

    async def _catch_up(self) -> None:
        """Send the user's stored events after ``sent``, then go live. A read the store
        fails is tried again after a pause: the stream waits, it does not skip."""
        self.catching_up = True
        self.is_live = False
        try:
            while True:
                page = await self._from_store(
                    lambda: self.hub.reads.of_user(self.user_id, self.sent, CATCH_UP_PAGE)
                )
                for i, event in enumerate(page, start=1):
                    if not self._send(event):
                        return  # stalled: writable() starts again from self.sent
                    if i % SEND_SLICE == 0:
                        await asyncio.sleep(0)  # the others' turn
                if len(page) == CATCH_UP_PAGE:
                    continue
                if self.overflow:  # some live events were not kept: read them again
                    self.overflow = False
                    self.pending.clear()
                    continue
                break
        finally:
            self.catching_up = False
        self._go_live()

    def _go_live(self) -> None:
        self.catching_up = False
        self.is_live = True
        self._flush_pending()
        if self.is_live and not self.caught_up:
            self.caught_up = True
            self._write(Marker(Mark.CAUGHT_UP, self.cursor))

    def _flush_pending(self) -> None:
        pending, self.pending = self.pending, []
        for event in pending:
            if not self._send(event):
                return

    @property
    def cursor(self) -> int:
        """The cursor the client may store now: every event of its user up to it was sent."""
        return max(self.sent, self.hub.last) if self.is_live else self.sent

    def live(self, event: StoredEvent) -> None:
        if self.is_live:
            self._send(event)
        elif self.catching_up and not self.stalled:
            if len(self.pending) < PENDING_LIMIT:
                self.pending.append(event)
            else:
                self.overflow = True
        # stalled: the catch-up after writable() reads it from the store

    def beat(self, quiet_since: float) -> None:
        """A heartbeat, if nothing was written since ``quiet_since`` (loop time)."""
        if self.is_live and self.last_write <= quiet_since:
            self._write(Marker(Mark.HEARTBEAT, self.cursor))

    def _send(self, event: StoredEvent) -> bool:
        if event.id <= self.sent:
            return True  # sent already (a catch-up page and a live event overlap)
        self.sent = event.id
        self.hub.metrics.event_sent(event.at_ms, self.hub.clock.now_ms(), live=self.is_live)
        return self._write(event)

    def _write(self, item: StoredEvent | Marker) -> bool:
        assert self.hub._loop is not None
        self.last_write = self.hub._loop.time()
        if self.sink.send_event(item):
            return True
        self.stalled = True
        self.is_live = False
        self.pending.clear()
        return False

    def writable(self) -> None:
        """The client reads again: catch up from the store, then go live."""
        if not self.stalled:
            return
        self.stalled = False
        assert self.hub._loop is not None
        self.task = self.hub._loop.create_task(self._catch_up_in_turn())

    async def _catch_up_in_turn(self) -> None:
        async with self.hub.catch_up_turn(self.user_id):
            await self._catch_up()
