"""SQLite's backup and restore (``SqliteDatabase.backup`` and ``.restore``).

Backup: SQLite's online backup API (``sqlite3.Connection.backup``) copies the database
page by page, a step of ``STEP_PAGES`` at a time, on a connection of the store's own (so
this process is marked open like any other, ``open_marks.py``). That connection holds
one read transaction from the first step to the last: every step reads the same WAL
snapshot, so the copy is one consistent moment of the database, and writers are never
blocked (a read in WAL mode holds no lock they wait for). Without it, any commit by
another process between two steps would start the copy over, and under a steady load
of moves it would never end. The copy is switched out of WAL mode (``journal_mode =
DELETE``): a backup is one self-contained file.

Restore: the backup is checked first (``integrity_check``, an Ajedrez schema of a
known revision), refused while any live process has the database open (a held marker
in ``<database>-open/``), then copied to a temporary file beside the database and
renamed over it, after the old database's ``-wal`` and ``-shm`` are removed: a
write-ahead log left beside the new file would be replayed into it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.engine import URL

from ajedrez.store.backups import (
    Confirm,
    Progress,
    Refused,
    readable,
    replace_durably,
    written,
)
from ajedrez.store.open_marks import OpenMarks
from ajedrez.store.urls import sqlite_file

STEP_PAGES = 4096  # 16 MB of 4 kB pages: a step's read transaction holds nothing writers need


def backup(engine: Engine, file: Path, progress: Progress | None) -> str:
    with written(file) as partial, engine.connect() as conn:
        source = conn.connection.dbapi_connection
        assert isinstance(source, sqlite3.Connection)
        source.execute("BEGIN")
        try:
            # The snapshot is taken at the first read and kept to the ROLLBACK.
            source.execute("SELECT count(*) FROM sqlite_schema").fetchone()
            target = sqlite3.connect(partial)
            try:
                source.backup(target, pages=STEP_PAGES, progress=_pages(progress))
                target.execute("PRAGMA journal_mode = DELETE").fetchone()
                pages = int(target.execute("PRAGMA page_count").fetchone()[0])
                games = _count_games(target)
            finally:
                target.close()
        finally:
            source.execute("ROLLBACK")
    size = file.stat().st_size
    return f"{games:,} games, {pages:,} pages, {size:,} bytes"


def restore(url: URL, file: Path, confirm: Confirm, progress: Progress | None) -> None:
    path = sqlite_file(url)
    if path is None:
        raise Refused("the database URL names no SQLite file to restore into")
    revision, games = _inspect(file)
    marks = OpenMarks(path)
    if marks.in_use():
        raise Refused(_in_use(path))
    exists = "replace the database" if path.exists() else "create the database"
    confirm(
        f"{exists} {path} with the backup {file} ({games:,} games, schema {revision})? "
        "Everything written to it since that backup is lost."
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with _writers_kept_out(path):
        marks.mark()  # open by this process from now: a second restore is refused
        try:
            if marks.in_use():  # opened while the operator answered
                raise Refused(_in_use(path))
            new = path.with_name(f".{path.name}.restore-{secrets.token_hex(4)}")
            try:
                _copy(file, new, progress)
                _same_owner(path, new)
                for stale in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        path.with_name(path.name + stale).unlink()
                replace_durably(new, path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    new.unlink()
        finally:
            # With no other marker held, this also removes the markers of processes that
            # died with the old database open: the log they left went with it.
            marks.unmark()


def _in_use(path: Path) -> str:
    return (
        f"{path} is in use by a running process (a server, its workers or another "
        "ajedrez-admin): stop it first, then restore"
    )


def _inspect(file: Path) -> tuple[str, int]:
    """(schema revision, games) of a backup, or Refused saying why it is none."""
    from ajedrez.store.migrate import head_revision, revisions

    readable(file)
    not_backup = f"{file} is not a backup of an Ajedrez SQLite database"
    try:
        with _read_only(file) as con:
            checked = [row[0] for row in con.execute("PRAGMA integrity_check").fetchall()]
            if checked != ["ok"]:
                raise Refused(f"{not_backup}, or a damaged one: {checked[0]}")
            tables = {row[0] for row in con.execute("SELECT name FROM sqlite_schema")}
            if not {"alembic_version", "games"} <= tables:
                raise Refused(f"{not_backup}: it has no Ajedrez tables")
            found = con.execute("SELECT version_num FROM alembic_version").fetchone()
            games = _count_games(con)
    except sqlite3.DatabaseError as e:
        raise Refused(f"{not_backup}: {e}") from None
    if found is None or found[0] not in revisions():
        raise Refused(
            f"{file} holds a schema this release does not know ({found and found[0]}; it "
            f"knows up to {head_revision()}): restore it with the release that wrote it"
        )
    return str(found[0]), games


@contextmanager
def _read_only(file: Path) -> Iterator[sqlite3.Connection]:
    # immutable: reads the file alone, creating no -wal or -shm beside it.
    con = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        yield con
    finally:
        con.close()


def _count_games(con: sqlite3.Connection) -> int:
    return int(con.execute("SELECT count(*) FROM games").fetchone()[0])


def _copy(file: Path, new: Path, progress: Progress | None) -> None:
    fd = os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    with _read_only(file) as source:
        target = sqlite3.connect(new)
        try:
            source.backup(target, pages=STEP_PAGES, progress=_pages(progress))
        finally:
            target.close()


def _pages(progress: Progress | None) -> Callable[[int, int, int], object] | None:
    """The backup API's report of each step, as a line of progress."""
    if progress is None:
        return None
    shown = progress

    def step(_status: int, remaining: int, total: int) -> None:
        shown(f"copied {total - remaining:,} of {total:,} pages")

    return step


def _same_owner(path: Path, new: Path) -> None:
    """The restored file with the mode and owner the database had, so the server's user
    can still write it (the owner only when this process may give it)."""
    if not path.exists():
        return
    old = path.stat()
    os.chmod(new, stat.S_IMODE(old.st_mode))
    with contextlib.suppress(PermissionError):
        os.chown(new, old.st_uid, old.st_gid)


@contextmanager
def _writers_kept_out(path: Path) -> Iterator[None]:
    """The store's writer lock (``-writer.lock``, ``sqlite.py``), held while the file is
    replaced: a server started meanwhile waits before its first write."""
    lock = path.with_name(path.name + "-writer.lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise Refused(_in_use(path)) from None
        yield
    finally:
        os.close(fd)
