"""``ajedrez-admin db downgrade``, and a database upgraded by a newer release refused by
ajedrez-admin and by the server with one line (docs/operations.md, "Upgrading").

Each test has a database of its own on the store under test, filled as in
tests/store/test_upgrades.py (tests/support/upgrades.py).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import text

from ajedrez.store.db import Database
from ajedrez.store.migrate import alembic_config, current_revision, upgrade
from tests.support.admin import answered, assert_error, assert_ok
from tests.support.common import ROOT
from tests.support.server import start_server
from tests.support.upgrades import (
    HEAD,
    REVISIONS,
    build,
    check,
    empty_database,
    migrate_to,
    snapshot,
)

NEWER = "0099"  # a revision of a release after this one


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[str, Database]]:
    """(URL, Database) with no schema yet, on the store under test."""
    with empty_database(tmp_path) as found:
        yield found


def audit_rows(database: Database) -> list[tuple[str, str, str]]:
    with database.engine.connect() as conn:
        rows = conn.execute(text("SELECT action, target, detail FROM admin_audit ORDER BY id"))
        return [tuple(r) for r in rows]


def test_downgrade_that_would_lose_data_is_refused_unless_forced(cli, fresh):
    url, database = fresh
    migrate_to(database, HEAD)
    built = build(database, HEAD)
    before = snapshot(database)

    r = cli("db", "downgrade", "0004", url=url)
    assert_error(
        r,
        1,
        "going back to 0004 would lose",
        "1 login token (migration 0015)",
        "2 blocks (migration 0013)",
        "1 guest (kept as a closed account) (migration 0011)",
        "4 records of rows 'import espol' wrote (migration 0009)",
        "3 chat messages, 1 seek, 1 takeback request (migration 0007)",
        "1 private game (observers could watch it), 1 private challenge (migration 0006)",
        "1 game with a clock, 1 challenge with a clock, 1 account's leave (migration 0005)",
        "nothing changed",
        "--force",
    )
    assert r.out == ""
    assert current_revision(database) == HEAD
    assert snapshot(database) == before

    r = cli("db", "downgrade", "0004", "--force", url=url)
    assert_ok(r)
    lines = r.out.splitlines()
    assert lines[0] == f"database schema taken back from {HEAD} to 0004"
    assert lines[1].startswith(
        "lost: 1 login token (migration 0015); 2 blocks (migration 0013); "
        "1 guest (kept as a closed account) (migration 0011); "
        "4 records of rows 'import espol' wrote (migration 0009); 3 "
    )
    assert "3 chat messages" in lines[1] and "1 game with a clock" in lines[1]
    assert "run the release whose newest migration is 0004" in lines[2]
    assert current_revision(database) == "0004"
    action, target, detail = audit_rows(database)[-1]
    assert (action, target) == ("db downgrade", "0004")
    assert detail.startswith(
        f"from {HEAD}; lost 1 login token (migration 0015); 2 blocks (migration 0013); 1 guest"
    )

    # This release brings it forward again; what 0004 holds is all there and works.
    assert_ok(cli("db", "upgrade", url=url))
    built.audit.append("db downgrade")
    check(database, built, kept="0004")


def test_downgrade_that_loses_nothing_needs_no_force(cli, fresh):
    url, database = fresh
    migrate_to(database, "0005")
    built = build(database, "0005")
    upgrade(database)

    r = cli("db", "downgrade", "0005_clocks_and_leave", url=url)  # the file's name
    assert_ok(r)
    assert r.out.splitlines()[0] == f"database schema taken back from {HEAD} to 0005"
    assert "lost" not in r.out
    assert current_revision(database) == "0005"
    assert audit_rows(database)[-1] == ("db downgrade", "0005", f"from {HEAD}")
    # Only db commands work until a release of 0005 or this one's upgrade runs.
    assert_error(cli("users", "list", url=url), 3, "not up to date", "db upgrade")

    assert_ok(cli("db", "upgrade", url=url))
    built.audit.append("db downgrade")
    check(database, built)


def test_downgrade_below_the_audit_trail_says_it_is_not_recorded(cli, fresh):
    url, database = fresh
    upgrade(database)
    r = cli("db", "downgrade", "0002", url=url)
    assert_ok(r)
    assert "not in the audit trail: the schema of 0002 has none" in r.out
    assert current_revision(database) == "0002"


def test_downgrade_needs_a_known_revision_earlier_than_the_database(cli, fresh):
    url, database = fresh
    with database.engine.connect():  # the file exists (SQLite), without a schema
        pass
    assert_error(cli("db", "downgrade", "0001", url=url), 1, "no schema yet")
    migrate_to(database, "0005")
    for unknown in ("0999", "5", "base", "0005_clocks", "head"):
        r = cli("db", "downgrade", unknown, url=url)
        assert_error(r, 2, f"no migration '{unknown}'", "0001, 0002", "0005_clocks_and_leave")
    for not_earlier in ("0005", "0006", HEAD):
        r = cli("db", "downgrade", not_earlier, url=url)
        assert_error(r, 1, "the database is at 0005", f"later than {not_earlier}", "db upgrade")
    assert current_revision(database) == "0005"


def test_downgrade_on_a_terminal_asks_first(cli, fresh):
    url, database = fresh
    migrate_to(database, HEAD)
    build(database, HEAD)

    r = cli("db", "downgrade", "0006", "--force", url=url, tty=True, stdin="n\n")
    question = (
        f"take the database schema back from {HEAD} to 0006, losing 1 login token (migration "
        "0015); 2 blocks (migration 0013); 1 guest (kept as a closed account) (migration "
        "0011); 4 records of rows "
        "'import espol' wrote "
        "(migration 0009); 3 chat messages"
    )
    assert question in r.err
    assert_error(answered(r), 1, "not confirmed: nothing changed")
    assert current_revision(database) == HEAD

    # Refused before any question when data would be lost and --force is missing.
    r = cli("db", "downgrade", "0006", url=url, tty=True, stdin="y\n")
    assert "[y/N]" not in r.err
    assert_error(r, 1, "would lose", "--force")

    r = cli("db", "downgrade", "0006", "--force", url=url, tty=True, stdin="y\n")
    assert question in r.err
    assert r.status == 0, r
    assert current_revision(database) == "0006"

    r = cli("db", "downgrade", "0005", "--force", "--yes", url=url, tty=True)
    assert_ok(r)  # --yes: no question
    assert current_revision(database) == "0005"


def test_a_database_a_newer_release_upgraded_is_refused_with_one_line(cli, fresh):
    url, database = fresh
    upgrade(database)
    with database.engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": NEWER})
    words = (
        f"the database was upgraded by a newer release (revision {NEWER}; this release knows "
        f"up to {HEAD})",
        f"'ajedrez-admin db downgrade {HEAD}'",
    )
    for args in (
        ("users", "list"),
        ("db", "upgrade"),
        ("db", "downgrade", "0005", "--force"),
        ("db", "check"),
    ):
        assert_error(cli(*args, url=url), 3, *words)

    # The real program, and the server at start, the same way.
    done = subprocess.run(
        [sys.executable, "-m", "ajedrez.admin.cli", "--database-url", url, "db", "upgrade"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert_error(done, 3, *words)
    done = subprocess.run(
        [sys.executable, "-m", "ajedrez", "--database-url", url, "--port", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, done.stderr
    assert all(word in errors[0] for word in words), errors[0]
    assert "listening" not in done.stderr
    assert current_revision(database) == NEWER


def test_the_server_upgrades_the_oldest_schema_at_start(fresh):
    """A database as the first release left it: the server brings it to head as it starts,
    and its players log in and find their games."""
    url, database = fresh
    oldest = REVISIONS[0]
    migrate_to(database, oldest)
    built = build(database, oldest)
    srv = start_server(url)
    try:
        assert "bringing the schema up to date" in srv.log_text()
        assert current_revision(database) == HEAD
        castles = built.game("castles")
        with srv.connect() as c:
            assert c.cmd("USER:ana").code == 101
            assert c.cmd(f"PASS:{built.passwords['ana']}").code == 102
            r = c.cmd(f"STAT:P{castles.game_id:07d}")
            assert r.code == 206, r
            fields = r.text.split(":")
            assert fields[1:3] == ["ana", "bob"] and fields[-1] == str(len(castles.moves) + 1)
    finally:
        assert srv.stop() == 0
    check(database, built)


def test_the_server_logs_each_migration_title_on_one_line(fresh):
    """The server's log at start names each migration it runs by its title, whole, on the
    line of that step: a title its docstring wraps over lines reads as one line, not
    with an escaped line break in it."""
    url, _database = fresh
    scripts = {
        s.revision: s for s in ScriptDirectory.from_config(alembic_config()).walk_revisions()
    }
    assert any("\n" in s.doc for s in scripts.values())  # some titles are wrapped
    srv = start_server(url)
    try:
        steps = [line for line in srv.log if "Running upgrade" in line]
    finally:
        assert srv.stop() == 0
    assert len(steps) == len(REVISIONS), srv.log_text()
    for line, revision in zip(steps, REVISIONS, strict=True):
        before = scripts[revision].down_revision or ""
        title = " ".join(scripts[revision].doc.split())
        assert line.endswith(f"Running upgrade {before} -> {revision}, {title}"), line
        assert "\\n" not in line, line
