"""``ajedrez-admin db backup FILE`` and ``db restore FILE`` (docs/operations.md,
"Backups and restore"). How each store copies and replaces its data is the store's
(``Database.backup``, ``Database.restore``); here: the operator's side of it, the
progress on a terminal, and the check that follows a restore."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sqlalchemy.engine import URL

from ajedrez.store.backups import Progress, Refused, ToolMissing
from ajedrez.store.db import Database
from ajedrez.store.urls import redact

from .check import check_database, report
from .common import EXIT_DATABASE, EXIT_REFUSED, AdminError, asks, confirm


def db_backup(db: Database, args: argparse.Namespace) -> None:
    file = Path(args.file).expanduser()
    try:
        what = db.backup(file, _progress())
    except ToolMissing as e:
        raise AdminError(str(e), EXIT_DATABASE) from None
    except Refused as e:
        raise AdminError(str(e), EXIT_REFUSED) from None
    finally:
        _end_progress()
    print(f"backup written to {file}: {what}")


def db_restore(url: URL, args: argparse.Namespace) -> None:
    file = Path(args.file).expanduser()

    def ask(question: str) -> None:
        if asks(args):
            _end_progress()  # the question on a line of its own
            confirm(question)

    try:
        Database.kind(url).restore(url, file, ask, _progress())
    except ToolMissing as e:
        raise AdminError(str(e), EXIT_DATABASE) from None
    except Refused as e:
        raise AdminError(str(e), EXIT_REFUSED) from None
    finally:
        _end_progress()
    print(f"restored {redact(url)} from {file}")
    db = Database(url, pool_size=2, create=False)
    try:
        report(check_database(db, progress=sys.stderr.isatty()))
    finally:
        db.dispose()


_shown = [False]  # a progress line is on the terminal, not yet ended


def _progress() -> Progress | None:
    """On a terminal, each step on one line rewritten in place; elsewhere (a script, a
    log) none: the result alone is printed."""
    if not sys.stderr.isatty():
        return None

    def show(line: str) -> None:
        print(f"\r\x1b[K{line}", end="", file=sys.stderr, flush=True)
        _shown[0] = True

    return show


def _end_progress() -> None:
    if _shown[0]:
        print(file=sys.stderr)
        _shown[0] = False
