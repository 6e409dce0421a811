"""Bring a database's schema to the newest migration, or tell whether it is there."""

from __future__ import annotations

from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from ajedrez.store.db import Database


def alembic_config() -> Config:
    cfg = Config()
    # The repository's migrations/, installed as ajedrez.migrations (pyproject.toml).
    cfg.set_main_option("script_location", str(resources.files("ajedrez.migrations")))
    return cfg


def upgrade(db: Database) -> None:
    cfg = alembic_config()
    with db.engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
        conn.commit()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def is_current(db: Database) -> bool:
    return current_revision(db) == head_revision()
