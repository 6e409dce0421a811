"""The stored event stream as the server reads it: every event after a cursor (a
process's hub), one user's events after a cursor (a stream catching up), the counter.
The hub's reads are queued like a STAT (``Database.read_later``); a stream's catch-up
reads, pages of many events each, run one at a time on a thread of their own, so that
however many streams catch up they never hold the event loop or the queue that moves'
reads share. Events come back as :class:`StoredEvent` values, their data decoded once
(``event_data.py``).

Events are written by the transactions that make them (``Tx.emit``, ``Tx.flush_events``);
what tells a process that some have committed is the database's (``Database.on_events``).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import delete, select, update

from ajedrez.domain.events import StoredEvent
from ajedrez.store import statements as st
from ajedrez.store.db import Database
from ajedrez.store.event_data import stored
from ajedrez.store.models import Event, EventCounter

PRUNE_BATCH = 5000  # events looked at, and removed, per transaction


class EventReads:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._catch_up = ThreadPoolExecutor(1, thread_name_prefix="catch-up")

    def close(self) -> None:
        self._catch_up.shutdown(wait=False, cancel_futures=True)

    def horizon(self) -> asyncio.Future[list[Any]]:
        """The counter's row: ``last`` (the newest id given) and ``pruned_through``."""
        return self.db.read_later(st.EVENT_HORIZON)

    async def after(self, cursor: int, limit: int) -> list[StoredEvent]:
        """Up to ``limit`` events after ``cursor``, every recipient's, in order."""
        rows = await self.db.read_later(st.EVENTS_AFTER, after=cursor, n=limit)
        return [stored(row) for row in rows]

    async def of_user(self, user_id: int, cursor: int, limit: int) -> list[StoredEvent]:
        """Up to ``limit`` of the user's events after ``cursor``, in order: as a player,
        and of the games the user observes now."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._catch_up, self._of_user, user_id, cursor, limit)

    def _of_user(self, user_id: int, cursor: int, limit: int) -> list[StoredEvent]:
        params = {"uid": user_id, "after": cursor, "n": limit}
        with self.db.read_each() as conn:
            rows = st.USER_EVENTS_AFTER.all_each(conn, [params])[0]
        return [stored(row) for row in rows]

    async def beyond(self, user_id: int, cursor: int, limit: int) -> bool:
        """Has the user more than ``limit`` events after ``cursor``?"""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._catch_up, self._beyond, user_id, cursor, limit)

    def _beyond(self, user_id: int, cursor: int, limit: int) -> bool:
        params = {"uid": user_id, "after": cursor, "n": limit + 1, "skip": limit}
        with self.db.read_each() as conn:
            return bool(st.USER_EVENT_BEYOND.all_each(conn, [params])[0])

    def observed(self, user_id: int) -> asyncio.Future[list[Any]]:
        """The games the user observes (rows of one column, ``game_id``)."""
        return self.db.read_later(st.OBSERVED_GAMES, uid=user_id)


def prune_events(db: Database, before_ms: int) -> int:
    """Remove the events that happened before ``before_ms``, oldest first, and record the
    newest removed in ``event_counter.pruned_through`` (a stream asked for an older
    cursor is told, 602). Ids follow commit order and times follow ids but for the
    spread of servers' clocks, so the oldest events are walked by id and the walk stops
    at the first that is recent enough. Returns how many were removed."""
    removed = 0
    while True:
        with db.write() as tx:
            rows = tx.conn.execute(
                select(Event.id, Event.at_ms).order_by(Event.id).limit(PRUNE_BATCH)
            ).all()
            cut = 0
            for row in rows:
                if row.at_ms >= before_ms:
                    break
                cut = row.id
            if not cut:
                return removed
            gone = tx.conn.execute(delete(Event).where(Event.id <= cut)).rowcount
            tx.conn.execute(
                update(EventCounter).where(EventCounter.id == 1).values(pruned_through=cut)
            )
            removed += gone
        if len(rows) < PRUNE_BATCH or cut != rows[-1].id:
            return removed
