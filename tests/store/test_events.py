"""The stored event stream on the store under test (SQLite, or PostgreSQL with
``AJEDREZ_TEST_DATABASE_URL``): events are written with the transaction that emits them,
numbered from the counter in commit order, so that a reader that has seen id ``n`` has
seen every committed id below it, whatever the concurrency; a transaction that fails
leaves none; the retention removes the oldest and records where it stopped; and a
process is told of commits (its own at once, PostgreSQL's other processes by LISTEN).
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from sqlalchemy import select

from ajedrez.domain.events import Event
from ajedrez.store import statements as st
from ajedrez.store.db import Database
from ajedrez.store.events import PRUNE_BATCH, EventReads, prune_events
from ajedrez.store.models import EventCounter

WRITERS = 6
EACH = 60
JOIN_SECONDS = 120


def event(n: int, at_ms: int = 1_000) -> Event:
    return Event("TABLAS", {"partida": n, "usuario": "ana"}, at_ms, n, 1, 2, 1, observers=True)


def read_after(db: Database, cursor: int, limit: int = 1000) -> list[int]:
    with db.read_each() as conn:
        return [r.id for r in st.EVENTS_AFTER.all(conn, after=cursor, n=limit)]


def horizon(db: Database) -> tuple[int, int]:
    with db.engine.connect() as c:
        row = c.execute(select(EventCounter.last, EventCounter.pruned_through)).one()
    return int(row.last), int(row.pruned_through)


def test_events_are_numbered_in_commit_order_and_read_without_a_gap(own_db):
    """Writers commit events side by side while a reader follows the stream by its last
    id only: it must see every id exactly once, in order, and never skip one that was
    still to commit (on PostgreSQL the counter's row lock gives ids in commit order)."""
    _url, db = own_db
    base, _pruned = horizon(db)
    stop = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for i in range(EACH):
                with db.write() as tx:
                    tx.emit(event(worker * 1000 + i))
                    if i % 3 == 0:
                        tx.emit(event(worker * 1000 + i))  # two in one transaction
        except BaseException as e:  # reported by the test's thread
            errors.append(e)

    def follow() -> None:
        cursor = base
        try:
            while True:
                done = stop.is_set()
                found = read_after(db, cursor)
                seen.extend(found)
                if found:
                    cursor = found[-1]
                elif done:
                    return
        except BaseException as e:
            errors.append(e)

    reader = threading.Thread(target=follow)
    reader.start()
    writers = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for t in writers:
        t.start()
    for t in writers:
        t.join(JOIN_SECONDS)
    stop.set()
    reader.join(JOIN_SECONDS)
    assert not errors, errors
    total = WRITERS * (EACH + (EACH + 2) // 3)
    assert seen == list(range(base + 1, base + total + 1))
    assert horizon(db)[0] == base + total


def test_a_failed_transaction_leaves_no_event_and_no_hole(own_db):
    _url, db = own_db
    base, _pruned = horizon(db)
    with pytest.raises(RuntimeError), db.write() as tx:
        tx.emit(event(1))
        raise RuntimeError("the change failed")
    with db.write() as tx:
        tx.emit(event(2))
    assert read_after(db, base) == [base + 1]


def test_the_process_is_told_of_its_own_commits(own_db):
    _url, db = own_db
    woken = threading.Event()
    stop = db.on_events(woken.set)
    try:
        woken.clear()  # PostgreSQL's listener wakes once as it starts
        with db.write() as tx:
            tx.emit(event(1))
        assert woken.wait(5)
    finally:
        stop()


def test_postgresql_tells_other_processes(own_db):
    """Another Database object on the same URL stands for another process: its commits
    reach this one through LISTEN/NOTIFY. On SQLite a reader polls instead."""
    url, db = own_db
    if db.is_sqlite:
        assert db.event_poll <= 0.25  # the bound on cross-process delay
        return
    other = Database(url)
    woken = threading.Event()
    stop = db.on_events(woken.set)
    try:
        deadline = time.monotonic() + 5
        while not woken.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)  # the listener's first wake: it is listening
        woken.clear()
        with other.write() as tx:
            tx.emit(event(1))
        assert woken.wait(5)
    finally:
        stop()
        other.dispose()


def test_retention_removes_the_oldest_and_records_where(own_db):
    _url, db = own_db
    base, _pruned = horizon(db)
    with db.write() as tx:
        for n in range(10):
            tx.emit(event(n, at_ms=1_000 + n))
    assert prune_events(db, 1_005) == 5  # those before 1005 ms
    assert horizon(db) == (base + 10, base + 5)
    assert read_after(db, 0) == list(range(base + 6, base + 11))
    assert prune_events(db, 1_005) == 0
    assert horizon(db)[1] == base + 5


def test_retention_stops_at_the_first_recent_event(own_db):
    """Times follow ids but for servers' clocks: an old event after a recent one stays."""
    _url, db = own_db
    base, _pruned = horizon(db)
    with db.write() as tx:
        for at in (1, 2, 50, 3, 4):
            tx.emit(event(at, at_ms=at))
    assert prune_events(db, 10) == 2
    assert read_after(db, 0) == [base + 3, base + 4, base + 5]


def test_retention_works_through_many_batches(own_db):
    _url, db = own_db
    base, _pruned = horizon(db)
    count = PRUNE_BATCH * 2 + 7
    with db.write() as tx:
        for n in range(count):
            tx.emit(event(n, at_ms=1))
    assert prune_events(db, 2) == count
    assert horizon(db) == (base + count, base + count)


def test_a_stream_catch_up_reads_the_users_events_and_how_far_behind_it_is(own_db):
    """``EventReads.of_user`` and ``beyond`` (a stream's catch-up and its limit, on the
    catch-up thread): a user's events as either player, and none of anyone else's."""
    _url, db = own_db
    base, _pruned = horizon(db)
    user, other = 9_001, 9_002

    def made(n: int, a: int, b: int) -> Event:
        return Event("TABLAS", {"partida": n, "usuario": "ana"}, 1_000, n, a, b, a)

    with db.write() as tx:
        for n in range(4):
            tx.emit(made(n, user, other))
            tx.emit(made(n, other + 1, other + 2))  # not the user's
            tx.emit(made(n, other, user))
    reads = EventReads(db)

    async def check() -> None:
        mine = await reads.of_user(user, base, 100)
        assert [e.id for e in mine] == [base + 3 * n + k for n in range(4) for k in (1, 3)]
        assert await reads.beyond(user, base, 7) is True
        assert await reads.beyond(user, base, 8) is False
        assert await reads.beyond(user, mine[0].id, 6) is True
        assert await reads.beyond(user, mine[1].id, 6) is False
        assert await reads.beyond(user + 99, base, 0) is False

    try:
        asyncio.run(check())
    finally:
        reads.close()
