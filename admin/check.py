"""``ajedrez-admin db check``: is this database sound? (docs/operations.md, "Checking a
database")

Three checks, each a line of the summary: the database's own check of its files
(SQLite's ``integrity_check``; nothing on PostgreSQL), the schema at this release's newest
migration, and an audit of what is stored: every game replays by the rules to its stored
position and its result agrees with it (``domain/gamecheck.py``), and no row names a
game or a user that does not exist. Each kind of problem is listed with its count and
its first examples; the last line is ``ok`` or the number of problems, and the exit
status 0 or 1 (3 when the database cannot be read). The audit reads one snapshot, so it
runs beside a live server.
"""

from __future__ import annotations

import argparse
import stat
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ajedrez.domain.gamecheck import check_game
from ajedrez.domain.values import game_name as format_partida
from ajedrez.store import check_queries
from ajedrez.store.db import Database
from ajedrez.store.migrate import current_revision, head_revision
from ajedrez.store.urls import sqlite_file

from .common import EXIT_REFUSED, AdminError, count

EXAMPLES = 5  # of each kind of problem
PROGRESS_EVERY = 0.5  # seconds between two progress lines on a terminal


@dataclass
class Findings:
    """Problems by kind: how many, and the first few, in words."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # the summary of what was checked
    # What an operator should fix that is no fault of the data: shown, not counted.
    warnings: list[str] = field(default_factory=list)

    def add(self, kind: str, example: str, n: int = 1) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + n
        shown = self.examples.setdefault(kind, [])
        if len(shown) < EXAMPLES:
            shown.append(example)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def db_check(db: Database, args: argparse.Namespace) -> None:
    found = check_database(db, progress=sys.stderr.isatty())
    report(found)


def report(found: Findings) -> None:
    """Print the summary; AdminError (status 1) when anything was found."""
    for line in found.lines:
        print(line)
    for warning in found.warnings:
        print(f"warning: {warning}")
    for kind, n in found.counts.items():
        print(f"problem: {kind}: {n}")
        for example in found.examples[kind]:
            print(f"  {example}")
    if not found.total:
        print("ok")
        return
    print(count(found.total, "problem"))
    raise AdminError(f"the database has {count(found.total, 'problem')}", EXIT_REFUSED)


def check_database(db: Database, progress: bool = False) -> Findings:
    found = Findings()
    path = sqlite_file(db.url)
    if path is not None:
        found.warnings += readable_by_others(path)
    integrity = db.integrity_problems()
    for text in integrity:
        found.add("integrity", text)
    found.lines.append(f"integrity: {'ok' if not integrity else 'damaged'}")
    current, head = current_revision(db), head_revision()
    if current != head:
        found.add(
            "schema",
            f"at {current or 'no schema'}, this release's newest is {head}: "
            "run 'ajedrez-admin db upgrade'",
        )
        found.lines.append(
            f"schema: {current or 'none'}, not {head}: games and references not checked"
        )
        return found
    found.lines.append(f"schema: {head} (the newest)")
    with db.snapshot() as conn:
        total = check_queries.count_games(conn)
        games = moves = 0
        shown_at = time.monotonic()
        for game, game_moves in check_queries.games_with_moves(conn):
            for p in check_game(game, game_moves):
                found.add(p.kind, f"{format_partida(p.game_id)}: {p.detail}")
            games += 1
            moves += len(game_moves)
            if progress and time.monotonic() - shown_at >= PROGRESS_EVERY:
                print(f"\r{games:,} of {total:,} games checked", end="", file=sys.stderr)
                shown_at = time.monotonic()
        if progress and games:
            print(f"\r{games:,} of {total:,} games checked", file=sys.stderr)
        found.lines.append(f"games: {games:,} replayed ({moves:,} moves)")
        orphans = check_queries.orphans(conn, EXAMPLES)
    for o in orphans:
        ids = ", ".join(str(i) for i in o.missing)
        found.add(
            "rows naming a missing game or user",
            f"{o.rows} row(s) of {o.table} with a {o.column} not in {o.parent}: {ids}",
            o.rows,
        )
    found.lines.append(f"references: {'ok' if not orphans else 'broken'}")
    return found


def readable_by_others(path: Path) -> list[str]:
    """The files of a SQLite database that users other than its owner may read or write:
    they hold password hashes. The store makes new databases its owner's alone; a file
    copied by hand, or made by another program, may not be. SQLite gives a new ``-wal`` and
    ``-shm`` the main file's mode, so fixing all three holds."""
    found = []
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            mode = stat.S_IMODE(p.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            found.append((p, mode))
    if not found:
        return []
    shown = ", ".join(f"{p} (mode {mode:04o})" for p, mode in found)
    return [
        f"{shown}: open to users other than its owner, and the database holds password "
        f"hashes; make it the owner's alone: chmod 600 {' '.join(str(p) for p, _ in found)}"
    ]
