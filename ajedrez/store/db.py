"""Engine set-up and transactions for SQLite and PostgreSQL.

Three kinds of transaction, each a context manager yielding a :class:`Tx`:

``read()``
    A plain read, yielding the connection. SQLite: deferred ``BEGIN`` (a WAL snapshot
    that never blocks writers).
``read_each()``
    A read whose statements need no common snapshot (STAT, SPAR): on SQLite, prepared
    statements (``storage/prepared.py``) then run in autocommit, each its own snapshot,
    which spares a BEGIN and a COMMIT per request. Statements run through SQLAlchemy
    still open a transaction, rolled back at the end.
``write()``
    A write. Its ``stamp`` is the fecha written into every ``changed_at`` it touches.
    SQLite: ``BEGIN IMMEDIATE`` (the write lock is taken up front, so two writers never
    both read and then both try to write; pysqlite's own deferred BEGIN loses writes),
    plus one process-wide lock so that threads queue fairly instead of spinning on the
    busy timeout. Writers that queue behind each other share one transaction and one
    commit (group commit, :class:`_Batch`); none returns before that commit is durable.
    PostgreSQL: a shared advisory lock held to commit; rows that are read then written
    are locked by the caller with ``FOR UPDATE``.
``sync_read()``
    A read whose ``stamp`` is safe to hand to a client as its next fecha. It waits until
    no write transaction is in flight and keeps new ones out while it takes its stamp
    (SQLite: the write lock and ``flock``, then a plain read transaction; PostgreSQL: the
    advisory lock in exclusive mode, to commit). Every write stamped earlier is visible
    to it, and every write after it stamps a fecha at least as large, so ``changed_at >=
    fecha`` misses nothing. See ``docs/design.md``.

Database faults surface as :class:`StorageError` and unique-key violations as
:class:`Conflict`, so callers above never handle driver exceptions.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, TextClause, create_engine, event, exc, make_url, text
from sqlalchemy.engine import URL, ExceptionContext

from ajedrez.domain.errors import (
    TRANSIENT_RETRIES,
    Conflict,
    StorageError,
    TransientStorageError,
)
from ajedrez.store.batches import BatchThread, LoopBatches
from ajedrez.store.eager import Eager, settle
from ajedrez.store.open_marks import OpenMarks
from ajedrez.store.prepared import Prepared, PreparedMany, read_only_connection
from ajedrez.store.tx import Tx
from ajedrez.store.writer_process import WriterClient

SQLITE_BUSY_TIMEOUT = 10.0  # seconds
GROUP_COMMIT_WRITERS = 32
READ_BATCH = 64  # most reads the reader thread sends in one go
PING_IF_IDLE_SECONDS = 5.0  # PostgreSQL: see Database._install_idle_ping
# A batch stays open only while writers queue; this bounds how long the first one waits.
GROUP_COMMIT_MAX_SECONDS = 0.010
# Arbitrary but fixed: the advisory-lock key that orders writers against sync reads.
SYNC_LOCK_KEY = 0x41_6A_65_64  # "Ajed"

_LOST = "the database connection was lost"

# deadlock_detected, serialization_failure: PostgreSQL rolled back; a rerun may succeed.
_TRANSIENT_SQLSTATES = frozenset({"40P01", "40001"})

# Each writer of a batch; issued on the driver, as SQLAlchemy would compile a new
# statement for every savepoint name it makes up.
_SAVEPOINT = Prepared(text("SAVEPOINT writer"))
_RELEASE_SAVEPOINT = Prepared(text("RELEASE SAVEPOINT writer"))
_ROLLBACK_TO_SAVEPOINT = Prepared(text("ROLLBACK TO SAVEPOINT writer"))

_PG_WRITE_BEGIN = text(
    "SELECT pg_advisory_xact_lock_shared(:k), floor(extract(epoch FROM clock_timestamp()))"
)
_PG_SYNC_BEGIN = text(
    "SELECT pg_advisory_xact_lock(:k), floor(extract(epoch FROM clock_timestamp()))"
)


T = TypeVar("T")


class BadURL(StorageError):
    """The database URL does not parse, or names a kind of database SQLAlchemy lacks."""


URL_FORMS = "sqlite:///PATH or postgresql+psycopg://USER@HOST/NAME"


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


@dataclass(frozen=True)
class _Read:
    statement: Prepared | PreparedMany
    params: dict[str, Any]


def _grouped(
    jobs: Sequence[Callable[[Tx], T]],
    alone: Callable[[Callable[[Tx], T]], T | Exception],
    together: Callable[[Callable[..., list[Any]], list[Callable[[Tx], T]]], list[Any]],
) -> list[T | Exception]:
    """Each job's result, in job order: a job with a ``together`` function (see
    ``Database.write_later``) runs in one group with the others that share it, after
    the jobs without one, each of which runs ``alone``."""
    results: list[T | Exception] = [None] * len(jobs)  # type: ignore[list-item]
    groups: dict[Callable[..., list[Any]], list[int]] = {}
    for i, job in enumerate(jobs):
        run_with = getattr(job, "together", None)
        if run_with is None:
            results[i] = alone(job)
        else:
            groups.setdefault(run_with, []).append(i)
    for run_with, indexes in groups.items():
        found = together(run_with, [jobs[i] for i in indexes])
        for i, result in zip(indexes, found, strict=True):
            results[i] = result
    return results


def redact(url: str | URL) -> str:
    """The URL as it may appear in logs: never with its password, whatever the text."""
    try:
        parsed = make_url(url)
    except exc.ArgumentError:
        raw = str(url)
        if "@" not in raw:
            return raw
        # Unparsed, the password's extent is unknown: hide all that precedes the host.
        head, _, host = raw.rpartition("@")
        scheme = head.split("//", 1)[0] + "//" if "//" in head else ""
        return f"{scheme}***@{host}"
    if parsed.host and "@" in parsed.host:
        # An unescaped '@' in the password: SQLAlchemy took the password's tail for the host.
        parsed = parsed.set(host=parsed.host.rpartition("@")[2])
    return parsed.render_as_string(hide_password=True)


def parse_url(url: str | URL, source: str = "") -> URL:
    """``url`` parsed, or :class:`BadURL` saying where it came from (``source``, e.g.
    ``from --database-url``)."""
    try:
        parsed = make_url(url)
        parsed.get_dialect()
    except (exc.ArgumentError, exc.NoSuchModuleError):
        where = f" ({source})" if source else ""
        raise BadURL(f"not a database URL: '{redact(url)}'{where}; expected {URL_FORMS}") from None
    return parsed


def sqlite_file(url: str | URL) -> Path | None:
    """The file a SQLite URL names; None for other stores and in-memory databases."""
    parsed = make_url(url)
    db = parsed.database
    if parsed.get_backend_name() != "sqlite" or not db or db == ":memory:":
        return None
    return None if db.startswith("file:") else Path(db).expanduser()


def default_sqlite_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ajedrez" / "ajedrez.sqlite3"


def default_url() -> str:
    return f"sqlite:///{default_sqlite_path()}"


def resolve_url(cli_value: str | None) -> str:
    """Command line over ``AJEDREZ_DATABASE_URL`` over the embedded default."""
    return cli_value or os.environ.get("AJEDREZ_DATABASE_URL") or default_url()


class Database:
    def __init__(
        self,
        url: str | URL,
        *,
        pool_size: int = 20,
        create: bool = True,
        busy_timeout: float = SQLITE_BUSY_TIMEOUT,
        group_commit: int = GROUP_COMMIT_WRITERS,
    ) -> None:
        """``create=False`` refuses a SQLite file that does not exist yet.

        ``group_commit``: most writers sharing one commit (SQLite group commit, and the
        batches of moves on either store; 1: a commit each).
        """
        self.url = parse_url(url)
        self.busy_timeout_ms = int(busy_timeout * 1000)
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        self.group_commit = max(1, group_commit)
        self._write_lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queued = 0  # threads waiting for _write_lock
        self._batch: _Batch | None = None
        self._writer: BatchThread[Callable[[Tx], Any]] | None = None
        self._reader: BatchThread[_Read] | None = None  # PostgreSQL: see read_later
        self._loop_batches: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, LoopBatches[Callable[[Tx], Any]]
        ] = weakref.WeakKeyDictionary()
        # PostgreSQL with --workers: where moves are committed (storage/writer_process.py).
        self.writer_process: WriterClient | None = None
        self._reader_conn: Connection | None = None  # the reader thread's own
        self._readers = threading.local()  # SQLite: see _thread_reader
        self._batch_conn: Connection | None = None  # SQLite: see _batch_connection
        self._batch_conn_pid = 0
        self._all_readers: list[Connection] = []
        self._readers_pid = os.getpid()
        self._file_lock = _FileLock(None)
        self._open_marks: OpenMarks | None = None
        if self.is_sqlite:
            self._prepare_sqlite_path(create)
            # Unbounded overflow: a writer takes the process write lock before a connection,
            # and must never then queue for one behind readers (SQLite connections are
            # cheap; the transport bounds how many commands run at once).
            self.engine = create_engine(
                self.url, pool_size=pool_size, max_overflow=-1, hide_parameters=True
            )
            self._install_sqlite_hooks(self.engine, self.busy_timeout_ms)
            self._replace_read_only_connections(self.engine)
            if self._open_marks is not None:
                event.listen(self.engine, "connect", self._mark_open)
        else:
            self.engine = create_engine(
                self.url,
                pool_size=pool_size,
                max_overflow=pool_size // 2,
                # Error messages and logs never carry SQL parameters (hashes, names).
                hide_parameters=True,
            )
            self._install_idle_ping(self.engine)
            self._replace_read_only_connections(self.engine)

    def _prepare_sqlite_path(self, create: bool) -> None:
        path = sqlite_file(self.url)
        if path is not None:
            if not create and not path.exists():
                raise StorageError(f"no database file at {path}")
            path.parent.mkdir(parents=True, exist_ok=True)
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
        def _on_connect(dbapi_conn, _record) -> None:  # type: ignore[no-untyped-def]
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

    @staticmethod
    def _replace_read_only_connections(engine: Engine) -> None:
        """A connection that refused a write as read-only (``read_only_connection``) is
        discarded, and so is every pooled one opened before that refusal: opened while the
        store could not be written, each would refuse every write long after it can be."""
        refused = [float("-inf")]  # when a read-only connection was last discarded

        @event.listens_for(engine, "handle_error")
        def _on_error(ctx: ExceptionContext) -> None:
            if read_only_connection(ctx.original_exception):
                ctx.is_disconnect = True
                # SQLAlchemy leaves a lost connection's cursor open, and a SQLite connection
                # closed with a statement still open lives on, its write lock held.
                cursor = getattr(ctx.execution_context, "cursor", None)
                if cursor is not None:
                    with suppress(Exception):
                        cursor.close()

        @event.listens_for(engine, "connect")
        def _on_open(_dbapi_conn, record) -> None:  # type: ignore[no-untyped-def]
            record.info["opened"] = time.monotonic()

        @event.listens_for(engine, "invalidate")
        def _on_invalidate(_dbapi_conn, _record, exception) -> None:  # type: ignore[no-untyped-def]
            if exception is not None and read_only_connection(exception):
                refused[0] = time.monotonic()

        @event.listens_for(engine, "checkout")
        def _on_checkout(_dbapi_conn, record, _proxy) -> None:  # type: ignore[no-untyped-def]
            if record.info.get("opened", refused[0]) < refused[0]:
                # The pool closes it and opens another.
                raise exc.DisconnectionError("opened while the store refused writes")

    @property
    def serializes_writes(self) -> bool:
        """Do all writers wait for one another (SQLite), rather than only for the rows
        they share (PostgreSQL)? Then work done before ``write()`` shortens every wait."""
        return self.is_sqlite

    @staticmethod
    def _install_idle_ping(engine: Engine) -> None:
        event.listen(engine, "checkin", _note_idle_since)
        event.listen(engine, "checkout", _ping_if_idle)

    def dispose(self) -> None:
        # After a fork the reader's connection is the parent's: not to be closed here.
        reader_conn = self._reader_conn if self._reader and self._reader.alive() else None
        for thread in (self._writer, self._reader):
            if thread is not None:
                thread.stop()
        self._writer = self._reader = self._reader_conn = None
        if reader_conn is not None and not reader_conn.closed:
            reader_conn.close()
        with self._queue_lock:
            mine = self._readers_pid == os.getpid()
            readers, self._all_readers = (self._all_readers if mine else []), []
            self._readers = threading.local()
        for reader in readers:
            if not reader.closed:
                reader.close()  # back to the pool, which dispose() then closes
        if self._write_lock.acquire(timeout=SQLITE_BUSY_TIMEOUT):  # no batch is open
            try:
                self._drop_batch_connection()
            finally:
                self._write_lock.release()
        self.engine.dispose()
        if self._open_marks is not None:
            self._open_marks.unmark()

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Connection]:
        with mapped_errors(), self.engine.connect() as conn:
            if self.is_sqlite:
                conn = conn.execution_options(ajedrez_begin=begin)
            with conn.begin():
                yield conn

    # -- the domain's transactions (ajedrez.domain.ports.Store) ---------------------------

    @contextmanager
    def reading(self) -> Iterator[Tx]:
        with self.read() as conn:
            yield Tx(conn, 0)

    def writing(self) -> AbstractContextManager[Tx]:
        return self.write()

    def syncing(self) -> AbstractContextManager[Tx]:
        return self.sync_read()

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self._transaction("BEGIN") as conn:
            yield conn

    @contextmanager
    def read_each(self) -> Iterator[Connection]:
        if self.is_sqlite:
            conn = self._thread_reader()
            try:
                with mapped_errors():
                    yield conn
            finally:
                if conn.in_transaction():  # opened by a statement run through SQLAlchemy
                    conn.rollback()
            return
        with mapped_errors(), self.engine.connect() as conn:
            # No BEGIN and ROLLBACK round trips either.
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    def _thread_reader(self) -> Connection:
        """SQLite: this thread's own connection for ``read_each``, kept open. Checking a
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
        if not self.is_sqlite:
            with self._pg_transaction(_PG_WRITE_BEGIN) as tx:
                yield tx
            return
        batch = self._join_batch()
        try:
            with _writer_of(batch) as tx:
                yield tx
        except BaseException:
            self._leave_batch(batch, failed=True)
            raise
        self._leave_batch(batch, failed=False)

    def write_jobs(self, jobs: Sequence[Callable[[Tx], T]]) -> list[T | Exception]:
        """Run ``jobs`` in one transaction and commit it, returning each job's result or
        exception; the batches' entry (``storage/batches.py``). SQLite: each job in
        its own savepoint, so one that fails undoes only its own writes, and the jobs of
        one ``together`` group (see ``write_later``) in one savepoint, run again each in
        its own if the group raises; a failed commit fails every job. PostgreSQL: see
        ``_pg_write_jobs``."""
        if not self.is_sqlite:
            return self._pg_write_jobs(jobs)
        batch = self._join_batch()

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

        outcomes: list[T | Exception] = []
        try:
            outcomes = _grouped(jobs, alone, together)
        finally:
            try:
                self._commit_batch(batch)
            finally:
                self._write_lock.release()
        if batch.error is not None:
            failed = StorageError(str(batch.error))
            outcomes = [o if isinstance(o, Exception) else failed for o in outcomes]
        return outcomes

    def _pg_write_jobs(self, jobs: Sequence[Callable[[Tx], T]]) -> list[T | Exception]:
        """PostgreSQL: one transaction (one BEGIN, advisory lock and COMMIT for the
        batch) with no savepoints, which would cost two round trips a job. If any job
        fails, nothing of the batch is kept and each job runs again in a transaction of
        its own, which gives it its own answer: jobs must be safe to run twice, as a
        move is (it is checked again against the row it locks, and the batch that
        checked it first left nothing)."""
        try:
            with self._pg_transaction(_PG_WRITE_BEGIN) as tx:
                return _grouped(
                    jobs, lambda job: job(tx), lambda run_with, group: run_with(tx, group)
                )
        except Exception as e:
            if len(jobs) == 1 and not isinstance(e, TransientStorageError):
                return [e]
        return [self._write_alone(job) for job in jobs]

    def _write_alone(self, job: Callable[[Tx], T]) -> T | Exception:
        for attempt in range(TRANSIENT_RETRIES + 1):
            try:
                with self.write() as tx:
                    return job(tx)
            except TransientStorageError as e:  # a deadlock broken by PostgreSQL
                if attempt == TRANSIENT_RETRIES:
                    return e
            except Exception as e:
                return e
        raise AssertionError("unreachable")

    def write_later(self, job: Callable[[Tx], T]) -> asyncio.Future[T]:
        """From an event loop: ``job`` runs in a batch with whatever other jobs are
        queued (``write_jobs``), on SQLite by this loop at the end of its turn, on
        PostgreSQL by the writer process (``writer_process``, with ``--workers``; a job
        with a ``payload`` method) or else by this process's writer thread; the future
        completes once the batch is durable (or fails with the job's exception or the
        commit's).

        Jobs that have a ``together`` attribute run through it as a group (a batch's
        moves, ``games._store_moves``): ``job.together(tx, jobs)`` returns each job's
        result or exception, and raises only for a fault of the database, which undoes
        the group (SQLite: its savepoint; PostgreSQL: the batch) and runs each job alone."""
        if self.is_sqlite:
            return self._loop_batches_here().submit(job)
        link = self.writer_process.usable() if self.writer_process is not None else None
        payload = getattr(job, "payload", None)
        if link is not None and payload is not None:
            return link.submit(payload())
        writer = self._writer
        if writer is None or not writer.alive():
            with self._queue_lock:
                if self._writer is None or not self._writer.alive():
                    self._writer = BatchThread(self.write_jobs, self.group_commit, "writer")
                writer = self._writer
        return writer.submit(job)

    def _loop_batches_here(self) -> LoopBatches:
        loop = asyncio.get_running_loop()
        batches = self._loop_batches.get(loop)
        if batches is None:
            batches = self._loop_batches[loop] = LoopBatches(self.write_jobs, self.group_commit)
        return batches

    def read_later(
        self, statement: Prepared | PreparedMany, **params: Any
    ) -> asyncio.Future[list[Any]]:
        """From an event loop: a future of the rows of ``statement``.

        SQLite: read at once, on this thread's own connection (``read_each``): a local
        call that no writer holds up in WAL mode; the future is done when returned.
        PostgreSQL: each read is a network round trip, so it is queued to this process's
        reader thread, in autocommit; the reads queued meanwhile go out together, each
        statement's in one pipeline, so a batch costs one round trip per distinct
        statement and one wake-up of each waiting loop."""
        if self.is_sqlite:
            found = Eager(asyncio.get_running_loop())
            try:
                with self.read_each() as conn:
                    rows = statement.all_each(conn, [params])[0]
            except Exception as e:
                settle(found, e)
            else:
                settle(found, rows)
            return found
        reader = self._reader
        if reader is None or not reader.alive():
            with self._queue_lock:
                if self._reader is None or not self._reader.alive():
                    self._reader_conn = None  # a parent's, after a fork
                    self._reader = BatchThread(self._read_jobs, READ_BATCH, "reader")
                reader = self._reader
        return reader.submit(_Read(statement, params))

    def _read_jobs(self, reads: Sequence[_Read]) -> list[list[Any] | Exception]:
        """The reader thread's batch: each statement's reads in one ``all_each``."""
        conn = self._reader_conn
        if conn is None or conn.closed or conn.invalidated:
            with mapped_errors():
                conn = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            self._reader_conn = conn
        out: list[list[Any] | Exception] = [[] for _ in reads]
        by_statement: dict[Prepared | PreparedMany, list[int]] = {}
        for i, read in enumerate(reads):
            by_statement.setdefault(read.statement, []).append(i)
        for statement, indexes in by_statement.items():
            try:
                with mapped_errors():
                    found: list[Any] = statement.all_each(conn, [reads[i].params for i in indexes])
            except Exception as e:
                found = [e] * len(indexes)
            for i, rows in zip(indexes, found, strict=True):
                out[i] = rows
        return out

    @contextmanager
    def sync_read(self) -> Iterator[Tx]:
        # The locks only while the writes in flight finish and the clock is read: any
        # snapshot taken after that sees every write stamped earlier, and every later
        # write is stamped later (docs/design.md, "Why nothing is missed"). Held for the
        # whole read, they stalled the batches of moves behind a TRAN or PPEN.
        if not self.is_sqlite:
            with mapped_errors(), self.engine.connect() as conn:
                with conn.begin():  # the exclusive lock, released at this commit
                    stamp = conn.execute(_PG_SYNC_BEGIN, {"k": SYNC_LOCK_KEY}).one()[1]
                # One snapshot for the whole read, as SQLite's read transaction has.
                conn.execution_options(isolation_level="REPEATABLE READ")
                with conn.begin():
                    yield Tx(conn, int(stamp))
            return
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

    @contextmanager
    def _pg_transaction(self, pg_begin: TextClause) -> Iterator[Tx]:
        with self._transaction("BEGIN") as conn:
            stamp = conn.execute(pg_begin, {"k": SYNC_LOCK_KEY}).one()[1]
            yield Tx(conn, int(stamp))

    # -- SQLite group commit -----------------------------------------------------------

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

    def ping(self) -> None:
        with self.read() as conn:
            conn.execute(text("SELECT 1"))


def _note_idle_since(_dbapi_conn, record) -> None:  # type: ignore[no-untyped-def]
    record.info["idle_since"] = time.monotonic()


def _ping_if_idle(dbapi_conn, record, _proxy) -> None:  # type: ignore[no-untyped-def]
    """PostgreSQL: ping a pooled connection before use only if it has been idle a while.

    ``pool_pre_ping`` would cost a round trip on every request, a fifth of a STAT. A
    connection used moments ago is alive or fails the request it is used for (and is then
    discarded, see ``storage/prepared.py``); one idle across an outage or a restart is
    pinged and, if dead, replaced before anybody uses it.
    """
    since = record.info.get("idle_since")
    if since is None or time.monotonic() - since < PING_IF_IDLE_SECONDS:
        return
    try:
        cursor = dbapi_conn.cursor()
        cursor.execute("SELECT 1")
        cursor.close()
        dbapi_conn.rollback()
    except Exception as e:
        raise exc.DisconnectionError(str(e)) from e  # the pool replaces it and retries


@contextmanager
def _writer_of(batch: _Batch) -> Iterator[Tx]:
    """One writer of a batch, in its own savepoint; call with the write lock held."""
    if batch.conn.invalidated:  # an earlier writer's error discarded it, and the batch
        raise StorageError(_LOST)
    with mapped_errors():
        _SAVEPOINT.run(batch.conn)
        try:
            # Taken under the write lock, so it orders with every other writer.
            yield Tx(batch.conn, int(time.time()))
        except BaseException:
            if not batch.conn.invalidated:  # else the transaction is gone with it
                _ROLLBACK_TO_SAVEPOINT.run(batch.conn)
                _RELEASE_SAVEPOINT.run(batch.conn)
            raise
        _RELEASE_SAVEPOINT.run(batch.conn)
    batch.writers += 1


@contextmanager
def mapped_errors() -> Iterator[None]:
    """Driver exceptions as :class:`Conflict`, :class:`StorageError` or its transient kind."""
    try:
        yield
    except exc.IntegrityError as e:
        raise Conflict(str(e.orig)) from e
    except (exc.OperationalError, exc.InterfaceError, exc.TimeoutError) as e:
        if getattr(getattr(e, "orig", None), "sqlstate", None) in _TRANSIENT_SQLSTATES:
            raise TransientStorageError(_short(e)) from e
        raise StorageError(_short(e)) from e
    except exc.DBAPIError as e:
        if e.connection_invalidated:
            raise StorageError(_short(e)) from e
        raise


def _short(e: exc.DBAPIError | exc.SQLAlchemyError) -> str:
    orig = getattr(e, "orig", None) or e
    return str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
