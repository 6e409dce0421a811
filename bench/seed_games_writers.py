"""The bulk writers of ``bench.seed_games``, one per database, behind one protocol.

Users, games and two staging tables (every template's moves, and a link per game: game,
template, first stamp, step) are written in bulk; each chunk of games is then expanded
into ``moves`` by one ``INSERT ... SELECT`` inside the database, so no Python runs per
move. The writer ends with ``ANALYZE`` (PostgreSQL: ``VACUUM (ANALYZE)``, so hint bits
and the visibility map are set as in a long-lived database) and reports the sizes.

SQLite goes through the ``sqlite3`` module: ``journal_mode=OFF``, ``synchronous=OFF`` and
a large cache only while seeding (a crash leaves a broken file: seed a fresh one), WAL and
``synchronous=FULL`` restored after. PostgreSQL goes through psycopg 3: ``COPY FROM
STDIN`` for users, games and the staging tables, ``session_replication_role = replica``
(superuser only; skips the per-row foreign-key triggers, the data is consistent by
construction), and the ``users``/``games`` id sequences set past the explicit ids.
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy import make_url

from bench.report import log
from bench.seed_games_generator import (
    GAME_COLUMNS,
    USER_COLUMNS,
    GameRow,
    Link,
    TemplateRow,
)

EXPAND_SELECT = (
    "SELECT g.game_id, t.ply, t.jugada, 0, t.posicion, t.promocion, t.san, "
    "g.c0 + t.ply * g.step "
    "FROM seed_links g JOIN seed_template_moves t ON t.template_id = g.template_id "
    "WHERE g.game_id BETWEEN {lo} AND {hi} ORDER BY g.game_id, t.ply"
)
MOVE_COLUMNS = "game_id, ply, jugada, reverso, posicion, promocion, san, created_at"


class Writer(Protocol):
    def check_empty(self) -> None: ...
    def begin(self) -> None: ...
    def users(self, rows: list[tuple[Any, ...]]) -> None: ...
    def templates(self, rows: Iterator[TemplateRow]) -> None: ...
    def games(self, rows: list[GameRow], links: list[Link]) -> None: ...
    def expand_moves(self, lo: int, hi: int) -> int: ...
    def commit(self) -> None: ...
    def wins(self, wins: Counter[int]) -> None: ...
    def finish(self, analyze: bool) -> dict[str, float]: ...
    def size(self) -> dict[str, int]: ...
    def close(self) -> None: ...


def open_writer(database_url: str) -> Writer:
    url = make_url(database_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise SystemExit("SQLite needs a file")
        return SqliteWriter(url.database)
    if backend == "postgresql":
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return PostgresWriter(dsn)
    raise SystemExit(f"unsupported database {backend}")


def _refuse_if_seeded(count: int) -> None:
    if count:
        raise SystemExit("the database already holds users or games: seed a fresh one")


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


class SqliteWriter:
    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.cur = self.conn.cursor()

    def check_empty(self) -> None:
        _refuse_if_seeded(self.cur.execute("SELECT count(*) FROM users").fetchone()[0])
        _refuse_if_seeded(self.cur.execute("SELECT count(*) FROM games").fetchone()[0])

    def begin(self) -> None:
        for pragma in (
            "PRAGMA journal_mode = OFF",
            "PRAGMA synchronous = OFF",
            "PRAGMA cache_size = -1048576",  # 1 GiB
            "PRAGMA temp_store = MEMORY",
            "PRAGMA foreign_keys = OFF",
        ):
            self.cur.execute(pragma).fetchall()
        self.cur.execute(
            "CREATE TEMP TABLE seed_template_moves (template_id INTEGER, ply INTEGER, "
            "jugada TEXT, posicion TEXT, promocion INTEGER, san TEXT, "
            "PRIMARY KEY (template_id, ply)) WITHOUT ROWID"
        )
        self.cur.execute(
            "CREATE TEMP TABLE seed_links (game_id INTEGER PRIMARY KEY, template_id INTEGER, "
            "c0 INTEGER, step INTEGER)"
        )
        self.cur.execute("BEGIN")

    def users(self, rows: list[tuple[Any, ...]]) -> None:
        self.cur.executemany(
            f"INSERT INTO users ({', '.join(USER_COLUMNS)}) "
            f"VALUES ({_placeholders(len(USER_COLUMNS))})",
            rows,
        )

    def templates(self, rows: Iterator[TemplateRow]) -> None:
        self.cur.executemany("INSERT INTO seed_template_moves VALUES (?, ?, ?, ?, ?, ?)", rows)

    def games(self, rows: list[GameRow], links: list[Link]) -> None:
        self.cur.executemany(
            f"INSERT INTO games ({', '.join(GAME_COLUMNS)}) "
            f"VALUES ({_placeholders(len(GAME_COLUMNS))})",
            rows,
        )
        self.cur.executemany("INSERT INTO seed_links VALUES (?, ?, ?, ?)", links)

    def expand_moves(self, lo: int, hi: int) -> int:
        self.cur.execute(
            f"INSERT INTO moves ({MOVE_COLUMNS}) " + EXPAND_SELECT.format(lo=int(lo), hi=int(hi))
        )
        return self.cur.rowcount

    def commit(self) -> None:
        self.cur.execute("COMMIT")
        self.cur.execute("BEGIN")

    def wins(self, wins: Counter[int]) -> None:
        self.cur.executemany(
            "UPDATE users SET wins = ? WHERE id = ?", [(n, uid) for uid, n in wins.items()]
        )

    def finish(self, analyze: bool) -> dict[str, float]:
        self.cur.execute("COMMIT")
        self.cur.execute("DROP TABLE seed_links")
        self.cur.execute("DROP TABLE seed_template_moves")
        timings: dict[str, float] = {}
        if analyze:
            start = time.perf_counter()
            self.cur.execute("ANALYZE")
            timings["analyze_s"] = time.perf_counter() - start
        # Back to what the server expects; journal_mode is stored in the file.
        for pragma in (
            "PRAGMA journal_mode = WAL",
            "PRAGMA synchronous = FULL",
        ):
            self.cur.execute(pragma).fetchall()
        return timings

    def size(self) -> dict[str, int]:
        out = {"file_bytes": self.path.stat().st_size}
        for table in ("games", "moves"):
            out[f"{table}_rows"] = self.cur.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0]
        return out

    def close(self) -> None:
        self.conn.close()


class PostgresWriter:
    def __init__(self, dsn: str) -> None:
        # Imported here: SQLite runs need no PostgreSQL driver installed.
        import psycopg

        self.psycopg = psycopg
        self.conn = psycopg.connect(dsn)
        self.cur = self.conn.cursor()

    def check_empty(self) -> None:
        _refuse_if_seeded(self._one("SELECT count(*) FROM users"))
        _refuse_if_seeded(self._one("SELECT count(*) FROM games"))

    def _one(self, sql: str) -> Any:
        row = self.cur.execute(sql).fetchone()
        assert row is not None
        return row[0]

    def begin(self) -> None:
        try:
            self.cur.execute("SET session_replication_role = replica")
        except self.psycopg.errors.InsufficientPrivilege:
            self.conn.rollback()
            log("not a superuser: foreign-key triggers stay on (slower)")
        self.cur.execute("SET synchronous_commit = off")
        self.cur.execute(
            "CREATE TEMP TABLE seed_template_moves (template_id integer, ply integer, "
            "jugada text, posicion text, promocion smallint, san text, "
            "PRIMARY KEY (template_id, ply))"
        )
        self.cur.execute(
            "CREATE TEMP TABLE seed_links (game_id integer PRIMARY KEY, template_id integer, "
            "c0 bigint, step bigint)"
        )

    def _copy(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        with self.cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def users(self, rows: list[tuple[Any, ...]]) -> None:
        self._copy("users", USER_COLUMNS, rows)

    def templates(self, rows: Iterator[TemplateRow]) -> None:
        cols = ("template_id", "ply", "jugada", "posicion", "promocion", "san")
        self._copy("seed_template_moves", cols, rows)
        self.cur.execute("ANALYZE seed_template_moves")

    def games(self, rows: list[GameRow], links: list[Link]) -> None:
        self._copy("games", GAME_COLUMNS, rows)
        self._copy("seed_links", ("game_id", "template_id", "c0", "step"), links)

    def expand_moves(self, lo: int, hi: int) -> int:
        self.cur.execute(
            f"INSERT INTO moves ({MOVE_COLUMNS}) " + EXPAND_SELECT.format(lo=int(lo), hi=int(hi))
        )
        return self.cur.rowcount

    def commit(self) -> None:
        self.conn.commit()

    def wins(self, wins: Counter[int]) -> None:
        self.cur.executemany(
            "UPDATE users SET wins = %s WHERE id = %s", [(n, uid) for uid, n in wins.items()]
        )

    def finish(self, analyze: bool) -> dict[str, float]:
        for table in ("users", "games"):
            self.cur.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT max(id) FROM {table}))"
            )
        self.cur.execute("DROP TABLE seed_links")
        self.cur.execute("DROP TABLE seed_template_moves")
        self.cur.execute("RESET session_replication_role")
        self.conn.commit()
        timings: dict[str, float] = {}
        if analyze:
            start = time.perf_counter()
            self.conn.autocommit = True
            self.cur.execute("VACUUM (ANALYZE)")
            self.conn.autocommit = False
            timings["analyze_s"] = time.perf_counter() - start
        return timings

    def size(self) -> dict[str, int]:
        out: dict[str, int] = {
            "database_bytes": self._one("SELECT pg_database_size(current_database())")
        }
        for table in ("games", "moves"):
            out[f"{table}_bytes"] = self._one(f"SELECT pg_total_relation_size('{table}')")
            out[f"{table}_rows"] = self._one(f"SELECT count(*) FROM {table}")
        return out

    def close(self) -> None:
        self.conn.close()
