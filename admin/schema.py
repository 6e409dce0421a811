"""``ajedrez-admin db upgrade`` and ``db downgrade``: bring the schema to this release's
newest migration, or take it back to an earlier one so that an older release can run on
the database (docs/operations.md, "Upgrading").

A migration's ``downgrade()`` drops what the migration added. Where that is something a
player or the operator made (a clock, a chat message, the audit trail), the command
counts it first and refuses unless ``--force``: the message names what would be lost.
What can be worked out again from the rest is not counted (``LOSSES``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import insert, inspect, text

from ajedrez.domain.accounts import Accounts
from ajedrez.store.db import Database
from ajedrez.store.migrate import alembic_config, check_known, downgrade, revisions, upgrade
from ajedrez.store.models import AdminAudit

from .common import EXIT_REFUSED, EXIT_USAGE, AdminError, actor, asks, confirm, shown


@dataclass(frozen=True)
class Loss:
    """Rows whose data a migration's downgrade drops: ``query`` counts them."""

    query: str
    one: str
    many: str


# By the revision whose downgrade drops them. Every revision but the first has an entry,
# empty when its downgrade drops only what is worked out again (tests/store/
# test_upgrades.py checks), so each new migration says what going back over it loses.
LOSSES: dict[str, tuple[Loss, ...]] = {
    # base_ply/base_fen: after an upgrade every game starts again from its first move's
    # position, which is always correct.
    "0002": (),
    "0003": (
        Loss("SELECT count(*) FROM admin_audit", "audit trail entry", "audit trail entries"),
        Loss(
            "SELECT count(*) FROM removals",
            "removal kept for clients' BAJA",
            "removals kept for clients' BAJA",
        ),
    ),
    # name_key is worked out from the name again.
    "0004": (
        Loss(
            "SELECT count(*) FROM subscriptions WHERE requested_from <> ''",
            "subscription request's address",
            "subscription requests' addresses",
        ),
    ),
    "0005": (
        Loss(
            "SELECT count(*) FROM games WHERE tc_initial_ms IS NOT NULL",
            "game with a clock",
            "games with a clock",
        ),
        Loss(
            "SELECT count(*) FROM game_requests WHERE tc_initial_ms IS NOT NULL",
            "challenge with a clock",
            "challenges with a clock",
        ),
        Loss(
            "SELECT count(*) FROM users"
            " WHERE leave_until_ms IS NOT NULL OR leave_left_ms IS NOT NULL",
            "account's leave",
            "accounts' leave",
        ),
    ),
    "0006": (
        Loss(
            "SELECT count(*) FROM events", "event of the live stream", "events of the live stream"
        ),
        Loss("SELECT count(*) FROM observers", "observer", "observers"),
        Loss(
            "SELECT count(*) FROM games WHERE private = true",
            "private game (observers could watch it)",
            "private games (observers could watch them)",
        ),
        Loss(
            "SELECT count(*) FROM game_requests WHERE private = true",
            "private challenge",
            "private challenges",
        ),
    ),
    "0007": (
        Loss("SELECT count(*) FROM chat_messages", "chat message", "chat messages"),
        Loss("SELECT count(*) FROM seeks", "seek", "seeks"),
        Loss("SELECT count(*) FROM takebacks", "takeback request", "takeback requests"),
    ),
    # warn_at_ms: each running clock gets its next warning on its next turn after an
    # upgrade.
    "0008": (),
    # Without them, a rerun of the import over the same files brings back what players
    # did away with since (a challenge declined, a request rejected).
    "0009": (
        Loss(
            "SELECT count(*) FROM imported_rows",
            "record of a row 'import espol' wrote",
            "records of rows 'import espol' wrote",
        ),
    ),
    # events' data is written back as the stream's text, every row exactly as it was.
    "0010": (),
    # A guest's row stays, with its games, as a closed account: only the mark is lost.
    "0011": (
        Loss(
            "SELECT count(*) FROM users WHERE guest = true",
            "guest (kept as a closed account)",
            "guests (kept as closed accounts)",
        ),
    ),
    # white_offer_ply/black_offer_ply: the older release does not limit renewed offers.
    "0012": (),
    "0013": (Loss("SELECT count(*) FROM blocks", "block", "blocks"),),
    # Which sessions each process serves: gone with the connections, not data.
    "0014": (),
    # Their users log in with their passwords again.
    "0015": (Loss("SELECT count(*) FROM tokens", "login token", "login tokens"),),
}


def db_upgrade(db: Database, args: argparse.Namespace) -> None:
    upgrade(db)
    if args.created is not None:
        print(f"new database created at {args.created}")
    print("database schema is up to date")
    clashes = Accounts(db).name_clashes()
    if clashes:
        print(
            "accounts whose names differ only in case (all keep working; the first holds the name):"
        )
        for names in clashes:
            print("  " + ", ".join(shown(n) for n in names))


def db_downgrade(db: Database, args: argparse.Namespace) -> None:
    known = revisions()
    target = _revision(args.revision)
    current = check_known(db)
    if current is None:
        raise AdminError("the database has no schema yet: there is nothing to take back")
    if known.index(target) >= known.index(current):
        raise AdminError(
            f"the database is at {current}, not later than {target}: 'db downgrade' only goes "
            "back ('db upgrade' goes forward)"
        )
    undone = known[known.index(target) + 1 : known.index(current) + 1]
    lost = _losses(db, undone)
    if lost and not args.force:
        raise AdminError(
            f"going back to {target} would lose {lost}: nothing changed; add --force to lose them",
            EXIT_REFUSED,
        )
    if asks(args):
        losing = f", losing {lost}" if lost else ""
        confirm(
            f"take the database schema back from {current} to {target}{losing}? Only a "
            f"release whose newest migration is {target} should use it then."
        )
    downgrade(db, target)
    audited = inspect(db.engine).has_table(AdminAudit.__tablename__)
    if audited:
        with db.engine.begin() as conn:
            conn.execute(
                insert(AdminAudit).values(
                    at=int(time.time()),
                    actor=actor()[:64],
                    action="db downgrade",
                    target=target,
                    detail=f"from {current}" + (f"; lost {lost}" if lost else ""),
                )
            )
    print(f"database schema taken back from {current} to {target}")
    if lost:
        print(f"lost: {lost}")
    if not audited:
        print(f"not in the audit trail: the schema of {target} has none")
    print(
        f"run the release whose newest migration is {target}; this release's server and "
        "'ajedrez-admin db upgrade' would bring the schema forward again"
    )


def _revision(text_given: str) -> str:
    """``0005`` or ``0005_clocks_and_leave`` (the migration's file name): its revision."""
    scripts = ScriptDirectory.from_config(alembic_config())
    for script in scripts.walk_revisions():
        if text_given in (script.revision, Path(script.path).stem):
            return script.revision
    raise AdminError(
        f"no migration '{shown(text_given)}': one of {', '.join(revisions())} "
        "(or its file name, as 0005_clocks_and_leave)",
        EXIT_USAGE,
    )


def _losses(db: Database, undone: list[str]) -> str:
    """What the downgrades of ``undone`` would drop, newest migration first, as one
    phrase ('' when nothing)."""
    parts: list[str] = []
    with db.read() as conn:
        for revision in reversed(undone):
            found = []
            for loss in LOSSES.get(revision, ()):
                n = int(conn.scalar(text(loss.query)) or 0)
                if n:
                    found.append(f"{n} {loss.one if n == 1 else loss.many}")
            if found:
                parts.append(f"{', '.join(found)} (migration {revision})")
    return "; ".join(parts)
