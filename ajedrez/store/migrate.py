"""Bring a database's schema to the newest migration or back to an earlier one, or tell
where it is. A database at a revision this release does not know was upgraded by a newer
release: every entry point refuses it with one line (``NewerDatabase``) instead of
Alembic's error."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from ajedrez.store.db import Database

_WRAPPED = re.compile(r"\s*\n\s*")


class _OneLineSteps(logging.Filter):
    """Alembic logs each step with its migration's title, the docstring's first paragraph
    as written, wrapped over lines; the server's log writes a line break inside an event
    as an escape (one event, one line), so a wrapped title would read with a literal
    ``\\n`` in it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "\n" in message:
            record.msg, record.args = _WRAPPED.sub(" ", message), ()
        return True


logging.getLogger("alembic.runtime.migration").addFilter(_OneLineSteps())


def alembic_config() -> Config:
    cfg = Config()
    # The repository's migrations/, installed as ajedrez.migrations (pyproject.toml).
    cfg.set_main_option("script_location", str(resources.files("ajedrez.migrations")))
    return cfg


class NewerDatabase(Exception):
    """The database's schema is at a revision this release does not know."""


def revisions() -> list[str]:
    """Every migration this release knows, oldest first."""
    walked = ScriptDirectory.from_config(alembic_config()).walk_revisions()
    return [script.revision for script in reversed(list(walked))]


def check_known(db: Database) -> str | None:
    """The database's revision (None: no schema yet); ``NewerDatabase`` when it is none
    of this release's, which is what a newer release's upgrade leaves behind."""
    current = current_revision(db)
    if current is not None and current not in revisions():
        raise NewerDatabase(
            f"the database was upgraded by a newer release (revision {current}; this "
            f"release knows up to {head_revision()}): run that release, or take the schema "
            f"back with that release's 'ajedrez-admin db downgrade {head_revision()}'"
        )
    return current


def upgrade(db: Database) -> None:
    check_known(db)
    _migrate(db, command.upgrade, "head")


def downgrade(db: Database, revision: str) -> None:
    """Take the schema back to ``revision``, one of ``revisions()``: the ``downgrade()``
    of each later migration runs, newest first."""
    _migrate(db, command.downgrade, revision)


def _migrate(db: Database, step: Callable[[Config, str], None], revision: str) -> None:
    cfg = alembic_config()
    # Outside any transaction: migrations/env.py must be able to turn SQLite's foreign
    # keys off before it begins one.
    with db.engine.connect() as conn:
        cfg.attributes["connection"] = conn
        step(cfg, revision)
        conn.commit()


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(db: Database) -> str | None:
    with db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def is_current(db: Database) -> bool:
    return current_revision(db) == head_revision()
