"""SQLite, the embedded store: one file in WAL mode, ``synchronous=FULL``.

Writers take turns on the database's one write lock: ``BEGIN IMMEDIATE`` (the lock is
taken up front, so two writers never both read and then both try to write; pysqlite's
own deferred BEGIN loses writes), plus one process-wide lock so that threads queue
fairly instead of spinning on the busy timeout, plus a ``flock`` between processes
(:class:`_FileLock`). Writers that queue behind each other share one transaction and
one commit (group commit, :class:`_Batch`); none returns before that commit is durable.
Reads never wait for a writer (WAL): a STAT or SPAR is read at once, on the reading
thread's own connection.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL

from ajedrez.domain.errors import Conflict, StorageError
from ajedrez.domain.events import Event
from ajedrez.store import sqlite_backup
from ajedrez.store.backups import Confirm, Progress
from ajedrez.store.batches import LoopBatches
from ajedrez.store.db import SQLITE_BUSY_TIMEOUT, Database, T, _grouped, mapped_errors
from ajedrez.store.eager import Eager, settle
from ajedrez.store.models import generated_id_tables
from ajedrez.store.open_marks import OpenMarks
from ajedrez.store.prepared import Prepared, PreparedMany
from ajedrez.store.tx import Tx
from ajedrez.store.urls import sqlite_file

log = logging.getLogger("ajedrez.storage")

# A batch stays open only while writers queue; this bounds how long the first one waits.
GROUP_COMMIT_MAX_SECONDS = 0.010

_LOST = "the database connection was lost"

# Each writer of a batch; issued on the driver, as SQLAlchemy would compile a new
# statement for every savepoint name it makes up.
_SAVEPOINT = Prepared(text("SAVEPOINT writer"))
_RELEASE_SAVEPOINT = Prepared(text("RELEASE SAVEPOINT writer"))
_ROLLBACK_TO_SAVEPOINT = Prepared(text("ROLLBACK TO SAVEPOINT writer"))


def _create_private(path: Path) -> None:
    """An empty database file readable by its owner alone, before SQLite opens it: the
    database holds password hashes, and SQLite gives its ``-wal`` and ``-shm`` the main
    file's mode, so they are private too. An existing file keeps the mode it has
    (``ajedrez-admin db check`` warns when others may read it)."""
    with suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))


class _FileLock:
    """Orders the SQLite writers of different processes (``--workers``, the admin tool).

    ``BEGIN IMMEDIATE`` alone would be correct, but a process that finds the write lock
    taken sleeps in SQLite's busy handler, up to 100 ms between retries, so two busy
    processes would waste most of their time asleep. A blocking ``flock`` on a file next to
    the database wakes the next process as soon as the last one has committed. Opened
    lazily and per process: a lock inherited across ``fork`` would be shared, not held.

    The wait is not bounded by the busy timeout: a process holds the lock only for one
    batch, and the kernel drops it if the process dies. Bounding it cost 10-13% of the
    throughput with two workers (polling with ``LOCK_NB``, or waiting in a helper thread),
    and a process stuck mid-write would then have failed every write with ``401`` instead
    of stalling it. Processes that do not take this lock (the ``sqlite3`` shell, say) still
    meet ``BEGIN IMMEDIATE`` and its busy timeout.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._fd: int | None = None
        self._pid = 0

    def acquire(self) -> None:
        if self.path is None:
            return
        try:
            if self._fd is None or self._pid != os.getpid():
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                self._pid = os.getpid()
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except OSError as e:
            raise StorageError(f"cannot lock {self.path}: {e.strerror or e}") from e

    def release(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            fcntl.flock(self._fd, fcntl.LOCK_UN)


class _Batch:
    """One SQLite write transaction that several writers fill, one after the other.

    Each writer runs inside a savepoint, so a refused or failed writer undoes only its
    own changes. The writer that finds nobody queued behind it (or fills the batch)
    commits for all; the others wait for that commit and fail if it fails. One fsync
    then covers every move of the batch, which is what makes ``synchronous=FULL``
    affordable under load: a commit costs the same for one row or fifty.
    """

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.trans = conn.begin()
        self.writers = 0
        self.opened = time.monotonic()
        self.done = threading.Event()
        self.error: StorageError | None = None
        self.events: list[Event] = []  # the writers' events: readers are woken after the commit


class SqliteDatabase(Database):
    is_sqlite = True
    serializes_writes = True
    uses_writer_process = False
    # Other processes' commits (--workers, the admin tool) are seen by polling the
    # counter, a read of one row in shared memory's WAL index and the page cache.
    event_poll = 0.05

    def last_ids(self, conn: Connection) -> dict[str, int]:
        # AUTOINCREMENT tables (games) remember the largest id ever given in
        # sqlite_sequence; the others continue after their largest id.
        sequences = _sequences(conn)
        last = {}
        for table in generated_id_tables():
            top = conn.execute(text(f'SELECT coalesce(max(id), 0) FROM "{table}"')).scalar_one()
            last[table] = max(int(top), sequences.get(table, 0))
        return last

    def continue_ids(self, conn: Connection, last: dict[str, int]) -> None:
        sequences = _sequences(conn)
        for table, after in last.items():
            if not _autoincrement(conn, table):
                continue  # the next id follows the largest one there
            if table not in sequences:
                conn.execute(
                    text("INSERT INTO sqlite_sequence (name, seq) VALUES (:t, :s)"),
                    {"t": table, "s": after},
                )
            elif after > sequences[table]:
                conn.execute(
                    text("UPDATE sqlite_sequence SET seq = :s WHERE name = :t"),
                    {"s": after, "t": table},
                )

    def backup(self, file: Path, progress: Progress | None = None) -> str:
        return sqlite_backup.backup(self.engine, file, progress)

    @classmethod
    def restore(
        cls, url: URL, file: Path, confirm: Confirm, progress: Progress | None = None
    ) -> None:
        sqlite_backup.restore(url, file, confirm, progress)

    def integrity_problems(self) -> list[str]:
        with self.read() as conn:
            found = [str(row[0]) for row in conn.exec_driver_sql("PRAGMA integrity_check")]
        return [] if found == ["ok"] else found

    def _open(self, url: URL, pool_size: int, create: bool) -> Engine:
        self._write_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queued = 0  # threads waiting for _write_lock
        self._batch: _Batch | None = None
        self._committer: _Committer | None = None  # see write_jobs_then
        self._loop_batches: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, LoopBatches[Callable[[Tx], Any]]
        ] = weakref.WeakKeyDictionary()
        self._readers = threading.local()  # see _thread_reader
        self._all_readers: list[Connection] = []
        self._readers_pid = os.getpid()
        self._batch_conn: Connection | None = None  # see _batch_connection
        self._batch_conn_pid = 0
        self._file_lock = _FileLock(None)
        self._open_marks: OpenMarks | None = None
        self._prepare_sqlite_path(create)
        # Unbounded overflow: a writer takes the process write lock before a connection,
        # and must never then queue for one behind readers (SQLite connections are
        # cheap; the transport bounds how many commands run at once).
        engine = create_engine(url, pool_size=pool_size, max_overflow=-1, hide_parameters=True)
        self._install_sqlite_hooks(engine, self.busy_timeout_ms)
        if self._open_marks is not None:
            event.listen(engine, "connect", self._mark_open)
        return engine

    def dispose(self) -> None:
        with self._queue_lock:
            mine = self._readers_pid == os.getpid()
            readers, self._all_readers = (self._all_readers if mine else []), []
            self._readers = threading.local()
        for reader in readers:
            if not reader.closed:
                reader.close()  # back to the pool, which dispose() then closes
        if self._committer is not None:
            self._committer.stop()  # after the commits queued so far
        if self._write_lock.acquire(timeout=SQLITE_BUSY_TIMEOUT):  # no batch is open
            try:
                self._drop_batch_connection()
            finally:
                self._write_lock.release()
        super().dispose()
        if self._open_marks is not None:
            self._open_marks.unmark()

    def _begin(self, conn: Connection, begin: str) -> Connection:
        return conn.execution_options(ajedrez_begin=begin)

    def _prepare_sqlite_path(self, create: bool) -> None:
        path = sqlite_file(self.url)
        if path is not None:
            if not create and not path.exists():
                raise StorageError(f"no database file at {path}")
            path.parent.mkdir(parents=True, exist_ok=True)
            if create:
                _create_private(path)
            self._file_lock = _FileLock(path.with_name(path.name + "-writer.lock"))
            # Before any connection: the first would create a new WAL in place of one lost.
            self._open_marks = OpenMarks(path)
            self._open_marks.check()

    def _mark_open(self, _dbapi_conn: object, _record: object) -> None:
        if self._open_marks is not None:
            self._open_marks.mark()

    @staticmethod
    def _install_sqlite_hooks(engine: Engine, busy_timeout_ms: int) -> None:
        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # Take BEGIN out of pysqlite's hands; the "begin" hook below emits our own.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
            cur.execute("PRAGMA journal_mode = WAL")
            cur.execute("PRAGMA synchronous = FULL")
            cur.execute("PRAGMA foreign_keys = ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            mode = conn.get_execution_options().get("ajedrez_begin", "BEGIN")
            conn.exec_driver_sql(mode)

    @contextmanager
    def read_each(self) -> Iterator[Connection]:
        # Prepared statements (prepared.py) run in autocommit on it, each its own
        # snapshot, which spares a BEGIN and a COMMIT per request; statements run
        # through SQLAlchemy open a transaction, rolled back at the end.
        conn = self._thread_reader()
        try:
            with mapped_errors():
                yield conn
        finally:
            if conn.in_transaction():
                conn.rollback()

    def _thread_reader(self) -> Connection:
        """This thread's own connection for ``read_each``, kept open. Checking a
        connection out of the pool and back for every STAT and SPAR cost about a tenth
        of the event loop's time; a connection outside any transaction holds nothing."""
        if self._readers_pid != os.getpid():  # after a fork: the parent's are its own
            with self._queue_lock:
                if self._readers_pid != os.getpid():
                    self._readers, self._all_readers = threading.local(), []
                    self._readers_pid = os.getpid()
        conn: Connection | None = getattr(self._readers, "conn", None)
        if conn is None or conn.invalidated or conn.closed:
            with mapped_errors():
                conn = self.engine.connect()
            self._readers.conn = conn
            with self._queue_lock:
                self._all_readers = [
                    c for c in self._all_readers if not (c.closed or c.invalidated)
                ]
                self._all_readers.append(conn)  # for dispose()
        return conn

    @contextmanager
    def write(self) -> Iterator[Tx]:
        batch = self._join_batch()
        try:
            with _writer_of(batch) as tx:
                yield tx
        except BaseException:
            self._leave_batch(batch, failed=True)
            raise
        self._leave_batch(batch, failed=False)

    def write_jobs(self, jobs: Sequence[Callable[[Tx], T]]) -> list[T | Exception]:
        """Each job in its own savepoint, so one that fails undoes only its own writes,
        and the jobs of one ``together`` group in one savepoint, run again each in its
        own if the group raises; a failed commit fails every job."""
        batch = self._join_batch()
        outcomes: list[T | Exception] = []
        try:
            outcomes = self._fill(batch, jobs)
        finally:
            self._commit_and_unlock(batch)
        return _committed(batch, outcomes)

    def write_jobs_then(
        self, jobs: Sequence[Callable[[Tx], T]], done: Callable[[list[T | Exception]], None]
    ) -> None:
        """``write_jobs`` whose commit runs on this process's committer thread, which
        calls ``done`` with the outcomes once the batch is durable (or has failed);
        the write lock is held until then. Raises, having done nothing, if the batch
        cannot start."""
        batch = self._join_batch()
        try:
            outcomes = self._fill(batch, jobs)
        except BaseException:
            self._commit_and_unlock(batch)
            raise
        self._committer_here().commit(batch, outcomes, done)

    def _fill(self, batch: _Batch, jobs: Sequence[Callable[[Tx], T]]) -> list[T | Exception]:
        def alone(job: Callable[[Tx], T]) -> T | Exception:
            try:
                with _writer_of(batch) as tx:
                    return job(tx)
            except Exception as e:
                return e

        def together(
            run_with: Callable[..., list[Any]], group: list[Callable[[Tx], T]]
        ) -> list[Any]:
            try:
                with _writer_of(batch) as tx:
                    return run_with(tx, group)
            except Exception:
                return [alone(job) for job in group]

        return _grouped(jobs, alone, together)

    def _commit_and_unlock(self, batch: _Batch) -> None:
        try:
            self._commit_batch(batch)
        finally:
            self._write_lock.release()

    def _committer_here(self) -> _Committer:
        committer = self._committer
        if committer is None or not committer.alive():  # none yet, or a fork's parent's
            with self._queue_lock:
                committer = self._committer
                if committer is None or not committer.alive():
                    committer = self._committer = _Committer(self._commit_and_unlock)
        return committer

    def write_later(self, job: Callable[[Tx], T]) -> asyncio.Future[T]:
        # Run by this loop at the end of its turn: every job queued in that turn shares
        # the batch, and no thread hand-off is paid.
        return self._loop_batches_here().submit(job)

    def _loop_batches_here(self) -> LoopBatches[Callable[[Tx], Any]]:
        loop = asyncio.get_running_loop()
        batches = self._loop_batches.get(loop)
        if batches is None:
            batches = LoopBatches(self.write_jobs_then, self.group_commit)
            self._loop_batches[loop] = batches
        return batches

    def read_later(
        self, statement: Prepared[Any] | PreparedMany, **params: Any
    ) -> asyncio.Future[list[Any]]:
        # Read at once (``read_each``): a local call that no writer holds up in WAL
        # mode. The future is done when returned, and the connection answers at once.
        found = Eager(asyncio.get_running_loop())
        try:
            with self.read_each() as conn:
                rows = statement.all_each(conn, [params])[0]
        except Exception as e:
            settle(found, e)
        else:
            settle(found, rows)
        return found

    @contextmanager
    def sync_read(self) -> Iterator[Tx]:
        # The locks only while the writes in flight finish and the clock is read: any
        # snapshot taken after that sees every write stamped earlier, and every later
        # write is stamped later (docs/design.md, "Why nothing is missed"). Held for the
        # whole read, they stalled the batches of moves behind a TRAN or PPEN.
        self._enter_write_lock()
        try:
            if self._batch is not None:
                self._commit_batch(self._batch)
            self._file_lock.acquire()
            stamp = int(time.time())
            self._file_lock.release()
        finally:
            self._write_lock.release()
        with self._transaction("BEGIN") as conn:
            yield Tx(conn, stamp)

    def _enter_write_lock(self) -> None:
        with self._queue_lock:
            self._queued += 1
        self._write_lock.acquire()
        with self._queue_lock:
            self._queued -= 1

    def _join_batch(self) -> _Batch:
        """Take the write lock and the open batch, opening one if there is none."""
        self._enter_write_lock()
        if self._batch is None:
            try:
                conn = self._batch_connection()
                try:
                    self._file_lock.acquire()
                    try:
                        with mapped_errors():
                            self._batch = _Batch(conn)
                    except BaseException:
                        self._file_lock.release()
                        raise
                except BaseException:
                    self._drop_batch_connection()
                    raise
            except BaseException:
                self._write_lock.release()
                raise
        return self._batch

    def _batch_connection(self) -> Connection:
        """SQLite: the connection every batch of this process uses, one after another
        (under the write lock), kept open. A pool check-out and check-in per batch (with
        the check-in's rollback and the pool's events) cost a sixth of a batch; taken
        before the ``flock``, it never made another process wait."""
        conn = self._batch_conn
        if conn is None or conn.closed or conn.invalidated or self._batch_conn_pid != os.getpid():
            with mapped_errors():
                conn = self.engine.connect().execution_options(ajedrez_begin="BEGIN IMMEDIATE")
            self._batch_conn, self._batch_conn_pid = conn, os.getpid()
        return conn

    def _drop_batch_connection(self) -> None:
        conn, self._batch_conn = self._batch_conn, None
        if conn is not None and self._batch_conn_pid == os.getpid() and not conn.closed:
            conn.close()

    def _leave_batch(self, batch: _Batch, *, failed: bool) -> None:
        """Commit if nobody is queued (or the batch is full or old), release the lock,
        then wait for the batch's commit. A writer that ``failed`` has nothing in it."""
        try:
            if (
                self._queued == 0
                or batch.writers >= self.group_commit
                or time.monotonic() - batch.opened >= GROUP_COMMIT_MAX_SECONDS
            ):
                self._commit_batch(batch)
        finally:
            self._write_lock.release()
        if failed:
            return
        batch.done.wait()
        if batch.error is not None:
            raise StorageError(str(batch.error)) from batch.error

    def _commit_batch(self, batch: _Batch) -> None:
        """Called with the write lock held; wakes every writer of the batch."""
        self._batch = None
        locked = True
        try:
            with mapped_errors():
                try:
                    if batch.conn.invalidated:  # discarded by a writer's error, its work too
                        raise StorageError(_LOST)
                    batch.trans.commit()
                except BaseException:
                    # SQLite may leave the transaction open after a failed COMMIT; a
                    # connection in that state must not be used again.
                    batch.conn.invalidate()
                    self._drop_batch_connection()
                    raise
                finally:
                    self._file_lock.release()
                    locked = False
        except StorageError as e:
            batch.error = e
        except Conflict as e:  # a deferred constraint: nothing of the batch was stored
            batch.error = StorageError(str(e))
        finally:
            if locked:
                self._file_lock.release()
            batch.done.set()
        if batch.events and batch.error is None:
            self._events_committed(batch.events)


@contextmanager
def _writer_of(batch: _Batch) -> Iterator[Tx]:
    """One writer of a batch, in its own savepoint; call with the write lock held."""
    if batch.conn.invalidated:  # an earlier writer's error discarded it, and the batch
        raise StorageError(_LOST)
    with mapped_errors():
        _SAVEPOINT.run(batch.conn)
        # Stamped under the write lock, so it orders with every other writer.
        tx = Tx(batch.conn, int(time.time()))
        try:
            yield tx
            tx.flush_events()
        except BaseException:
            if not batch.conn.invalidated:  # else the transaction is gone with it
                _ROLLBACK_TO_SAVEPOINT.run(batch.conn)
                _RELEASE_SAVEPOINT.run(batch.conn)
            raise
        _RELEASE_SAVEPOINT.run(batch.conn)
    batch.events.extend(tx.written)
    batch.writers += 1


def _committed(batch: _Batch, outcomes: list[T | Exception]) -> list[T | Exception]:
    """The jobs' outcomes once their batch is committed: a failed commit fails them all."""
    if batch.error is None:
        return outcomes
    failed = StorageError(str(batch.error))
    return [o if isinstance(o, Exception) else failed for o in outcomes]


class _Committer:
    """The thread that commits the batches an event loop filled (``write_jobs_then``):
    one at a time, in the order given, each followed by its ``done``."""

    def __init__(self, commit_and_unlock: Callable[[_Batch], None]) -> None:
        self._commit_and_unlock = commit_and_unlock
        self._queue: queue.SimpleQueue[
            tuple[_Batch, list[Any], Callable[[list[Any]], None]] | None
        ] = queue.SimpleQueue()
        self._pid = os.getpid()  # a thread does not survive a fork
        self._thread = threading.Thread(target=self._serve, name="sqlite-commit", daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._pid == os.getpid() and self._thread.is_alive()

    def commit(self, batch: _Batch, outcomes: list[Any], done: Callable[[list[Any]], None]) -> None:
        self._queue.put((batch, outcomes, done))

    def stop(self) -> None:
        if self.alive():
            self._queue.put(None)
            self._thread.join()

    def _serve(self) -> None:
        while (item := self._queue.get()) is not None:
            batch, outcomes, done = item
            try:
                self._commit_and_unlock(batch)
            except BaseException as e:  # never leave a loop waiting for an answer
                log.exception("committing a batch failed")
                batch.error = batch.error or StorageError(f"the commit failed: {e}")
            done(_committed(batch, outcomes))


def _sequences(conn: Connection) -> dict[str, int]:
    """sqlite_sequence: the largest id ever given, per AUTOINCREMENT table given one."""
    rows = conn.execute(text("SELECT name, seq FROM sqlite_sequence")).all()
    return {str(name): int(seq) for name, seq in rows}


def _autoincrement(conn: Connection, table: str) -> bool:
    sql = conn.execute(
        text("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = :t"), {"t": table}
    ).scalar_one_or_none()
    return sql is not None and "AUTOINCREMENT" in str(sql).upper()
