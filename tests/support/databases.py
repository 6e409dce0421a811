"""Whole new databases on the store under test, for what needs one of its own beyond a
schema (a backup restored into a fresh database; a restore refused while any other
session uses the database, which the shared test database always has)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, make_url, text


def on_postgres() -> bool:
    url = os.environ.get("AJEDREZ_TEST_DATABASE_URL")
    return bool(url) and not str(url).startswith("sqlite")


@contextmanager
def fresh_database(directory: Path, name: str) -> Iterator[str]:
    """The URL of a database that does not exist yet on SQLite (a file in
    ``directory``), and one created empty on PostgreSQL (dropped at the end)."""
    base = os.environ.get("AJEDREZ_TEST_DATABASE_URL")
    if not on_postgres() or base is None:
        yield f"sqlite:///{directory / f'{name}.sqlite3'}"
        return
    database = f"t_{name}_{uuid.uuid4().hex[:10]}"
    server = create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with server.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{database}"'))
        try:
            yield make_url(base).set(database=database).render_as_string(hide_password=False)
        finally:
            with server.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    finally:
        server.dispose()
