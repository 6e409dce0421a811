"""The files of a SQLite database hold password hashes: a server started on a new path,
``ajedrez-admin db upgrade --create`` and ``db copy`` into a new file make the database,
its ``-wal`` and its ``-shm`` readable by their owner alone, whatever the umask; ``db
check`` warns about a database that others may read (docs/operations.md, "Checking a
database")."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from tests.support.admin import assert_ok, in_process
from tests.support.common import PASSWORD, ROOT, unique_name
from tests.support.server import start_server

# What an operator's shell usually has: files readable by everybody unless made otherwise.
USUAL_UMASK = 0o022


@pytest.fixture
def usual_umask() -> Iterator[None]:
    old = os.umask(USUAL_UMASK)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def database_files(path: Path) -> list[Path]:
    return [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]


def admin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ajedrez.admin.cli", *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_server_on_a_new_path_makes_the_database_its_owners_alone(tmp_path, usual_umask):
    path = tmp_path / "new" / "ajedrez.sqlite3"
    srv = start_server(f"sqlite:///{path}")
    try:
        name = unique_name("fm")
        with srv.connect() as c:
            assert c.cmd(f"SUBS:{name}:{PASSWORD}:").kind == "S"
        files = database_files(path)
        assert all(p.exists() for p in files), list(path.parent.iterdir())
        assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
    finally:
        assert srv.stop() == 0
    assert mode(path) == 0o600


def test_db_upgrade_create_and_db_copy_make_new_files_the_owners_alone(
    tmp_path, usual_umask, own_db
):
    created = tmp_path / "made" / "ajedrez.sqlite3"
    done = admin("--database-url", f"sqlite:///{created}", "db", "upgrade", "--create")
    assert done.returncode == 0, done.stderr
    assert mode(created) == 0o600
    copied = tmp_path / "copied.sqlite3"
    done = admin("--database-url", own_db[0], "db", "copy", f"sqlite:///{copied}")
    assert done.returncode == 0, done.stderr
    assert mode(copied) == 0o600


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "checked.sqlite3"
    database = Database(f"sqlite:///{path}")
    upgrade(database)
    database.dispose()
    yield path


def test_db_check_warns_about_a_database_others_may_read(sqlite_db, monkeypatch, capsys):
    cli = in_process(f"sqlite:///{sqlite_db}", monkeypatch, capsys)
    r = cli("db", "check")
    assert_ok(r)
    assert "warning" not in r.out
    sqlite_db.chmod(0o644)
    r = cli("db", "check")
    assert_ok(r)  # a warning, not a problem of the data: the status stays 0
    (warning,) = [line for line in r.out.splitlines() if line.startswith("warning: ")]
    # The -wal and -shm the check's own connection opened took the file's mode.
    shown = ", ".join(f"{p} (mode 0644)" for p in database_files(sqlite_db))
    assert warning == (
        f"warning: {shown}: open to users other than its owner, and the database holds "
        f"password hashes; make it the owner's alone: chmod 600 "
        f"{' '.join(map(str, database_files(sqlite_db)))}"
    )
    assert r.out.splitlines()[-1] == "ok"
    for p in database_files(sqlite_db):
        if p.exists():  # the -wal and -shm go when the last connection closes
            p.chmod(0o600)
    assert "warning" not in cli("db", "check").out


def test_db_check_of_the_store_under_test_warns_of_nothing(own_db, monkeypatch, capsys):
    """A database made by this release, on either store, gives no warning."""
    r = in_process(own_db[0], monkeypatch, capsys)("db", "check")
    assert_ok(r)
    assert "warning" not in r.out, r.out
