"""Alembic environment: the models' metadata is the target; batch mode for SQLite."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection, text

from ajedrez.store.db import Database
from ajedrez.store.models import Base
from ajedrez.store.urls import resolve_url

config = context.config
target_metadata = Base.metadata
# Two servers starting at once on one PostgreSQL database must not both migrate it.
MIGRATION_LOCK_KEY = 0x41_6A_65_65


def _run(connection: Connection) -> None:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite and not connection.in_transaction():
        # Rebuilding a table (batch mode) drops the old one, which with foreign keys on
        # would cascade to the rows that reference it. The pragma only takes effect
        # outside a transaction, hence on the driver's connection before BEGIN.
        _sqlite_pragma(connection, "PRAGMA foreign_keys = OFF")
        try:
            _migrate(connection)
        finally:
            _sqlite_pragma(connection, "PRAGMA foreign_keys = ON")
        broken = _sqlite_pragma(connection, "PRAGMA foreign_key_check")
        if broken:
            raise RuntimeError(f"the migration left rows without their parent: {broken[:5]}")
        return
    _migrate(connection)


def _sqlite_pragma(connection: Connection, sql: str) -> list[tuple[object, ...]]:
    driver = connection.connection.driver_connection
    assert driver is not None
    return list(driver.execute(sql).fetchall())


def _migrate(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url") or resolve_url(None),
        target_metadata=target_metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    db = Database(config.get_main_option("sqlalchemy.url") or resolve_url(None), pool_size=1)
    try:
        with db.engine.connect() as conn:
            _run(conn)
    finally:
        db.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
