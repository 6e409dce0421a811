"""Store helpers: a private PostgreSQL schema, counting commits, bulk accounts."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from sqlalchemy import create_engine, event, insert, make_url, text

from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from ajedrez.store.models import User


def private_schema(url: str) -> tuple[str, Callable[[], None]]:
    """A schema of this run's own on PostgreSQL, so concurrent runs never collide.

    Returns the URL whose connections use it (``search_path``) and a function that drops it.
    Connecting raises, failing the run, when the server is unreachable.
    """
    schema = f"test_{uuid.uuid4().hex[:12]}"
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    engine.dispose()

    def drop() -> None:
        cleanup = create_engine(url)
        with cleanup.begin() as conn:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
        cleanup.dispose()

    scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    return scoped.render_as_string(hide_password=False), drop


def count_commits(db: Database) -> list[int]:
    """A one-item list that counts the transactions ``db`` commits from now on."""
    commits = [0]

    @event.listens_for(db.engine, "commit")
    def _on_commit(_conn) -> None:  # type: ignore[no-untyped-def]
        commits[0] += 1

    return commits


def insert_users(db: Database, names: list[str], password_hash: str) -> None:
    """Many active accounts at once, sharing one hash: hashing each would cost ~40 ms."""
    now = int(time.time())
    rows = [
        {
            "name": n,
            "name_key": n.lower(),
            "password_hash": password_hash,
            "comment": "",
            "active": True,
            "admitted_at": now,
            "changed_at": now,
            "wins": 0,
        }
        for n in names
    ]
    with db.engine.begin() as conn:
        conn.execute(insert(User), rows)


def private_database(sqlite_file: Path) -> Iterator[tuple[str, Database]]:
    """(URL, Database at head) of a database of its own on the store under test: a
    PostgreSQL schema of its own, dropped after, or the SQLite file ``sqlite_file``."""
    url = os.environ.get("AJEDREZ_TEST_DATABASE_URL")
    drop: Callable[[], None] | None = None
    if url and not url.startswith("sqlite"):
        url, drop = private_schema(url)
    else:
        url = f"sqlite:///{sqlite_file}"
    database = Database(url)
    upgrade(database)
    yield url, database
    database.dispose()
    if drop is not None:
        drop()
