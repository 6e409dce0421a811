"""PostgreSQL, the production store and the way to several servers on one database.

Writers run side by side, each locking the rows it reads to change (``FOR UPDATE``);
a shared advisory lock, held to commit, orders them against a sync read, which takes
it in exclusive mode to read its stamp (see ``Database.sync_read``). Every statement is
a network round trip, so from the event loop reads are queued to a reader thread and
writes to a writer thread (or, with ``--workers``, to the writer process), each of
which sends what is queued together.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from sqlalchemy import Connection, Engine, TextClause, create_engine, event, exc, text
from sqlalchemy.engine import URL
from sqlalchemy.pool import NullPool

from ajedrez.domain.errors import StorageError, TransientStorageError
from ajedrez.store import postgres_backup
from ajedrez.store.backups import Confirm, Progress
from ajedrez.store.batches import BatchThread
from ajedrez.store.db import Database, T, _grouped, _Read, mapped_errors
from ajedrez.store.models import generated_id_tables
from ajedrez.store.prepared import Prepared, PreparedMany
from ajedrez.store.tx import Tx

log = logging.getLogger("ajedrez.storage")

READ_BATCH = 64  # most reads the reader thread sends in one go
PING_IF_IDLE_SECONDS = 5.0  # see _ping_if_idle
# Arbitrary but fixed: the advisory-lock key that orders writers against sync reads.
SYNC_LOCK_KEY = 0x41_6A_65_64  # "Ajed"

# Events committed: NOTIFY on this channel, the payload the newest event id.
EVENTS_CHANNEL = "ajedrez_events"
_NOTIFY = Prepared(text(f"SELECT pg_notify('{EVENTS_CHANNEL}', :last)"))
LISTEN_TIMEOUT_SECONDS = 1.0  # how often the listener looks whether it should stop
LISTEN_RETRY_SECONDS = 1.0

_PG_WRITE_BEGIN = text(
    "SELECT pg_advisory_xact_lock_shared(:k), floor(extract(epoch FROM clock_timestamp()))"
)
_PG_SYNC_BEGIN = text(
    "SELECT pg_advisory_xact_lock(:k), floor(extract(epoch FROM clock_timestamp()))"
)


class PostgresDatabase(Database):
    is_sqlite = False
    serializes_writes = False
    uses_writer_process = True

    def last_ids(self, conn: Connection) -> dict[str, int]:
        last = {}
        for table in generated_id_tables():
            value, called = conn.execute(
                text(f"SELECT last_value, is_called FROM {_sequence(conn, table)}")
            ).one()
            last[table] = int(value) if called else int(value) - 1
        return last

    def continue_ids(self, conn: Connection, last: dict[str, int]) -> None:
        for table, after in last.items():
            top = conn.execute(text(f'SELECT coalesce(max(id), 0) FROM "{table}"')).scalar_one()
            value = max(after, int(top))
            # setval(seq, v, true): the next id is v + 1; a sequence cannot hold 0.
            conn.execute(
                text("SELECT setval(:seq, :v, :called)"),
                {"seq": _sequence(conn, table), "v": max(value, 1), "called": value > 0},
            )

    def backup(self, file: Path, progress: Progress | None = None) -> str:
        return postgres_backup.backup(self.engine, self.url, file, progress)

    @classmethod
    def restore(
        cls, url: URL, file: Path, confirm: Confirm, progress: Progress | None = None
    ) -> None:
        target = create_engine(url, poolclass=NullPool, connect_args=_named(url))
        postgres_backup.restore(target, url, file, confirm, progress)

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        with mapped_errors(), self.engine.connect() as conn:
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    def _open(self, url: URL, pool_size: int, create: bool) -> Engine:
        self._writer: BatchThread[Callable[[Tx], Any]] | None = None
        self._reader: BatchThread[_Read] | None = None  # see read_later
        self._reader_conn: Connection | None = None  # the reader thread's own
        self._queue_lock = threading.Lock()
        engine = create_engine(
            url,
            pool_size=pool_size,
            max_overflow=pool_size // 2,
            # Error messages and logs never carry SQL parameters (hashes, names).
            hide_parameters=True,
            connect_args=_named(url),
        )
        self._install_idle_ping(engine)
        return engine

    def dispose(self) -> None:
        # After a fork the reader's connection is the parent's: not to be closed here.
        reader_conn = self._reader_conn if self._reader and self._reader.alive() else None
        for thread in (self._writer, self._reader):
            if thread is not None:
                thread.stop()
        self._writer = self._reader = self._reader_conn = None
        if reader_conn is not None and not reader_conn.closed:
            reader_conn.close()
        super().dispose()

    @staticmethod
    def _install_idle_ping(engine: Engine) -> None:
        event.listen(engine, "checkin", _note_idle_since)
        event.listen(engine, "checkout", _ping_if_idle)

    @contextmanager
    def read_each(self) -> Iterator[Connection]:
        with mapped_errors(), self.engine.connect() as conn:
            # Autocommit: no BEGIN and ROLLBACK round trips.
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    @contextmanager
    def write(self) -> Iterator[Tx]:
        with self._transaction_stamped(_PG_WRITE_BEGIN) as tx:
            yield tx

    def write_jobs(self, jobs: Sequence[Callable[[Tx], T]]) -> list[T | Exception]:
        """One transaction (one BEGIN, advisory lock and COMMIT for the
        batch) with no savepoints, which would cost two round trips a job. If any job
        fails, nothing of the batch is kept and each job runs again in a transaction of
        its own, which gives it its own answer: jobs must be safe to run twice, as a
        move is (it is checked again against the row it locks, and the batch that
        checked it first left nothing)."""
        try:
            with self._transaction_stamped(_PG_WRITE_BEGIN) as tx:
                return _grouped(
                    jobs, lambda job: job(tx), lambda run_with, group: run_with(tx, group)
                )
        except Exception as e:
            if len(jobs) == 1 and not isinstance(e, TransientStorageError):
                return [e]
        return [self._write_alone(job) for job in jobs]

    def write_later(self, job: Callable[[Tx], T]) -> asyncio.Future[T]:
        # With --workers, to the writer process (a job with a ``payload`` method: a
        # move), else to this process's writer thread; either commits what is queued
        # meanwhile in one batch.
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

    def read_later(
        self, statement: Prepared[Any] | PreparedMany, **params: Any
    ) -> asyncio.Future[list[Any]]:
        # Each read is a network round trip: queued to this process's reader thread, in
        # autocommit. The reads queued meanwhile go out together, each statement's in
        # one pipeline, so a batch costs one round trip per distinct statement and one
        # wake-up of each waiting loop.
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
        by_statement: dict[Prepared[Any] | PreparedMany, list[int]] = {}
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
        # The exclusive lock only while the writes in flight finish and the clock is
        # read: any snapshot taken after that sees every write stamped earlier, and
        # every later write is stamped later (docs/design.md, "Why nothing is missed").
        # Held for the whole read, it would stall the batches of moves behind a TRAN.
        with mapped_errors(), self.engine.connect() as conn:
            with conn.begin():  # the exclusive lock, released at this commit
                stamp = conn.execute(_PG_SYNC_BEGIN, {"k": SYNC_LOCK_KEY}).one()[1]
            # One snapshot for the whole read, as SQLite's read transaction has.
            conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield Tx(conn, int(stamp))

    @contextmanager
    def _transaction_stamped(self, begin: TextClause) -> Iterator[Tx]:
        """A transaction whose first statement takes the advisory lock and the stamp;
        the events it emitted are written last, with a NOTIFY that PostgreSQL delivers
        to every listener once it commits."""
        with self._transaction("BEGIN") as conn:
            stamp = conn.execute(begin, {"k": SYNC_LOCK_KEY}).one()[1]
            tx = Tx(conn, int(stamp), on_events=_notify)
            yield tx
            tx.flush_events()
        if tx.written:
            self._events_committed(tx.written)

    # -- events committed by other processes and servers: LISTEN -------------------------

    def on_events(self, wake: Callable[[], None]) -> Callable[[], None]:
        stop_local = super().on_events(wake)
        stopping = threading.Event()
        thread = threading.Thread(
            target=self._listen, args=(wake, stopping), name="event-listener", daemon=True
        )
        thread.start()

        def stop() -> None:
            stop_local()
            stopping.set()

        return stop

    def _listen(self, wake: Callable[[], None], stopping: threading.Event) -> None:
        """LISTEN on a connection of its own (outside the pool: it never goes back), and
        ``wake`` at each notification. A lost connection is opened again; the wake that
        follows makes the reader look for anything committed meanwhile."""
        conninfo = make_conninfo(
            self.url.set(drivername="postgresql").render_as_string(hide_password=False),
            **_named(self.url),
        )
        while not stopping.is_set():
            try:
                with psycopg.connect(conninfo, autocommit=True) as conn:
                    conn.execute(f"LISTEN {EVENTS_CHANNEL}")
                    wake()
                    while not stopping.is_set():
                        for _note in conn.notifies(timeout=LISTEN_TIMEOUT_SECONDS):
                            wake()
            except psycopg.Error as e:
                log.warning("listening for events: %s; again in %g s", _first_line(e), 1.0)
                stopping.wait(LISTEN_RETRY_SECONDS)


def _named(url: URL) -> dict[str, str]:
    """This program's name as its sessions' ``application_name`` (what
    ``pg_stat_activity`` shows, and a refused ``db restore`` names), unless the URL
    gives one."""
    if "application_name" in url.query:
        return {}
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    name = spec.name if spec is not None else Path(sys.argv[0]).name
    return {"application_name": _PROGRAMS.get(name, name)[:63] or "ajedrez"}


# Run as modules (python -m), as the tests do: named as their installed commands.
_PROGRAMS = {
    "ajedrez.__main__": "ajedrez-server",
    "ajedrez.server.main": "ajedrez-server",
    "ajedrez.admin.cli": "ajedrez-admin",
    "ajedrez.client.cli": "ajedrez",
}


def _notify(conn: Connection, last: int) -> None:
    _NOTIFY.run(conn, last=str(last))


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _note_idle_since(_dbapi_conn: Any, record: Any) -> None:
    record.info["idle_since"] = time.monotonic()


def _ping_if_idle(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    """PostgreSQL: ping a pooled connection before use only if it has been idle a while.

    ``pool_pre_ping`` would cost a round trip on every request, a fifth of a STAT. A
    connection used moments ago is alive or fails the request it is used for (and is then
    discarded, see ``store/prepared.py``); one idle across an outage or a restart is
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


def _sequence(conn: Connection, table: str) -> str:
    """The name of the sequence behind ``table``'s id, as the schema search path finds it."""
    name = conn.execute(text("SELECT pg_get_serial_sequence(:t, 'id')"), {"t": table}).scalar_one()
    if name is None:
        raise StorageError(f"table {table} has no sequence for its id")
    return str(name)
