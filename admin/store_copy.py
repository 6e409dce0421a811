"""``ajedrez-admin db copy TARGET``: every row of this database into an empty one, on
either store: how a service moves from SQLite to PostgreSQL (docs/operations.md,
"Moving to PostgreSQL"), or back.

The source is read in one snapshot (a running server's later moves are not in the copy:
stop it first), the target is written in one transaction (a copy that fails leaves it
empty), and the target's generated ids continue after the source's, so no game number
is ever given twice.
"""

from __future__ import annotations

import argparse
import sys
import time

from sqlalchemy import Connection, Table, delete, func, insert, select
from sqlalchemy.engine import URL

from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from ajedrez.store.models import AdminAudit, Base, EventCounter
from ajedrez.store.urls import parse_url, redact, sqlite_file

from .common import EXIT_USAGE, AdminError, actor, count

CHUNK = 5000
PROGRESS_EVERY = 2.0  # seconds between progress lines of one table
# Rows every new database has (the migrations write them): replaced by the source's.
_SEEDED = {EventCounter.__tablename__}


def db_copy(db: Database, args: argparse.Namespace) -> None:
    target_url = parse_url(args.target, "given as TARGET")
    if _same(db.url, target_url):
        raise AdminError("TARGET is this database: name another one", EXIT_USAGE)
    shown = redact(target_url)
    target = Database(target_url, pool_size=2, create=True)
    try:
        upgrade(target)
        with target.engine.connect() as conn:
            holding = _tables_with_rows(conn)
        if holding:
            raise AdminError(
                f"{shown} is not empty ({', '.join(holding)} have rows): copy into a new "
                "database only"
            )
        copied = _copy(db, target)
    finally:
        target.dispose()
    for table, rows in copied.items():
        print(f"  {table:<16} {rows:>12,}")
    print(f"copied {count(sum(copied.values()), 'row')} to {shown}")


def _copy(source: Database, target: Database) -> dict[str, int]:
    copied: dict[str, int] = {}
    tables = Base.metadata.sorted_tables
    with source.sync_read() as snapshot, target.engine.begin() as out:
        src = snapshot.conn
        for table in reversed(tables):
            out.execute(delete(table))
        for table in tables:
            copied[table.name] = _copy_table(src, out, table)
        target.continue_ids(out, source.last_ids(src))
        out.execute(
            insert(AdminAudit).values(
                at=int(time.time()),
                actor=actor()[:64],
                action="db copy",
                target="",
                detail=f"{sum(copied.values())} rows copied from another database",
            )
        )
    return copied


def _copy_table(src: Connection, out: Connection, table: Table) -> int:
    total = int(src.execute(select(func.count()).select_from(table)).scalar_one())
    order = list(table.primary_key.columns)
    result = src.execute(select(table).order_by(*order).execution_options(yield_per=CHUNK))
    done, shown_at = 0, time.monotonic()
    for part in result.mappings().partitions():
        out.execute(insert(table), [dict(row) for row in part])
        done += len(part)
        if time.monotonic() - shown_at >= PROGRESS_EVERY:
            print(f"  {table.name}: {done:,} of {total:,} rows", file=sys.stderr, flush=True)
            shown_at = time.monotonic()
    return done


def _tables_with_rows(conn: Connection) -> list[str]:
    return [
        t.name
        for t in Base.metadata.sorted_tables
        if t.name not in _SEEDED and conn.execute(select(t).limit(1)).first() is not None
    ]


def _same(a: URL, b: URL) -> bool:
    file_a, file_b = sqlite_file(a), sqlite_file(b)
    if file_a is not None or file_b is not None:
        return file_a is not None and file_b is not None and file_a.resolve() == file_b.resolve()
    return a.render_as_string(hide_password=True) == b.render_as_string(hide_password=True)
