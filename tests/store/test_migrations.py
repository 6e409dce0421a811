"""The Alembic migrations agree with the models, and bring any database to head."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from ajedrez.store.db import Database
from ajedrez.store.migrate import (
    alembic_config,
    current_revision,
    head_revision,
    is_current,
    upgrade,
)
from ajedrez.store.models import Base

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


def test_upgrade_to_0003_keeps_every_move_and_stops_reusing_ids(tmp_path):
    """SQLite rebuilds ``games`` for AUTOINCREMENT; with foreign keys on, dropping the
    old table would cascade to ``moves``."""
    url = f"sqlite:///{tmp_path / 'at0002.sqlite3'}"
    database = Database(url)
    try:
        cfg = alembic_config()
        with database.engine.connect() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0002")
            conn.commit()
        with database.engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO users (id, name, password_hash, comment, active, admitted_at,"
                    " changed_at, wins) VALUES (1, 'ana', 'x', '', 1, 0, 0, 0),"
                    " (2, 'bob', 'x', '', 1, 0, 0, 0)"
                )
            )
            for gid in (1, 2):
                conn.execute(
                    text(
                        "INSERT INTO games (id, white_id, black_id, user_lo, user_hi, status,"
                        " winner, req_white, req_black, next_ply, fen, created_at, changed_at)"
                        " VALUES (:g, 1, 2, 1, 2, 2, 1, 0, 0, 2, 'x', 0, 0)"
                    ),
                    {"g": gid},
                )
                conn.execute(
                    text("INSERT INTO moves VALUES (:g, 1, 'e2e4', 0, '1228', 0, 'e4', 0)"),
                    {"g": gid},
                )
        upgrade(database)
        assert schema_diff(database) == []
        with database.engine.begin() as conn:
            assert conn.scalar(text("SELECT count(*) FROM moves")) == 2
            assert conn.scalar(text("PRAGMA foreign_keys")) == 1  # back on for the pool
            conn.execute(text("DELETE FROM moves WHERE game_id = 2"))
            conn.execute(text("DELETE FROM games WHERE id = 2"))
            conn.execute(
                text(
                    "INSERT INTO games (white_id, black_id, user_lo, user_hi, status, winner,"
                    " req_white, req_black, next_ply, fen, created_at, changed_at)"
                    " VALUES (1, 2, 1, 2, 0, 0, 0, 0, 1, 'x', 0, 0)"
                )
            )
            assert conn.scalar(text("SELECT max(id) FROM games")) == 3
    finally:
        database.dispose()
