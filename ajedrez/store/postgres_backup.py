"""PostgreSQL's backup and restore (``PostgresDatabase.backup`` and ``.restore``), through
PostgreSQL's own programs.

Backup: ``pg_dump --format=custom`` of the schema the store uses (``current_schema()``,
``public`` unless the URL's ``options`` set a search path). pg_dump reads in one
snapshot (a REPEATABLE READ transaction) and blocks no writer.

Restore: ``pg_restore --list`` tells a dump from anything else and names the schema it
holds, which must be the one the database uses; ``pg_restore --file`` then turns the
whole dump into SQL in a private temporary directory, which reads every byte of it (a
truncated dump fails here, before anything changed); then, refused while any other
session uses the database, ``psql --single-transaction`` drops the schema and runs the
SQL: one transaction, so a restore that fails changes nothing.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from sqlalchemy import Engine, text
from sqlalchemy.engine import URL

from ajedrez.store.backups import (
    Confirm,
    Progress,
    Refused,
    first_error,
    libpq_target,
    program,
    readable,
    run,
    written,
)

# A line of ``pg_restore --list``: "3343; 0 29493 TABLE DATA public games postgres".
_TOC_VERSION_TABLE = re.compile(r"^\d+; \d+ \d+ TABLE DATA (\S+) alembic_version ", re.M)
_TOC_GAMES = re.compile(r"^\d+; \d+ \d+ TABLE DATA (\S+) games ", re.M)

_SESSIONS = text(
    "SELECT coalesce(nullif(application_name, ''), 'unnamed client') AS app, "
    "coalesce(host(client_addr), 'local socket') AS addr, count(*) AS n "
    "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
    "AND backend_type = 'client backend' GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2"
)


def backup(engine: Engine, url: URL, file: Path, progress: Progress | None) -> str:
    conninfo, password = libpq_target(url)
    schema = _schema(engine)

    def dump_to(target: Path) -> list[str]:
        dbname = f"--dbname={conninfo}"
        return ["pg_dump", "--format=custom", f"--schema={schema}", f"--file={target}", dbname]

    pg_dump = program("pg_dump", dump_to(file))
    with written(file) as partial:
        command = [pg_dump, *dump_to(partial)[1:]]
        if progress is not None:
            command.append("--verbose")
        done = run(command, password, progress)
        if done.returncode != 0:
            raise Refused(f"pg_dump failed: {first_error(done.stderr)}")
    return f"schema {schema}, {file.stat().st_size:,} bytes"


def restore(
    engine: Engine, url: URL, file: Path, confirm: Confirm, progress: Progress | None
) -> None:
    """``engine`` on the database to restore into; disposed of before the restore, so
    that its connections are not among the sessions that refuse it."""
    conninfo, password = libpq_target(url)
    readable(file)
    by_hand = [
        "pg_restore",
        "--clean",
        "--if-exists",
        "--no-owner",
        "--single-transaction",
        f"--dbname={conninfo}",
        str(file),
    ]
    pg_restore = program("pg_restore", by_hand)
    psql = program("psql", by_hand)
    listed = run([pg_restore, "--list", str(file)], None)
    not_backup = f"{file} is not a backup of an Ajedrez PostgreSQL database"
    if listed.returncode != 0:
        raise Refused(f"{not_backup}: {first_error(listed.stderr)}")
    version_table = _TOC_VERSION_TABLE.search(listed.stdout)
    games = _TOC_GAMES.search(listed.stdout)
    if version_table is None or games is None or version_table[1] != games[1]:
        raise Refused(f"{not_backup}: it has no Ajedrez tables")
    schema = version_table[1]
    try:
        used = _schema(engine)
        if used != schema:
            raise Refused(
                f"{file} holds the schema {schema}, and this database uses {used}: restore "
                "into a database whose search path is that schema"
            )
        sessions = _sessions(engine)
    finally:
        engine.dispose()
    if sessions:
        raise Refused(f"the database is in use ({sessions}): stop every server first")
    with tempfile.TemporaryDirectory(prefix="ajedrez-restore-") as work:
        sql = Path(work) / "restore.sql"
        verbose = [] if progress is None else ["--verbose"]
        converted = run(
            [pg_restore, *verbose, "--no-owner", "--no-privileges", f"--file={sql}", str(file)],
            None,
            progress,
        )
        if converted.returncode != 0:
            raise Refused(f"{file} is not a complete backup: {first_error(converted.stderr)}")
        confirm(
            f"replace the schema {schema} of this database with the backup {file}? Everything "
            "written to it since that backup is lost."
        )
        done = run(
            [
                psql,
                "--no-psqlrc",
                "--quiet",
                "--single-transaction",
                "--set=ON_ERROR_STOP=1",
                f"--dbname={conninfo}",
                f"--command=DROP SCHEMA IF EXISTS {_quoted(schema)} CASCADE",
                f"--file={sql}",
            ],
            password,
        )
        if done.returncode != 0:
            raise Refused(f"the restore failed, nothing was changed: {first_error(done.stderr)}")


def _schema(engine: Engine) -> str:
    with engine.connect() as conn:
        schema = conn.execute(text("SELECT current_schema()")).scalar_one_or_none()
    if schema is None:
        raise Refused("the database's search path names no schema that exists")
    return str(schema)


def _sessions(engine: Engine) -> str:
    """The other sessions on the database, by program and address: '' when none."""
    with engine.connect() as conn:
        rows = conn.execute(_SESSIONS).all()
    return ", ".join(f"{r.app} from {r.addr}: {r.n}" for r in rows)


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
