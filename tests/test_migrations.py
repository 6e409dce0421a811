"""The Alembic migrations agree with the models, and bring any database to head."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from ajedrez.storage.db import Database
from ajedrez.storage.migrate import (
    alembic_config,
    current_revision,
    head_revision,
    is_current,
    upgrade,
)
from ajedrez.storage.models import Base

TABLES = {
    "users",
    "subscriptions",
    "game_requests",
    "games",
    "moves",
    "removals",
    "admin_audit",
}


def schema_diff(database: Database) -> list:
    with database.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(ctx, Base.metadata)


def test_models_match_migrations_on_test_database(db):
    upgrade(db)
    assert is_current(db)
    assert schema_diff(db) == []


def test_single_head():
    assert head_revision() is not None


def test_new_sqlite_file_reaches_head(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
    database = Database(url)
    try:
        assert current_revision(database) is None
        assert not is_current(database)
        upgrade(database)
        assert current_revision(database) == head_revision()
        assert is_current(database)
        assert set(inspect(database.engine).get_table_names()) >= TABLES
        assert schema_diff(database) == []
        upgrade(database)  # a second upgrade changes nothing
        assert is_current(database)
    finally:
        database.dispose()


def test_downgrade_to_base_and_up_again(tmp_path):
    url = f"sqlite:///{tmp_path / 'roundtrip.sqlite3'}"
    database = Database(url)
    try:
        upgrade(database)
        cfg = alembic_config()
        with database.engine.connect() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "base")
            conn.commit()
        assert current_revision(database) is None
        assert not (TABLES & set(inspect(database.engine).get_table_names()))
        upgrade(database)
        assert is_current(database)
        assert schema_diff(database) == []
    finally:
        database.dispose()
