"""The store's engine and transactions: :class:`Database`, one implementation per kind
of database (``sqlite.py``, ``postgres.py``; ``Database(url)`` makes the right one), as
Alembic keeps one implementation class per dialect. Callers never ask which it is.

Kinds of transaction, each a context manager:

``read()``
    A plain read, yielding the connection (SQLite: a WAL snapshot that never blocks
    writers).
``read_each()``
    A read whose statements need no common snapshot (STAT, SPAR): no BEGIN and no
    COMMIT where the database allows it.
``write()``
    A write, yielding a :class:`~ajedrez.store.tx.Tx` whose ``stamp`` is the fecha
    written into every ``changed_at`` it touches.
``sync_read()``
    A read whose ``stamp`` is safe to hand to a client as its next fecha. It waits until
    no write transaction is in flight and keeps new ones out while it takes its stamp.
    Every write stamped earlier is visible to it, and every write after it stamps a
    fecha at least as large, so ``changed_at >= fecha`` misses nothing. See
    ``docs/design.md``.
``reading()``, ``writing()``, ``syncing()``
    The same, as the domain's protocol (``ajedrez.domain.ports.Store``): each yields a
    ``Tx``.

From an event loop, ``write_later`` and ``read_later`` queue work and return a future.
Database faults surface as :class:`StorageError` and unique-key violations as
:class:`Conflict`, so callers above never handle driver exceptions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, Engine, event, exc, text
from sqlalchemy.engine import URL, ExceptionContext

from ajedrez.domain.errors import (
    Conflict,
    StorageError,
    TransientStorageError,
    retrying,
)
from ajedrez.domain.events import Event
from ajedrez.store.backups import Confirm, Progress
from ajedrez.store.prepared import Prepared, PreparedMany, read_only_connection
from ajedrez.store.tx import Tx
from ajedrez.store.urls import parse_url

if TYPE_CHECKING:
    from ajedrez.store.writer_process import WriterClient

SQLITE_BUSY_TIMEOUT = 10.0  # seconds
GROUP_COMMIT_WRITERS = 32

# deadlock_detected, serialization_failure: PostgreSQL rolled back; a rerun may succeed.
_TRANSIENT_SQLSTATES = frozenset({"40P01", "40001"})

T = TypeVar("T")


@dataclass(frozen=True)
class _Read:
    statement: Prepared[Any] | PreparedMany
    params: dict[str, Any]


def _grouped(
    jobs: Sequence[Callable[[Tx], T]],
    alone: Callable[[Callable[[Tx], T]], T | Exception],
    together: Callable[[Callable[..., list[Any]], list[Callable[[Tx], T]]], list[Any]],
) -> list[T | Exception]:
    """Each job's result, in job order: a job with a ``together`` function (see
    ``Database.write_later``) runs in one group with the others that share it, after
    the jobs without one, each of which runs ``alone``."""
    results: dict[int, T | Exception] = {}
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
    return [results[i] for i in range(len(jobs))]


class Database:
    is_sqlite: bool
    # Do all writers wait for one another (SQLite), rather than only for the rows they
    # share (PostgreSQL)? Then work done before the write shortens every wait.
    serializes_writes: bool
    # With --workers, are moves committed by one writer process that every worker
    # sends them to (PostgreSQL: writer_process.py)? SQLite's workers take turns.
    uses_writer_process: bool
    # The link to that writer process, in each worker that has one.
    writer_process: WriterClient | None = None

    def __new__(cls, url: str | URL, **_options: Any) -> Database:
        if cls is Database:
            cls = Database.kind(url)
        return super().__new__(cls)

    @staticmethod
    def kind(url: str | URL) -> type[Database]:
        """The class of the database ``url`` names, for what is done before (or
        instead of) opening it: ``restore``."""
        from ajedrez.store.postgres import PostgresDatabase
        from ajedrez.store.sqlite import SqliteDatabase

        sqlite = parse_url(url).get_backend_name() == "sqlite"
        return SqliteDatabase if sqlite else PostgresDatabase

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
        ``busy_timeout``: how long a SQLite writer waits for another process's lock.
        ``group_commit``: most writers sharing one commit (SQLite group commit, and the
        batches of moves on either store; 1: a commit each).
        """
        self.url = parse_url(url)
        self.busy_timeout_ms = int(busy_timeout * 1000)
        self.group_commit = max(1, group_commit)
        self._event_waiters: list[Callable[[], None]] = []
        self._commit_listeners: list[Callable[[Sequence[Event]], None]] = []
        self.engine = self._open(self.url, pool_size, create)
        self._replace_read_only_connections(self.engine)

    def _open(self, url: URL, pool_size: int, create: bool) -> Engine:
        """The engine, set up for this kind of database."""
        raise NotImplementedError

    def dispose(self) -> None:
        self.engine.dispose()

    def _begin(self, conn: Connection, begin: str) -> Connection:
        """``conn`` set to open its transactions with ``begin`` where the database
        takes more than one kind of BEGIN."""
        return conn

    # -- events committed -----------------------------------------------------------------

    # How often a process looks for events committed by other processes that it may not
    # have been told of (seconds).
    event_poll: float = 1.0

    def on_events(self, wake: Callable[[], None]) -> Callable[[], None]:
        """Call ``wake`` (from any thread, with no argument) whenever events may have
        committed: at once for this process's transactions, and for other processes'
        as soon as the database can tell (PostgreSQL's LISTEN); beyond that, a reader
        polls every ``event_poll`` seconds. Returns the function that stops it."""
        self._event_waiters.append(wake)

        def stop() -> None:
            with suppress(ValueError):
                self._event_waiters.remove(wake)

        return stop

    def on_commit(self, listener: Callable[[Sequence[Event]], None]) -> None:
        """Call ``listener`` with the events of each transaction this process commits
        (on the committing thread; it must be quick and must not raise)."""
        self._commit_listeners.append(listener)

    def _events_committed(self, events: Sequence[Event]) -> None:
        for wake in list(self._event_waiters):
            wake()
        for listener in self._commit_listeners:
            listener(events)

    # -- what each kind of database does its own way ----------------------------------

    def last_ids(self, conn: Connection) -> dict[str, int]:
        """Per table whose ids the database generates (``models.generated_id_tables``),
        the last id handed out: the next row gets a higher one."""
        raise NotImplementedError

    def continue_ids(self, conn: Connection, last: dict[str, int]) -> None:
        """Make each table's next generated id higher than ``last[table]`` and than
        every id in it (after rows were written with ids of their own, as a copy does)."""
        raise NotImplementedError

    def backup(self, file: Path, progress: Progress | None = None) -> str:
        """Write a consistent copy of the database to ``file``, a new file, while others
        go on writing (``ajedrez-admin db backup``); returns what it holds, in words.
        ``Refused`` (``store/backups.py``) when it cannot be done."""
        raise NotImplementedError

    @classmethod
    def restore(
        cls, url: URL, file: Path, confirm: Confirm, progress: Progress | None = None
    ) -> None:
        """Replace the database ``url`` names with the backup ``file``: ``Refused``, with
        nothing changed, when ``file`` is no backup or anything uses the database; asks
        ``confirm`` before the first change."""
        raise NotImplementedError

    def integrity_problems(self) -> list[str]:
        """What the database's own check of its files finds wrong (none: [])."""
        return []

    def snapshot(self) -> AbstractContextManager[Connection]:
        """A read whose statements all see one moment, however long it lasts."""
        return self.read()

    def read_each(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def write(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def sync_read(self) -> AbstractContextManager[Tx]:
        raise NotImplementedError

    def write_jobs(self, jobs: Sequence[Callable[[Tx], T]]) -> list[T | Exception]:
        """Run ``jobs`` in one transaction and commit it, returning each job's result or
        exception: the batches' entry (``batches.py``)."""
        raise NotImplementedError

    def write_later(self, job: Callable[[Tx], T]) -> asyncio.Future[T]:
        """From an event loop: ``job`` runs in a batch with whatever other jobs are
        queued (``write_jobs``); the future completes once the batch is durable (or
        fails with the job's exception or the commit's).

        Jobs that have a ``together`` attribute run through it as a group (a batch's
        moves, ``moves.py``): ``job.together(tx, jobs)`` returns each job's result or
        exception, and raises only for a fault of the database, which undoes the group
        and runs each job alone."""
        raise NotImplementedError

    def read_later(
        self, statement: Prepared[Any] | PreparedMany, **params: Any
    ) -> asyncio.Future[list[Any]]:
        """From an event loop: a future of the rows of ``statement``."""
        raise NotImplementedError

    # -- shared ----------------------------------------------------------------------------

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
        def _on_open(_dbapi_conn: Any, record: Any) -> None:
            record.info["opened"] = time.monotonic()

        @event.listens_for(engine, "invalidate")
        def _on_invalidate(_dbapi_conn: Any, _record: Any, exception: Any) -> None:
            if exception is not None and read_only_connection(exception):
                refused[0] = time.monotonic()

        @event.listens_for(engine, "checkout")
        def _on_checkout(_dbapi_conn: Any, record: Any, _proxy: Any) -> None:
            if record.info.get("opened", refused[0]) < refused[0]:
                # The pool closes it and opens another.
                raise exc.DisconnectionError("opened while the store refused writes")

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Connection]:
        with mapped_errors(), self.engine.connect() as conn:
            conn = self._begin(conn, begin)
            with conn.begin():
                yield conn

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

    def _write_alone(self, job: Callable[[Tx], T]) -> T | Exception:
        def once() -> T:
            with self.write() as tx:
                return job(tx)

        try:
            return retrying(once)  # a deadlock broken by PostgreSQL: run it again
        except Exception as e:
            return e

    def ping(self) -> None:
        with self.read() as conn:
            conn.execute(text("SELECT 1"))


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
