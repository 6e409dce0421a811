"""Hot statements: written in SQLAlchemy Core, compiled once, run on the DBAPI cursor.

A move, a STAT or a SPAR runs a handful of tiny statements that SQLite or PostgreSQL
answer in tens of microseconds; going through ``Connection.execute`` costs more than that
for each (cache-key lookup, execution context, events, result wrapping). A
:class:`Prepared` statement keeps the Core definition (one schema, one dialect-correct
SQL, ``FOR UPDATE`` only where the dialect has it) but compiles it once per dialect and
hands the SQL straight to the driver. psycopg then prepares it server-side after a few
runs on a connection. Driver errors are wrapped as SQLAlchemy wraps them, so
``storage.db`` maps them to ``Conflict``/``StorageError`` as for any other statement.

Only for statements whose columns need no SQLAlchemy type processing (integers, strings).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, exc
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ClauseElement

_SQLITE_READONLY = 8  # the primary code; its extended codes keep it in their low byte
_PG_READ_ONLY_SQL_TRANSACTION = "25006"


def read_only_connection(error: BaseException) -> bool:
    """Was a write refused because the connection itself is read-only?

    A SQLite connection that opened its file while the file could not be written (made
    immutable, on a file system remounted read-only) keeps its read-only descriptor for
    good, and a PostgreSQL session begun read-only (``default_transaction_read_only``, a
    standby) keeps that default: once the store can be written again, only a new
    connection can write. Such a connection is treated as lost, and replaced.
    """
    orig = getattr(error, "orig", None) or error
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF == _SQLITE_READONLY
    return getattr(orig, "sqlstate", None) == _PG_READ_ONLY_SQL_TRANSACTION


@dataclass(frozen=True)
class _Compiled:
    sql: str
    order: tuple[str, ...] | None  # positional paramstyle: the parameters' order
    fixed: dict[str, Any]  # the values of literal parameters (``values(active=True)``)
    row: Any  # a namedtuple class for the selected columns, or None
    # Positional: the parameters' values in order, from their dict: an itemgetter costs a
    # quarter of a generator's tuple (0.2 against 0.9 us for 20 parameters, timeit), and a
    # batch of moves runs its few statements once per move.
    pick: Callable[[dict[str, Any]], tuple[Any, ...]] | None


def _picker(order: tuple[str, ...] | None) -> Callable[[dict[str, Any]], tuple[Any, ...]] | None:
    if order is None:
        return None
    if len(order) == 1:
        (name,) = order
        return lambda params: (params[name],)
    if not order:
        return lambda _params: ()
    return itemgetter(*order)


# The statement's own type, so that a caller may build on it (``.selected_columns``).
S = TypeVar("S", bound=ClauseElement)


class Prepared(Generic[S]):
    def __init__(self, statement: S) -> None:
        self.statement = statement
        self._compiled: dict[str, _Compiled] = {}

    def _for(self, dialect: Dialect) -> _Compiled:
        found = self._compiled.get(dialect.name)
        if found is None:
            compiled = self.statement.compile(dialect=dialect)
            assert isinstance(compiled, SQLCompiler)
            order = tuple(compiled.positiontup or ()) if compiled.positional else None
            columns = getattr(self.statement, "selected_columns", None)
            if columns is None and getattr(self.statement, "_returning", None):
                columns = self.statement.exported_columns  # type: ignore[attr-defined]
            row = namedtuple("Row", [c.key for c in columns]) if columns is not None else None
            fixed = {k: v for k, v in compiled.params.items() if v is not None}
            found = _Compiled(str(compiled), order, fixed, row, _picker(order))
            self._compiled[dialect.name] = found
        return found

    def _args(self, compiled: _Compiled, params: dict[str, Any]) -> Any:
        if compiled.fixed:
            params = compiled.fixed | params
        return params if compiled.pick is None else compiled.pick(params)

    def _execute(
        self, conn: Connection, params: dict[str, Any] | list[dict[str, Any]]
    ) -> tuple[Any, _Compiled]:
        """Run once with ``params``, or once per item of a list of them (``executemany``:
        psycopg sends them all in one pipeline, one round trip for the lot)."""
        compiled = self._for(conn.dialect)
        dbapi = conn.dialect.loaded_dbapi
        # The driver's own cursor: psycopg's executemany takes ``returning``, which the
        # DBAPI protocol SQLAlchemy types it with does not have.
        cursor: Any = None
        try:
            driver: Any = conn.connection.dbapi_connection
            cursor = driver.cursor()
            if isinstance(params, list):
                many = [self._args(compiled, p) for p in params]
                if compiled.row is None:
                    cursor.executemany(compiled.sql, many)
                else:
                    cursor.executemany(compiled.sql, many, returning=True)
            else:
                cursor.execute(compiled.sql, self._args(compiled, params))
        except dbapi.Error as e:
            lost = read_only_connection(e) or conn.dialect.is_disconnect(
                e, conn.connection.dbapi_connection, cursor
            )
            if cursor is not None:
                cursor.close()
            if lost:  # as SQLAlchemy does: a dead connection must not go back to the pool
                conn.invalidate(e)
            raise exc.DBAPIError.instance(
                compiled.sql,
                None,
                e,
                dbapi.Error,
                hide_parameters=True,
                connection_invalidated=lost,
                dialect=conn.dialect,
            ) from e
        return cursor, compiled

    def all(self, conn: Connection, **params: Any) -> list[Any]:
        cursor, compiled = self._execute(conn, params)
        try:
            return [compiled.row._make(r) for r in cursor.fetchall()]
        finally:
            cursor.close()

    def first(self, conn: Connection, **params: Any) -> Any:
        cursor, compiled = self._execute(conn, params)
        try:
            found = cursor.fetchone()
        finally:
            cursor.close()
        return None if found is None else compiled.row._make(found)

    def all_each(self, conn: Connection, params: list[dict[str, Any]]) -> list[list[Any]]:
        """The rows for each item of ``params``; on PostgreSQL all sent in one pipeline."""
        if not params:
            return []
        if conn.dialect.name != "postgresql":  # sqlite3 has no executemany for rows
            return [self.all(conn, **p) for p in params]
        cursor, compiled = self._execute(conn, params)
        try:
            out = []
            while True:
                out.append([compiled.row._make(r) for r in cursor.fetchall()])
                if not cursor.nextset():
                    return out
        finally:
            cursor.close()

    def run_each(self, conn: Connection, params: list[dict[str, Any]]) -> None:
        """A statement without rows, run for each item of ``params``; on PostgreSQL in
        one pipeline."""
        if params:
            cursor, _compiled = self._execute(conn, params)
            cursor.close()

    def run(self, conn: Connection, **params: Any) -> int:
        """A statement without rows; returns how many rows it changed."""
        cursor, _compiled = self._execute(conn, params)
        try:
            return int(cursor.rowcount)
        finally:
            cursor.close()


class PreparedMany:
    """PostgreSQL: one statement run for many parameter sets at once, in one execution.

    Its SQL takes each of ``each`` as an array (``unnest``) and the others as one value
    shared by all sets; a statement with rows returns the set's ordinal (from 1) as its
    first column. Sending the sets through ``executemany``, even pipelined, costs a
    statement execution each in the server and a result each in psycopg.
    """

    def __init__(
        self, statement: ClauseElement, each: tuple[str, ...], alone: Prepared[Any] | None = None
    ) -> None:
        """``alone``: the same query for one parameter set, which a database without
        arrays (SQLite) runs once per set instead."""
        self.prepared = Prepared(statement)
        self.each = each
        self.alone = alone

    def _arrays(self, params: list[dict[str, Any]]) -> dict[str, Any]:
        arrays = dict(params[0])
        for name in self.each:
            arrays[name] = [p[name] for p in params]
        return arrays

    def all_each(self, conn: Connection, params: list[dict[str, Any]]) -> list[list[Any]]:
        """The rows for each item of ``params``, as ``Prepared.all_each``."""
        if self.alone is not None and conn.dialect.name != "postgresql":
            return self.alone.all_each(conn, params)
        out: list[list[Any]] = [[] for _ in params]
        if params:
            for row in self.prepared.all(conn, **self._arrays(params)):
                out[row[0] - 1].append(row)
        return out

    def run_each(self, conn: Connection, params: list[dict[str, Any]]) -> None:
        if params:
            self.prepared.run(conn, **self._arrays(params))
