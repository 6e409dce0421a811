"""The SQLite writer thread (``storage/writer.py``): writes queued from an event loop.

Like the group-commit tests these run on a SQLite file of their own whatever database
the suite targets: only the SQLite store queues its writes (``Database.writes_later``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import event, text

from ajedrez.codes import Reply
from ajedrez.errors import Failure, StorageError
from ajedrez.storage.db import Conflict, Database, Tx


@pytest.fixture
def sqlite_db(tmp_path) -> Iterator[Database]:  # type: ignore[no-untyped-def]
    db = Database(f"sqlite:///{tmp_path / 'writer.sqlite3'}")
    with db.engine.begin() as c:
        c.execute(text("CREATE TABLE parent (id INTEGER PRIMARY KEY)"))
        c.execute(
            text(
                "CREATE TABLE item (id INTEGER PRIMARY KEY, who TEXT NOT NULL UNIQUE,"
                " parent_id INTEGER REFERENCES parent(id))"
            )
        )
    yield db
    db.dispose()


def _rows(db: Database) -> list[str]:
    with db.read() as c:
        return list(c.execute(text("SELECT who FROM item ORDER BY id")).scalars())


def _count_commits(db: Database) -> list[int]:
    commits = [0]

    @event.listens_for(db.engine, "commit")
    def _on_commit(_conn) -> None:  # type: ignore[no-untyped-def]
        commits[0] += 1

    return commits


def _insert(who: str, *, refuse: bool = False, orphan: bool = False):  # type: ignore[no-untyped-def]
    def job(tx: Tx) -> str:
        if orphan:
            tx.conn.execute(text("PRAGMA defer_foreign_keys = ON"))
            tx.conn.execute(text("INSERT INTO item (who, parent_id) VALUES (:w, 99)"), {"w": who})
        else:
            tx.conn.execute(text("INSERT INTO item (who) VALUES (:w)"), {"w": who})
        if refuse:
            raise Failure(Reply.F_ILLEGAL, f"{who} refused")
        return f"{who} stored"

    return job


async def _outcomes(futures: list[asyncio.Future]) -> list[object]:  # type: ignore[type-arg]
    done = await asyncio.gather(*futures, return_exceptions=True)
    return [type(d).__name__ if isinstance(d, BaseException) else d for d in done]


def _behind_a_held_batch(db: Database, jobs: list) -> list[object]:  # type: ignore[type-arg]
    """Queue ``jobs`` while the writer thread is busy with a first job, so that they
    all land in its next batch; returns each job's outcome."""
    inside, release = threading.Event(), threading.Event()

    def hold(tx: Tx) -> str:
        tx.conn.execute(text("INSERT INTO item (who) VALUES ('held')"))
        inside.set()
        assert release.wait(10)
        return "held stored"

    async def scenario() -> list[object]:
        first = db.write_later(hold)
        assert await asyncio.to_thread(inside.wait, 10)
        queued = [db.write_later(job) for job in jobs]
        release.set()
        return await _outcomes([first, *queued])

    return asyncio.run(scenario())


def test_queued_writes_share_one_commit_and_each_gets_its_own_answer(sqlite_db):
    commits = _count_commits(sqlite_db)
    outcomes = _behind_a_held_batch(
        sqlite_db, [_insert("a"), _insert("refused", refuse=True), _insert("b"), _insert("c")]
    )
    assert outcomes == ["held stored", "a stored", "Failure", "b stored", "c stored"]
    assert commits[0] == 2  # the held job's batch, then one for the four queued behind it
    # The refused job took back its own insert and nothing else.
    assert _rows(sqlite_db) == ["held", "a", "b", "c"]


def test_a_constraint_refuses_one_job_as_a_conflict(sqlite_db):
    outcomes = _behind_a_held_batch(sqlite_db, [_insert("x"), _insert("x"), _insert("y")])
    assert outcomes == ["held stored", "x stored", "Conflict", "y stored"]
    assert _rows(sqlite_db) == ["held", "x", "y"]


def test_a_failed_commit_fails_every_job_of_the_batch(sqlite_db):
    """A deferred foreign key fails at COMMIT: no job of that batch may be told 'stored'."""
    outcomes = _behind_a_held_batch(sqlite_db, [_insert("a"), _insert("orphan", orphan=True)])
    assert outcomes == ["held stored", "StorageError", "StorageError"]
    assert _rows(sqlite_db) == ["held"]

    async def after() -> object:
        return await sqlite_db.write_later(_insert("after"))

    assert asyncio.run(after()) == "after stored"  # usable again at once
    assert _rows(sqlite_db) == ["held", "after"]


def test_a_write_whose_waiter_is_cancelled_is_still_stored(sqlite_db):
    inside, release = threading.Event(), threading.Event()

    def slow(tx: Tx) -> None:
        inside.set()
        assert release.wait(10)
        tx.conn.execute(text("INSERT INTO item (who) VALUES ('slow')"))

    async def scenario() -> None:
        waiter = asyncio.ensure_future(asyncio.shield(sqlite_db.write_later(slow)))
        assert await asyncio.to_thread(inside.wait, 10)
        waiter.cancel()
        release.set()

    asyncio.run(scenario())
    sqlite_db.dispose()  # waits for the writes already queued
    assert _rows(sqlite_db) == ["slow"]


def test_write_jobs_map_errors_as_write_does(sqlite_db):
    """The writer thread's batch runs each job as ``write()`` runs a writer."""
    results = sqlite_db.write_jobs([_insert("one"), _insert("one"), _insert("two")])
    assert [type(r).__name__ if isinstance(r, Exception) else r for r in results] == [
        "one stored",
        "Conflict",
        "two stored",
    ]
    assert isinstance(results[1], Conflict) and not isinstance(results[1], StorageError)
    assert _rows(sqlite_db) == ["one", "two"]
