"""``ajedrez-admin``: AdmChess, the administrator's command (seed 5.2, docs/operations.md).

Every failure is one line on stderr and a non-zero exit status: 1 for a refused action
(unknown user, duplicate name, no such request, a confirmation not given), 2 for bad
usage, 3 when the database cannot be used. ``--debug`` adds the traceback.

Changes are confirmed on a terminal (``--yes`` skips the question); with standard input
not a terminal, as in scripts, they proceed without one. Every change is recorded in the
audit trail with the operating-system user who ran it (``ajedrez-admin audit``).
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from typing import NoReturn

from sqlalchemy.engine import URL

import ajedrez
from ajedrez.domain.accounts import Accounts
from ajedrez.domain.errors import Failure, StorageError
from ajedrez.domain.export import result_text
from ajedrez.domain.game_admin import GameAdmin, GameListing
from ajedrez.domain.games import Games
from ajedrez.domain.timecontrol import format_duration
from ajedrez.domain.tokens import Tokens
from ajedrez.domain.values import STATUS_FINISHED
from ajedrez.espol import fields as values
from ajedrez.server.settings import SettingsError, config_file, load
from ajedrez.store import audit
from ajedrez.store.db import Database
from ajedrez.store.migrate import NewerDatabase, check_known, is_current
from ajedrez.store.urls import BadURL, default_url, parse_url, redact, sqlite_file

from . import backup, check, espol_import, schema, store_copy
from .common import (
    EXIT_DATABASE,
    EXIT_REFUSED,
    EXIT_USAGE,
    AdminError,
    actor,
    asks,
    confirm,
    count,
    one_line,
    shown,
)

DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"([0-9]{1,6})([smhd])")
# As the client accepts them: P0000012, p12 or 12.
_GAME_ID = re.compile(r"[Pp]?([0-9]{1,7})")
PURGE_DESCRIPTION = (
    "Remove finished games and their moves; nothing else (accounts, active games and "
    "challenges stay). On a terminal it says how many games it will remove and asks first "
    "(--yes: do not ask); with standard input not a terminal it proceeds without asking."
)
EXTEND_DESCRIPTION = (
    "Add DURATION to the bank of the side whose clock runs, in one game or (--all) in "
    "every game whose clock runs, and move its deadline as far. After an outage: run "
    "it with the outage's length while the server's start-up grace period (--flag-grace) "
    "lasts, before any game ends on time (docs/operations.md)."
)
# Existing accounts may be called '-h' or '--yes' (only new names may not start with '-');
# as a bare argument such a name would be read as an option.
NAME_EPILOG = (
    "A user name that starts with '-' goes after '--', which ends the options: "
    "ajedrez-admin users remove -- -h"
)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, like every other error of this command."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"ajedrez-admin: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="ajedrez-admin", description="AdmChess: administer Ajedrez.", epilog=NAME_EPILOG
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    p.add_argument(
        "--config",
        help="the server's settings file, whose database_url is used (default: "
        "$AJEDREZ_CONFIG; see docs/operations.md)",
    )
    p.add_argument(
        "--database-url",
        help="SQLAlchemy URL (default: the settings file's database_url, else as for "
        "ajedrez-server)",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    top = p.add_subparsers(
        dest="area",
        required=True,
        metavar="{db,users,subs,games,import,audit}",
        parser_class=_Parser,
    )

    db = top.add_parser("db", help="the database: schema, backups, checks, copies").add_subparsers(
        dest="action", required=True
    )
    up = db.add_parser("upgrade", help="bring the schema to the newest migration")
    up.add_argument(
        "--create",
        action="store_true",
        help="create the SQLite file (and its directories) if there is none",
    )
    up.set_defaults(created=None)
    down = db.add_parser(
        "downgrade",
        help="take the schema back to an earlier migration (before running an older release)",
    )
    down.add_argument(
        "revision", help="the migration to go back to: 0005, or 0005_clocks_and_leave"
    )
    down.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    down.add_argument(
        "--force",
        action="store_true",
        help="go back even though data kept only by later migrations is lost (without it, "
        "such a downgrade is refused with what it would lose)",
    )
    backup = db.add_parser(
        "backup", help="copy the database to FILE while the server runs (consistent)"
    )
    backup.add_argument("file", help="the backup to write; it must not exist yet")
    restore = db.add_parser(
        "restore", help="replace the database with a backup (only with no server using it)"
    )
    restore.add_argument("file", help="a file written by 'ajedrez-admin db backup'")
    restore.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    copying = db.add_parser(
        "copy",
        help="copy every row into an empty database, SQLite or PostgreSQL (to change stores)",
        description="Copy every row of this database (--database-url) into TARGET, a new "
        "or empty database on either store, whose schema it creates; game numbers go on "
        "after the source's. Stop the server first: moves made during the copy are not in "
        "it. See docs/operations.md, 'Moving to PostgreSQL'.",
    )
    copying.add_argument(
        "target", help="the database URL to copy into: postgresql+psycopg://... or sqlite:///..."
    )
    db.add_parser(
        "check",
        help="check integrity, schema version and every game (exit 1 when a problem is found)",
    )

    name_help = "the account's name (after '--' when it starts with '-')"
    password_help = (
        "read the password from the first line of standard input (what happens anyway "
        "when standard input is not a terminal; on a terminal it is asked for twice)"
    )
    users = top.add_parser("users", help="accounts").add_subparsers(dest="action", required=True)
    add = users.add_parser("add", help="create an active account")
    add.add_argument("name", help="the new account's name: not starting with '-' or '.'")
    add.add_argument("--password-stdin", action="store_true", help=password_help)
    add.add_argument("--comment", default="", help="full name or other note")
    users.add_parser("list", help="all accounts")
    remove = users.add_parser(
        "remove", help="close an account (as its UNSU would)", epilog=NAME_EPILOG
    )
    remove.add_argument("name", help=name_help)
    remove.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    passwd = users.add_parser("passwd", help="set an account's password", epilog=NAME_EPILOG)
    passwd.add_argument("name", help=name_help)
    passwd.add_argument("--password-stdin", action="store_true", help=password_help)
    tokens = users.add_parser(
        "tokens", help="an account's login tokens (FICN): the machines it stays logged in on"
    )
    tokens.add_argument("name", help=name_help)
    revoke = users.add_parser(
        "revoke-tokens",
        help="revoke an account's login tokens (all, or --id): they log no one in any more",
        epilog=NAME_EPILOG,
    )
    revoke.add_argument("name", help=name_help)
    revoke.add_argument("--id", type=int, default=None, help="only this token (from users tokens)")

    subs = top.add_parser("subs", help="subscription requests").add_subparsers(
        dest="action", required=True
    )
    subs.add_parser("list", help="pending requests")
    for verb, text in (("approve", "create the account"), ("reject", "drop the request")):
        subs.add_parser(verb, help=text, epilog=NAME_EPILOG).add_argument("name", help=name_help)

    games = top.add_parser("games", help="games").add_subparsers(dest="action", required=True)
    games.add_parser("list", help="all games")
    purge = games.add_parser(
        "purge", help="remove finished games and their moves", description=PURGE_DESCRIPTION
    )
    purge.add_argument(
        "--older-than",
        metavar="DURATION",
        type=_duration,
        help="only games finished more than DURATION ago: a number and s, m, h or d "
        "(30d, 12h, 90m)",
    )
    purge.add_argument(
        "--dry-run", action="store_true", help="list the games it would remove; remove nothing"
    )
    purge.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    export = games.add_parser("export", help="print a game as PGN")
    export.add_argument("game", help="game id: P0000001, or just 1")
    chat = games.add_parser(
        "chat",
        help="print a game's chat, both channels (recorded in the audit trail)",
        description="Print every message said in a game, the players' (J) and the "
        "observers' (O), oldest first, to handle a report of abuse. Reading is recorded in "
        "the audit trail.",
    )
    chat.add_argument("game", help="game id: P0000001, or just 1")
    extend = games.add_parser(
        "extend",
        help="give time back to the side whose clock runs (after a server outage)",
        description=EXTEND_DESCRIPTION,
    )
    extend.add_argument("game", nargs="?", help="game id: P0000001, or just 1")
    extend.add_argument("duration", type=_duration, help="a number and s, m, h or d (2h, 1d, 90m)")
    extend.add_argument("--all", action="store_true", help="every game whose clock runs")
    extend.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    imports = top.add_parser("import", help="bring data in from other servers").add_subparsers(
        dest="action", required=True
    )
    espol = imports.add_parser(
        "espol",
        help="accounts, games, challenges and subscription requests of a 1995 ESPOL server",
        description="Bring in the accounts (passwords hashed on the way in), subscription "
        "requests, games (replayed; numbers kept) and challenges of a 1995 ESPOL server. Safe "
        "to run again: nothing is imported twice. Exit status 0 even with lines reported, 1 "
        "when PATH is not an ESPOL data directory. See docs/operations.md, 'Importing from a "
        "1995 ESPOL server'.",
    )
    espol.add_argument("path", help="the old server's data directory, or its server.cfg")
    espol.add_argument(
        "--dry-run", action="store_true", help="report what it would import; write nothing"
    )

    trail = top.add_parser("audit", help="changes made with ajedrez-admin, newest last")
    trail.add_argument("--limit", metavar="N", type=_positive, help="only the newest N")
    trail.set_defaults(action="list")
    return p


def _version() -> str:
    try:
        return metadata.version("ajedrez")
    except metadata.PackageNotFoundError:  # run from a source tree never installed
        return ajedrez.__version__


def _duration(text: str) -> int:
    """``30d``, ``12h``, ``90m``, ``45s``: seconds."""
    m = _DURATION.fullmatch(text)
    if m is None:
        raise argparse.ArgumentTypeError(
            f"invalid duration '{values.shown(text)}': a number and s, m, h or d, like 30d"
        )
    return int(m.group(1)) * DURATION_UNITS[m.group(2)]


def _positive(text: str) -> int:
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"not a positive number: '{values.shown(text)}'")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.url_text, args.url_source = None, ""
    try:
        args.url_text, args.url_source = database_url(args)
        url = parse_url(args.url_text, args.url_source)
        key = (args.area, args.action)
        if key in URL_COMMANDS:  # they open (or replace) the database themselves
            URL_COMMANDS[key](url, args)
            return 0
        handler = COMMANDS[key]
        db = _open(url, args)
        try:
            if key not in NEWER_SCHEMA:
                check_known(db)
            if key not in ANY_SCHEMA and not is_current(db):
                raise AdminError(
                    "the database schema is not up to date: run 'ajedrez-admin db upgrade'",
                    EXIT_DATABASE,
                )
            handler(db, args)
        finally:
            db.dispose()
    except AdminError as e:
        return _error(args, str(e), e.status)
    except Failure as e:
        return _error(args, e.reason, EXIT_REFUSED)
    except NewerDatabase as e:
        return _error(args, str(e), EXIT_DATABASE)
    except BadURL as e:
        return _error(args, str(e), EXIT_DATABASE)
    except StorageError as e:
        return _error(args, f"database error: {e}", EXIT_DATABASE)
    except KeyboardInterrupt:
        print(file=sys.stderr)  # ends a prompt's line
        return _error(args, "interrupted", EXIT_REFUSED)
    except Exception as e:
        shown = redact(args.url_text or "")
        return _error(args, f"cannot use the database {shown}: {one_line(e)}", EXIT_DATABASE)
    return 0


def _error(args: argparse.Namespace, message: str, status: int) -> int:
    if args.debug:
        traceback.print_exc()
    print(f"ajedrez-admin: {message}", file=sys.stderr)
    return status


def database_url(args: argparse.Namespace) -> tuple[str, str]:
    """The database URL and where it came from, chosen as the server chooses its own:
    ``--database-url``, else the settings file's ``database_url`` (the file named by
    ``--config``, else ``$AJEDREZ_CONFIG``; read whole, and refused as the server would
    refuse it), else ``$AJEDREZ_DATABASE_URL``, else the default."""
    if args.database_url:
        return args.database_url, "from --database-url"
    path, named_by = config_file(args.config)
    if path is not None:
        try:
            settings = load(path, {})
        except SettingsError as e:
            raise AdminError(f"{e} (the settings file, from {named_by})", EXIT_USAGE) from None
        if settings.database_url:
            return settings.database_url, f"from {path}, named by {named_by}"
    if os.environ.get("AJEDREZ_DATABASE_URL"):
        return os.environ["AJEDREZ_DATABASE_URL"], "from AJEDREZ_DATABASE_URL"
    return default_url(), "the default"


def _open(url: URL, args: argparse.Namespace) -> Database:
    """The database. A missing SQLite file is most often a mistyped path, so only ``db
    upgrade`` creates one, and only with ``--create`` or the operator's yes on a terminal."""
    path = sqlite_file(url)
    if path is None or path.exists():
        return Database(url, pool_size=2, create=False)
    missing = f"no database file at {path} ({args.url_source})"
    if (args.area, args.action) != ("db", "upgrade"):
        raise AdminError(
            f"{missing}: check the URL, or create a database with "
            "'ajedrez-admin db upgrade --create'",
            EXIT_DATABASE,
        )
    if not args.create:
        if not sys.stdin.isatty():
            raise AdminError(f"{missing}: add --create to create a new database", EXIT_DATABASE)
        if not path.parent.is_dir():
            raise AdminError(
                f"{missing}, nor a directory {path.parent}: check the URL, or add --create "
                "to create both",
                EXIT_DATABASE,
            )
        confirm(f"{missing}. Create a new, empty database there?")
    args.created = path
    return Database(url, pool_size=2, create=True)


def _read_password(name: str) -> str:
    """On a terminal, asked for twice without echo; otherwise the first line of stdin."""
    if not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = _ask_secret(f"new password for {name}: ")
        if password:
            _checked(values.password, password)
            if _ask_secret("the same password again: ") != password:
                raise AdminError("the two passwords differ: nothing changed", EXIT_USAGE)
    if not password:
        raise AdminError("no password given", EXIT_USAGE)
    return _checked(values.password, password)


def _ask_secret(prompt: str) -> str:
    try:
        return getpass.getpass(prompt)
    except EOFError:
        print(file=sys.stderr)  # end of input: the error must not share the prompt's line
        return ""


def _checked(parse: Callable[[str], object], value: str) -> str:
    try:
        parse(value)
    except ValueError as e:
        raise AdminError(str(e), EXIT_USAGE) from None
    return value


def _date(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


def _moment(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _span(seconds: int) -> str:
    """Seconds in the largest unit that holds them exactly: ``2h``, ``1d``, ``90m``."""
    return format_duration(seconds * 1000)


def _game_list(ids: list[int]) -> str:
    return ", ".join(values.format_partida(i) for i in ids)


# -- actions -------------------------------------------------------------------------


def users_add(db: Database, args: argparse.Namespace) -> None:
    name = _checked(values.new_usuario, args.name)
    comment = _checked(values.comentario, args.comment)
    accounts = Accounts(db)
    accounts.check_name_free(name)  # refused before the password is asked for, not after
    accounts.add_user(name, _read_password(name), comment, by=actor())
    print(f"user {name} added")


def users_list(db: Database, _args: argparse.Namespace) -> None:
    accounts = Accounts(db)
    rows = accounts.list_users()
    clashes = accounts.name_clashes()
    clashing = {n for names in clashes for n in names}
    print(f"{'NAME':<32}  {'STATUS':<8}  {'ADMITTED':<16}  {'WINS':>5}  COMMENT")
    for u in rows:
        status = "guest" if u.guest else "active" if u.active else "closed"
        # '*' is in no user name: the mark cannot be mistaken for part of one.
        name = shown(u.name) + ("*" if u.name in clashing else "")
        print(
            f"{name:<32}  {status:<8}  {_date(u.admitted_at):<16}  {u.wins:>5}  {shown(u.comment)}"
        )
    if clashes:
        groups = "; ".join(" = ".join(shown(n) for n in names) for names in clashes)
        print(f"* names that differ only in case: {groups}")


def users_remove(db: Database, args: argparse.Namespace) -> None:
    name = _checked(values.usuario, args.name)
    accounts = Accounts(db)
    if asks(args):
        accounts.check_active(name)  # refused before the question, not after it
        confirm(f"close the account of {name}? Its active games are lost, as on resigning.")
    forfeited = accounts.remove_user(name, by=actor())
    if forfeited:
        lost = f"{count(len(forfeited), 'active game')} forfeited: {_game_list(forfeited)}"
    else:
        lost = "no active games"
    print(f"user {name} removed; {lost}")


def users_passwd(db: Database, args: argparse.Namespace) -> None:
    name = _checked(values.usuario, args.name)
    Accounts(db).set_password(name, _read_password(name), by=actor())
    print(f"password of {name} changed")


def users_tokens(db: Database, args: argparse.Namespace) -> None:
    name = _checked(values.usuario, args.name)
    rows = Tokens(db).listed_for(name)
    if not rows:
        print(f"{name} has no login tokens")
        return
    print(f"{'ID':>6}  {'LABEL':<24}  {'MADE':<16}  {'LAST USED':<16}  LAPSES")
    for t in rows:
        print(
            f"{t.id:>6}  {shown(t.label):<24}  {_date(t.created_at):<16}  "
            f"{_date(t.last_used_at):<16}  {_date(t.expires_at)}"
        )


def users_revoke_tokens(db: Database, args: argparse.Namespace) -> None:
    name = _checked(values.usuario, args.name)
    revoked = Tokens(db).revoke_for(name, args.id, by=actor())
    print(f"{count(revoked, 'login token')} of {name} revoked")


def subs_list(db: Database, _args: argparse.Namespace) -> None:
    pending = Accounts(db).list_subscriptions()
    if not pending:
        print("no pending subscriptions")
        return
    print(f"{'NAME':<32}  {'REQUESTED':<16}  COMMENT")
    for s in pending:
        print(f"{shown(s.name):<32}  {_date(s.requested_at):<16}  {shown(s.comment)}")


def subs_approve(db: Database, args: argparse.Namespace) -> None:
    Accounts(db).approve(_checked(values.usuario, args.name), by=actor())
    print(f"subscription of {args.name} approved")


def subs_reject(db: Database, args: argparse.Namespace) -> None:
    Accounts(db).reject(_checked(values.usuario, args.name), by=actor())
    print(f"subscription of {args.name} rejected")


def games_list(db: Database, _args: argparse.Namespace) -> None:
    _print_games(GameAdmin(db).list_all())


def _print_games(rows: list[GameListing]) -> None:
    print(
        f"{'GAME':<8}  {'WHITE':<16}  {'BLACK':<16}  {'STATUS':<8}  {'RESULT':<7}  "
        f"{'PLIES':>5}  {'LAST CHANGE':<16}  {'CLOCK':<10}  {'DEADLINE (UTC)':<19}  END"
    )
    for g in rows:
        status = "active" if g.status == 0 else "finished"
        result = result_text(g.status == STATUS_FINISHED, g.winner)
        deadline = "-" if g.deadline_ms is None else _moment(g.deadline_ms)
        print(
            f"{values.format_partida(g.game_id):<8}  {shown(g.white):<16}  "
            f"{shown(g.black):<16}  {status:<8}  {result:<7}  {g.plies:>5}  "
            f"{_date(g.changed_at):<16}  {g.control:<10}  {deadline:<19}  "
            f"{shown(g.end_reason or '')}"
        )


def games_extend(db: Database, args: argparse.Namespace) -> None:
    if args.all == (args.game is not None):
        raise AdminError("name one game, or --all for every game whose clock runs", EXIT_USAGE)
    game_id = None if args.all else _game_id(args.game)
    what = "every game whose clock runs" if game_id is None else values.format_partida(game_id)
    if asks(args):
        confirm(f"give {_span(args.duration)} to the running clock of {what}?")
    extended = Games(db).time.extend(game_id, args.duration * 1000, by=actor())
    print(f"{count(len(extended), 'game')} extended by {_span(args.duration)}")


def games_purge(db: Database, args: argparse.Namespace) -> None:
    games = GameAdmin(db)
    confirming = asks(args) and not args.dry_run
    before = None if args.older_than is None else int(time.time()) - args.older_than
    if confirming and before is None:
        # The question counts the games finished so far; those that finish while the
        # operator reads it are not part of the answer.
        before = int(time.time()) + 1
    cutoff = "" if args.older_than is None else f" (finished before {_date(before or 0)} UTC)"
    if args.dry_run or confirming:
        ids = games.purge_finished(finished_before=before, dry_run=True)
        if args.dry_run:
            print(f"would remove {count(len(ids), 'finished game')}{cutoff}")
            if ids:
                chosen = set(ids)
                _print_games([g for g in games.list_all() if g.game_id in chosen])
            return
        if not ids:
            print(f"{count(0, 'finished game')} removed{cutoff}")
            return
        confirm(f"remove {count(len(ids), 'finished game')}{cutoff} and their moves?")
    removed = games.purge_finished(finished_before=before, by=actor())
    print(f"{count(len(removed), 'finished game')} removed{cutoff}")


def games_export(db: Database, args: argparse.Namespace) -> None:
    sys.stdout.write(Games(db).pgn(_game_id(args.game)))


def games_chat(db: Database, args: argparse.Namespace) -> None:
    lines = Games(db).live.chat_log(_game_id(args.game), by=actor())
    if not lines:
        print("no messages")
        return
    print(f"{'WHEN (UTC)':<19}  CH  {'PLY':>4}  {'WHO':<16}  TEXT")
    for line in lines:
        who = shown(line.user)
        print(
            f"{_moment(line.at_ms):<19}  {line.channel:<2}  {line.ply:>4}  {who:<16}  "
            f"{shown(line.text)}"
        )


def _game_id(text: str) -> int:
    m = _GAME_ID.fullmatch(text)
    if m is None:
        raise AdminError(
            f"invalid game id '{values.shown(text)}': P0000012, or just 12", EXIT_USAGE
        )
    return int(m.group(1))


def audit_list(db: Database, args: argparse.Namespace) -> None:
    rows = audit.entries(db, args.limit)
    if not rows:
        print("no changes recorded")
        return
    print(f"{'WHEN (UTC)':<16}  {'WHO':<16}  {'ACTION':<12}  {'TARGET':<16}  DETAIL")
    for e in rows:
        print(
            f"{_date(e.at):<16}  {shown(e.actor):<16}  {shown(e.action):<12}  "
            f"{shown(e.target):<16}  {shown(e.detail)}"
        )


COMMANDS: dict[tuple[str, str], Callable[[Database, argparse.Namespace], None]] = {
    ("db", "upgrade"): schema.db_upgrade,
    ("users", "add"): users_add,
    ("users", "list"): users_list,
    ("users", "remove"): users_remove,
    ("users", "passwd"): users_passwd,
    ("users", "tokens"): users_tokens,
    ("users", "revoke-tokens"): users_revoke_tokens,
    ("subs", "list"): subs_list,
    ("subs", "approve"): subs_approve,
    ("subs", "reject"): subs_reject,
    ("games", "list"): games_list,
    ("games", "purge"): games_purge,
    ("games", "export"): games_export,
    ("games", "chat"): games_chat,
    ("games", "extend"): games_extend,
    ("audit", "list"): audit_list,
    ("db", "downgrade"): schema.db_downgrade,
    ("db", "backup"): backup.db_backup,
    ("db", "check"): check.db_check,
    ("db", "copy"): store_copy.db_copy,
    ("import", "espol"): espol_import.import_espol,
}
# Commands that work on a database whatever its schema's version.
ANY_SCHEMA = {("db", "upgrade"), ("db", "downgrade"), ("db", "backup"), ("db", "check")}
# Commands that work on a database a newer release upgraded (the others refuse it).
NEWER_SCHEMA = {("db", "backup")}
# Commands given the URL instead of an open database.
URL_COMMANDS: dict[tuple[str, str], Callable[[URL, argparse.Namespace], None]] = {
    ("db", "restore"): backup.db_restore,
}


if __name__ == "__main__":
    sys.exit(main())
