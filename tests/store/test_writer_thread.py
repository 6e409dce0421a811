"""Writes queued from an event loop and committed in batches (``Database.write_jobs``,
``store/batches.py``): on PostgreSQL by the writer thread, on SQLite by the loop
itself at the end of the turn that queued them.

These run on the suite's database: SQLite (a file of their own) or PostgreSQL (the run's
schema). A batch's jobs get the same answers on both; what differs is how a failure is
contained: SQLite runs each job in a savepoint, PostgreSQL runs the whole batch again
one job per transaction.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import event, func, select, table, text

from ajedrez.domain.errors import Failure, Refusal, StorageError, TransientStorageError
from ajedrez.store.db import Conflict, Database, Tx
from ajedrez.store.prepared import Prepared
from tests.support.store import count_commits


@pytest.fixture
def store(database_url, tmp_path) -> Iterator[Database]:  # type: ignore[no-untyped-def]
    url = database_url
    if url.startswith("sqlite"):
        url = f"sqlite:///{tmp_path / 'writer.sqlite3'}"
    db = Database(url)
    deferrable = "" if db.is_sqlite else " DEFERRABLE"
    key = "INTEGER PRIMARY KEY" if db.is_sqlite else "SERIAL PRIMARY KEY"
    with db.engine.begin() as c:
        c.execute(text("DROP TABLE IF EXISTS wt_item"))
        c.execute(text("DROP TABLE IF EXISTS wt_parent"))
        c.execute(text("CREATE TABLE wt_parent (id INTEGER PRIMARY KEY)"))
        c.execute(
            text(
                f"CREATE TABLE wt_item (id {key}, who TEXT NOT NULL UNIQUE,"
                f" parent_id INTEGER REFERENCES wt_parent(id){deferrable})"
            )
        )
    yield db
    with db.engine.begin() as c:
        c.execute(text("DROP TABLE wt_item"))
        c.execute(text("DROP TABLE wt_parent"))
    db.dispose()


def _rows(db: Database) -> list[str]:
    with db.read() as c:
        return list(c.execute(text("SELECT who FROM wt_item ORDER BY id")).scalars())


def _insert(who: str, *, refuse: bool = False, orphan: bool = False):  # type: ignore[no-untyped-def]
    def job(tx: Tx) -> str:
        if orphan:
            defer = (
                "PRAGMA defer_foreign_keys = ON"
                if tx.conn.dialect.name == "sqlite"
                else ("SET CONSTRAINTS ALL DEFERRED")
            )
            tx.conn.execute(text(defer))
            tx.conn.execute(
                text("INSERT INTO wt_item (who, parent_id) VALUES (:w, 99)"), {"w": who}
            )
        else:
            tx.conn.execute(text("INSERT INTO wt_item (who) VALUES (:w)"), {"w": who})
        if refuse:
            raise Failure(Refusal.ILLEGAL_MOVE, f"{who} refused")
        return f"{who} stored"

    return job


async def _outcomes(futures: list[asyncio.Future]) -> list[object]:  # type: ignore[type-arg]
    done = await asyncio.gather(*futures, return_exceptions=True)
    return [type(d).__name__ if isinstance(d, BaseException) else d for d in done]


def _behind_a_held_batch(db: Database, jobs: list) -> list[object]:  # type: ignore[type-arg]
    """Queue ``jobs`` while a first job's batch runs, so that they all land in the next
    batch; returns each job's outcome. On SQLite the first batch's statements run on the
    loop when the test yields, and what is queued while it commits waits for the next
    batch; on PostgreSQL the first job holds the writer thread until the rest
    are queued."""
    inside, release = threading.Event(), threading.Event()

    def hold(tx: Tx) -> str:
        tx.conn.execute(text("INSERT INTO wt_item (who) VALUES ('held')"))
        if not db.is_sqlite:
            inside.set()
            assert release.wait(10)
        return "held stored"

    async def scenario() -> list[object]:
        first = db.write_later(hold)
        if db.is_sqlite:
            await asyncio.sleep(0)  # the loop fills the first batch before this resumes
        else:
            assert await asyncio.to_thread(inside.wait, 10)
        queued = [db.write_later(job) for job in jobs]
        release.set()
        return await _outcomes([first, *queued])

    return asyncio.run(scenario())


def test_queued_writes_share_one_commit_and_each_gets_its_own_answer(store):
    commits = count_commits(store)
    outcomes = _behind_a_held_batch(
        store, [_insert("a"), _insert("refused", refuse=True), _insert("b"), _insert("c")]
    )
    assert outcomes == ["held stored", "a stored", "Failure", "b stored", "c stored"]
    if store.is_sqlite:
        assert commits[0] == 2  # the held job's batch, then one for the four behind it
    else:
        assert commits[0] == 1 + 3  # the refusal sent each job to a transaction of its own
    # The refused job took back its own insert and nothing else.
    assert _rows(store) == ["held", "a", "b", "c"]


def test_batches_share_one_commit(store):
    commits = count_commits(store)
    outcomes = _behind_a_held_batch(store, [_insert(w) for w in "abcdef"])
    assert outcomes == ["held stored", *(f"{w} stored" for w in "abcdef")]
    assert commits[0] == 2
    assert _rows(store) == ["held", *"abcdef"]


def test_when_a_job_fails_the_others_run_once_or_again_alone(store):
    """SQLite undoes only the failed job (its savepoint); PostgreSQL undoes the batch
    and runs each job again in a transaction of its own, so a job must be safe to run
    twice."""
    runs: list[str] = []

    def counted(tx: Tx) -> str:
        runs.append("counted")
        return _insert("counted")(tx)

    outcomes = _behind_a_held_batch(store, [counted, _insert("refused", refuse=True)])
    assert outcomes == ["held stored", "counted stored", "Failure"]
    assert runs == (["counted"] if store.is_sqlite else ["counted", "counted"])
    assert _rows(store) == ["held", "counted"]


def test_a_deadlock_victim_is_run_again(store):
    """PostgreSQL breaks a deadlock by rolling one transaction back: that job runs again
    (up to TRANSIENT_RETRIES times). SQLite raises no such error, and does not retry."""
    calls = [0]

    def victim(tx: Tx) -> str:
        calls[0] += 1
        if calls[0] <= 2:
            raise TransientStorageError("deadlock detected")
        return _insert("victim")(tx)

    outcomes = _behind_a_held_batch(store, [victim])
    if store.is_sqlite:
        assert outcomes == ["held stored", "TransientStorageError"]
        assert _rows(store) == ["held"]
    else:
        assert outcomes == ["held stored", "victim stored"]
        assert _rows(store) == ["held", "victim"]


def test_a_constraint_refuses_one_job_as_a_conflict(store):
    outcomes = _behind_a_held_batch(store, [_insert("x"), _insert("x"), _insert("y")])
    assert outcomes == ["held stored", "x stored", "Conflict", "y stored"]
    assert _rows(store) == ["held", "x", "y"]


def test_a_failed_commit_fails_no_job_that_it_did_not_store(store):
    """A deferred foreign key fails at COMMIT: no job of that batch may be told 'stored'
    unless it is. SQLite fails the whole batch; PostgreSQL runs each job again alone, so
    only the orphan fails."""
    outcomes = _behind_a_held_batch(store, [_insert("a"), _insert("orphan", orphan=True)])
    if store.is_sqlite:
        assert outcomes == ["held stored", "StorageError", "StorageError"]
        assert _rows(store) == ["held"]
    else:
        assert outcomes == ["held stored", "a stored", "Conflict"]
        assert _rows(store) == ["held", "a"]

    async def after() -> object:
        return await store.write_later(_insert("after"))

    assert asyncio.run(after()) == "after stored"  # usable again at once
    assert _rows(store)[-1] == "after"


def test_a_write_whose_waiter_is_cancelled_is_still_stored(store):
    inside, release = threading.Event(), threading.Event()

    def slow(tx: Tx) -> None:
        inside.set()
        if not store.is_sqlite:  # on SQLite it runs on the loop, after the cancel
            assert release.wait(10)
        tx.conn.execute(text("INSERT INTO wt_item (who) VALUES ('slow')"))

    async def scenario() -> None:
        waiter = asyncio.ensure_future(asyncio.shield(store.write_later(slow)))
        if not store.is_sqlite:
            assert await asyncio.to_thread(inside.wait, 10)
        waiter.cancel()
        release.set()
        await asyncio.sleep(0)  # one turn of the loop: on SQLite the queued batch runs in it
        assert inside.is_set()

    asyncio.run(scenario())
    store.dispose()  # waits for the writes already queued
    assert _rows(store) == ["slow"]


def test_write_jobs_map_errors_as_write_does(store):
    """A batch runs each job as ``write()`` runs a writer."""
    results = store.write_jobs([_insert("one"), _insert("one"), _insert("two")])
    assert [type(r).__name__ if isinstance(r, Exception) else r for r in results] == [
        "one stored",
        "Conflict",
        "two stored",
    ]
    assert isinstance(results[1], Conflict) and not isinstance(results[1], StorageError)
    assert _rows(store) == ["one", "two"]


def test_sqlite_the_loop_serves_others_while_a_batch_commits(tmp_path):
    """SQLite: a batch's statements run on the loop, its commit (an fsync) on a thread,
    and the loop meanwhile answers reads and queues the next writes, which commit in a
    batch of their own once the first is durable: no answer comes before its commit."""
    db = Database(f"sqlite:///{tmp_path / 'commit.sqlite3'}")
    with db.engine.begin() as c:
        c.execute(text("CREATE TABLE wt_item (id INTEGER PRIMARY KEY, who TEXT NOT NULL)"))
    committing, release = threading.Event(), threading.Event()
    commits: list[str] = []

    @event.listens_for(db.engine, "commit")
    def _slow_commit(_conn) -> None:  # type: ignore[no-untyped-def]
        if not commits:
            committing.set()
            # Released by the test once the loop has served others; the timer only
            # keeps a commit made on the loop itself (which would block it) from hanging.
            release.wait(5)
        commits.append(threading.current_thread().name)

    async def scenario() -> list[object]:
        first = db.write_later(_insert("first"))
        assert await asyncio.to_thread(committing.wait, 5)
        assert not first.done()  # not answered before it is durable
        read = await db.read_later(
            Prepared(select(func.count().label("n")).select_from(table("wt_item")))
        )
        second = db.write_later(_insert("second"))
        await asyncio.sleep(0.01)
        served = (read[0].n, first.done(), second.done())
        release.set()
        return [served, *await _outcomes([first, second])]

    try:
        outcomes = asyncio.run(scenario())
    finally:
        release.set()
        db.dispose()
    # The read saw nothing uncommitted; neither write was answered while the first
    # commit ran, and the second waited for it, then committed alone.
    assert outcomes == [(0, False, False), "first stored", "second stored"]
    assert len(commits) == 2 and threading.main_thread().name not in commits
