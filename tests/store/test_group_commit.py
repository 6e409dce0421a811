"""SQLite group commit: writers that queue share one transaction and one fsync.

These run on a SQLite file of their own whatever database the suite targets, because
group commit is how the SQLite store works (PostgreSQL commits each writer itself).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from ajedrez.domain.errors import Failure, Refusal, StorageError
from ajedrez.store import sqlite as sqlite_module
from ajedrez.store.db import Database
from tests.support.common import wait_for
from tests.support.store import count_commits


@pytest.fixture
def sqlite_db(tmp_path) -> Iterator[Database]:  # type: ignore[no-untyped-def]
    db = Database(f"sqlite:///{tmp_path / 'group.sqlite3'}")
    with db.engine.begin() as c:
        c.execute(text("CREATE TABLE parent (id INTEGER PRIMARY KEY)"))
        c.execute(
            text(
                "CREATE TABLE item (id INTEGER PRIMARY KEY, who TEXT NOT NULL,"
                " parent_id INTEGER REFERENCES parent(id))"
            )
        )
    yield db
    db.dispose()


def _rows(db: Database) -> list[str]:
    with db.read() as c:
        return list(c.execute(text("SELECT who FROM item ORDER BY id")).scalars())


def _queue_behind(db: Database, workers: list[threading.Thread], count: int) -> None:
    """Start ``workers`` and wait until ``count`` threads queue for the write lock."""
    for w in workers:
        w.start()
    assert wait_for(lambda: db._queued >= count, 10, interval=0.001), "writers did not queue"


def _overlapping_writers(db: Database, threads: int, per_thread: int) -> None:
    """``threads`` threads each insert ``per_thread`` rows, one writer at a time, and
    each writer holds the write lock until another thread queues for it, so that they
    overlap as under load. It stops waiting when no other thread could queue: each has
    finished, or waits for the commit of the batch it wrote in (which only the holder's
    leaving brings)."""
    lock = threading.Lock()
    parked = [0]  # threads past their writer's work, in its commit or waiting for it
    finished = [0]
    errors: list[BaseException] = []

    def someone_queued_or_none_can() -> bool:
        with lock:
            none_can = parked[0] + finished[0] == threads - 1
        return db._queued > 0 or none_can

    def writer(n: int) -> None:
        try:
            for i in range(per_thread):
                with db.write() as tx:
                    tx.conn.execute(text("INSERT INTO item (who) VALUES (:w)"), {"w": f"{n}-{i}"})
                    assert wait_for(someone_queued_or_none_can, 10, interval=0.0002)
                    with lock:
                        parked[0] += 1
                with lock:
                    parked[0] -= 1
        except BaseException as e:
            errors.append(e)
        with lock:
            finished[0] += 1

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors


def test_concurrent_writers_share_commits_and_lose_nothing(sqlite_db):
    commits = count_commits(sqlite_db)
    per_thread, threads = 40, 12
    _overlapping_writers(sqlite_db, threads, per_thread)
    assert commits[0] < per_thread * threads / 2, commits[0]
    rows = _rows(sqlite_db)
    assert sorted(rows) == sorted(f"{n}-{i}" for n in range(threads) for i in range(per_thread))


def test_a_refused_writer_takes_only_its_own_changes_back(sqlite_db, monkeypatch):
    monkeypatch.setattr(sqlite_module, "GROUP_COMMIT_MAX_SECONDS", 30.0)
    commits = count_commits(sqlite_db)
    outcomes: dict[str, str] = {}
    inside, release = threading.Event(), threading.Event()

    def first() -> None:
        with sqlite_db.write() as tx:
            tx.conn.execute(text("INSERT INTO item (who) VALUES ('first')"))
            inside.set()
            release.wait(10)
        outcomes["first"] = "ok"

    def writer(who: str, refuse: bool) -> None:
        try:
            with sqlite_db.write() as tx:
                tx.conn.execute(text("INSERT INTO item (who) VALUES (:w)"), {"w": who})
                if refuse:
                    raise Failure(Refusal.ILLEGAL_MOVE, "refused")
            outcomes[who] = "ok"
        except Failure:
            outcomes[who] = "refused"

    lead = threading.Thread(target=first)
    lead.start()
    assert inside.wait(10)
    others = [
        threading.Thread(target=writer, args=("second", False)),
        threading.Thread(target=writer, args=("refused", True)),
        threading.Thread(target=writer, args=("third", False)),
    ]
    _queue_behind(sqlite_db, others, 3)
    release.set()
    for t in [lead, *others]:
        t.join(10)
    assert outcomes == {"first": "ok", "second": "ok", "refused": "refused", "third": "ok"}
    assert commits[0] == 1  # the four writers shared one commit
    assert sorted(_rows(sqlite_db)) == ["first", "second", "third"]


def test_a_failed_commit_fails_every_writer_of_the_batch(sqlite_db, monkeypatch):
    """A deferred foreign key fails at COMMIT: nobody in the batch may be told 'stored'."""
    monkeypatch.setattr(sqlite_module, "GROUP_COMMIT_MAX_SECONDS", 30.0)
    outcomes: dict[str, str] = {}
    inside, release = threading.Event(), threading.Event()

    def writer(who: str, orphan: bool = False, hold: bool = False) -> None:
        try:
            with sqlite_db.write() as tx:
                if orphan:
                    tx.conn.execute(text("PRAGMA defer_foreign_keys = ON"))
                    tx.conn.execute(
                        text("INSERT INTO item (who, parent_id) VALUES (:w, 99)"), {"w": who}
                    )
                else:
                    tx.conn.execute(text("INSERT INTO item (who) VALUES (:w)"), {"w": who})
                if hold:
                    inside.set()
                    release.wait(10)
            outcomes[who] = "ok"
        except StorageError:
            outcomes[who] = "storage error"

    lead = threading.Thread(target=writer, args=("lead",), kwargs={"hold": True})
    lead.start()
    assert inside.wait(10)
    others = [
        threading.Thread(target=writer, args=("orphan",), kwargs={"orphan": True}),
        threading.Thread(target=writer, args=("last",)),
    ]
    _queue_behind(sqlite_db, others, 2)
    release.set()
    for t in [lead, *others]:
        t.join(10)
    assert outcomes == dict.fromkeys(["lead", "orphan", "last"], "storage error")
    assert _rows(sqlite_db) == []
    # The store is usable again at once.
    with sqlite_db.write() as tx:
        tx.conn.execute(text("INSERT INTO item (who) VALUES ('after')"))
    assert _rows(sqlite_db) == ["after"]


def test_a_sync_read_commits_the_open_batch_first(sqlite_db, monkeypatch):
    """A sync read hands out a fecha: every write acknowledged before must be in it, and a
    batch still open behind the lock must not be read uncommitted."""
    monkeypatch.setattr(sqlite_module, "GROUP_COMMIT_MAX_SECONDS", 30.0)
    inside, release = threading.Event(), threading.Event()
    seen: list[list[str]] = []

    def lead() -> None:
        with sqlite_db.write() as tx:
            tx.conn.execute(text("INSERT INTO item (who) VALUES ('lead')"))
            inside.set()
            release.wait(10)

    def reader() -> None:
        with sqlite_db.sync_read() as tx:
            seen.append(list(tx.conn.execute(text("SELECT who FROM item")).scalars()))

    t = threading.Thread(target=lead)
    t.start()
    assert inside.wait(10)
    r = threading.Thread(target=reader)
    _queue_behind(sqlite_db, [r], 1)
    release.set()  # lead leaves the batch open: the reader is queued
    t.join(10)
    r.join(10)
    assert seen == [["lead"]]
    with sqlite_db.engine.connect() as c:  # committed, not only visible to the reader
        assert list(c.execute(text("SELECT who FROM item")).scalars()) == ["lead"]


def test_group_commit_of_one_commits_every_writer(tmp_path):
    db = Database(f"sqlite:///{tmp_path / 'one.sqlite3'}", group_commit=1)
    try:
        with db.engine.begin() as c:
            c.execute(text("CREATE TABLE item (id INTEGER PRIMARY KEY, who TEXT)"))
        commits = count_commits(db)
        _overlapping_writers(db, threads=4, per_thread=10)  # others queue behind each
        assert commits[0] == 40
        assert len(_rows(db)) == 40
    finally:
        db.dispose()


def test_writers_of_another_process_wait_for_its_turn(tmp_path):
    """Processes take turns on an flock of ``<database>-writer.lock``: a write waits while
    another process holds it and goes on as soon as it is released."""
    import fcntl
    import os

    path = tmp_path / "turns.sqlite3"
    db = Database(f"sqlite:///{path}")
    try:
        with db.engine.begin() as c:
            c.execute(text("CREATE TABLE item (id INTEGER PRIMARY KEY, who TEXT)"))
        other = os.open(f"{path}-writer.lock", os.O_RDWR | os.O_CREAT)  # another process's
        fcntl.flock(other, fcntl.LOCK_EX)
        done = threading.Event()

        def writer() -> None:
            with db.write() as tx:
                tx.conn.execute(text("INSERT INTO item (who) VALUES ('waited')"))
            done.set()

        t = threading.Thread(target=writer)
        t.start()
        assert not done.wait(0.5)  # its turn has not come
        fcntl.flock(other, fcntl.LOCK_UN)
        assert done.wait(10)
        t.join(10)
        os.close(other)
        assert _rows(db) == ["waited"]
    finally:
        db.dispose()
