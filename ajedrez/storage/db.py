"""Engine set-up and transactions for SQLite and PostgreSQL.

Three kinds of transaction, each a context manager yielding a :class:`Tx`:

``read()``
    A plain read, yielding the connection. SQLite: deferred ``BEGIN`` (a WAL snapshot
    that never blocks writers).
``write()``
    A write. Its ``stamp`` is the fecha written into every ``changed_at`` it touches.
    SQLite: ``BEGIN IMMEDIATE`` (the write lock is taken up front, so two writers never
    both read and then both try to write; pysqlite's own deferred BEGIN loses writes),
    plus one process-wide lock so that threads queue fairly instead of spinning on the
    busy timeout. PostgreSQL: a shared advisory lock held to commit; rows that are read
    then written are locked by the caller with ``FOR UPDATE``.
``sync_read()``
    A read whose ``stamp`` is safe to hand to a client as its next fecha. It waits until
    no write transaction is in flight and keeps new ones out while it reads (SQLite:
    ``BEGIN IMMEDIATE``; PostgreSQL: the advisory lock in exclusive mode). Every write
    that committed before is visible to it, and every write after it stamps a fecha at
    least as large, so ``changed_at >= fecha`` misses nothing. See ``docs/design.md``.

Database faults surface as :class:`StorageError` and unique-key violations as
:class:`Conflict`, so callers above never handle driver exceptions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, exc, make_url, text
from sqlalchemy.engine import URL

from ..errors import StorageError, TransientStorageError

SQLITE_BUSY_TIMEOUT = 10.0  # seconds
# Arbitrary but fixed: the advisory-lock key that orders writers against sync reads.
SYNC_LOCK_KEY = 0x41_6A_65_64  # "Ajed"

# deadlock_detected, serialization_failure: PostgreSQL rolled back; a rerun may succeed.
_TRANSIENT_SQLSTATES = frozenset({"40P01", "40001"})

_PG_WRITE_BEGIN = text(
    "SELECT pg_advisory_xact_lock_shared(:k), floor(extract(epoch FROM clock_timestamp()))"
)
_PG_SYNC_BEGIN = text(
    "SELECT pg_advisory_xact_lock(:k), floor(extract(epoch FROM clock_timestamp()))"
)


class Conflict(Exception):
    """A unique key or other constraint refused a write; the transaction was rolled back."""


@dataclass
class Tx:
    conn: Connection
    stamp: int


def redact(url: str | URL) -> str:
    """The URL as it may appear in logs: never with its password."""
    return make_url(url).render_as_string(hide_password=True)


def default_sqlite_path() -> Path:
    import os

    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "ajedrez" / "ajedrez.sqlite3"


def default_url() -> str:
    return f"sqlite:///{default_sqlite_path()}"


def resolve_url(cli_value: str | None) -> str:
    """Command line over ``AJEDREZ_DATABASE_URL`` over the embedded default."""
    import os

    return cli_value or os.environ.get("AJEDREZ_DATABASE_URL") or default_url()


class Database:
    def __init__(
        self,
        url: str | URL,
        *,
        pool_size: int = 20,
        create: bool = True,
        busy_timeout: float = SQLITE_BUSY_TIMEOUT,
    ) -> None:
        """``create=False`` refuses a SQLite file that does not exist yet."""
        self.url = make_url(url)
        self.busy_timeout_ms = int(busy_timeout * 1000)
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        self._write_lock = threading.Lock()
        if self.is_sqlite:
            self._prepare_sqlite_path(create)
            # Unbounded overflow: a writer takes the process write lock before a connection,
            # and must never then queue for one behind readers (SQLite connections are
            # cheap; the transport bounds how many commands run at once).
            self.engine = create_engine(
                self.url, pool_size=pool_size, max_overflow=-1, hide_parameters=True
            )
            self._install_sqlite_hooks(self.engine, self.busy_timeout_ms)
        else:
            self.engine = create_engine(
                self.url,
                pool_size=pool_size,
                max_overflow=pool_size // 2,
                pool_pre_ping=True,
                # Error messages and logs never carry SQL parameters (hashes, names).
                hide_parameters=True,
            )

    def _prepare_sqlite_path(self, create: bool) -> None:
        db = self.url.database
        if db and db != ":memory:" and not db.startswith("file:"):
            path = Path(db).expanduser()
            if not create and not path.exists():
                raise StorageError(f"no database file at {path}")
            path.parent.mkdir(parents=True, exist_ok=True)

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

    def dispose(self) -> None:
        self.engine.dispose()

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Connection]:
        try:
            with self.engine.connect() as conn:
                if self.is_sqlite:
                    conn = conn.execution_options(ajedrez_begin=begin)
                with conn.begin():
                    yield conn
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

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self._transaction("BEGIN") as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[Tx]:
        with self._locked_transaction(_PG_WRITE_BEGIN) as tx:
            yield tx

    @contextmanager
    def sync_read(self) -> Iterator[Tx]:
        with self._locked_transaction(_PG_SYNC_BEGIN) as tx:
            yield tx

    @contextmanager
    def _locked_transaction(self, pg_begin: object) -> Iterator[Tx]:
        if self.is_sqlite:
            with self._write_lock, self._transaction("BEGIN IMMEDIATE") as conn:
                # Taken after the write lock is ours, so it orders with every other writer.
                yield Tx(conn, int(time.time()))
        else:
            with self._transaction("BEGIN") as conn:
                stamp = conn.execute(pg_begin, {"k": SYNC_LOCK_KEY}).one()[1]  # type: ignore[arg-type]
                yield Tx(conn, int(stamp))

    def ping(self) -> None:
        with self.read() as conn:
            conn.execute(text("SELECT 1"))


def _short(e: exc.DBAPIError | exc.SQLAlchemyError) -> str:
    orig = getattr(e, "orig", None) or e
    return str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
