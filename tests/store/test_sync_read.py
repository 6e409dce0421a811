"""``Database.sync_read``, the read behind TRAN, PPEN and JAUT's fecha, on both stores.

It waits for the writes in flight, so that the fecha it hands out covers every write
acknowledged before; then it reads from one snapshot while new writes go on
(``docs/design.md``, "Why nothing is missed").
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from ajedrez.store.db import Database


@pytest.fixture
def store(database_url: str) -> Iterator[Database]:
    db = Database(database_url)
    key = "INTEGER PRIMARY KEY" if db.is_sqlite else "SERIAL PRIMARY KEY"
    with db.engine.begin() as c:
        c.execute(text(f"CREATE TABLE sr_item (id {key}, who TEXT NOT NULL)"))
    yield db
    with db.engine.begin() as c:
        c.execute(text("DROP TABLE sr_item"))
    db.dispose()


def _insert(db: Database, who: str) -> None:
    with db.write() as tx:
        tx.conn.execute(text("INSERT INTO sr_item (who) VALUES (:w)"), {"w": who})


def _whos(conn) -> list[str]:  # type: ignore[no-untyped-def]
    return list(conn.execute(text("SELECT who FROM sr_item ORDER BY id")).scalars())


def test_a_sync_read_waits_for_the_write_in_flight_and_sees_it(store):
    inside, release = threading.Event(), threading.Event()
    seen: list[list[str]] = []

    def writer() -> None:
        with store.write() as tx:
            tx.conn.execute(text("INSERT INTO sr_item (who) VALUES ('in flight')"))
            inside.set()
            assert release.wait(10)

    def reader() -> None:
        with store.sync_read() as tx:
            seen.append(_whos(tx.conn))

    w = threading.Thread(target=writer)
    w.start()
    assert inside.wait(10)
    r = threading.Thread(target=reader)
    r.start()
    r.join(0.5)
    assert r.is_alive(), "the sync read must wait for the write in flight"
    release.set()
    w.join(10)
    r.join(10)
    assert seen == [["in flight"]]


def test_writes_go_on_while_a_sync_read_reads_from_one_snapshot(store):
    _insert(store, "before")
    with store.sync_read() as tx:
        assert _whos(tx.conn) == ["before"]
        done = threading.Event()

        def writer() -> None:
            _insert(store, "during")
            done.set()

        w = threading.Thread(target=writer)
        w.start()
        # Held back until the read ended, the write would time out here.
        assert done.wait(10), "a write waited for a sync read's whole read"
        w.join(10)
        assert _whos(tx.conn) == ["before"]  # the read's snapshot, taken before the write
    with store.read() as conn:
        assert _whos(conn) == ["before", "during"]
