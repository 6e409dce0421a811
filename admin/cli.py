"""``ajedrez-admin``: AdmChess, the administrator's command (seed 5.2, contract section 5).

Every failure is one line on stderr and a non-zero exit status: 1 for a refused action
(unknown user, duplicate name, no such request), 2 for bad usage, 3 when the database
cannot be used. ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NoReturn

from ajedrez import values
from ajedrez.errors import Failure, StorageError
from ajedrez.service import Accounts, Games
from ajedrez.storage.db import Database, redact, resolve_url
from ajedrez.storage.migrate import is_current, upgrade

EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_DATABASE = 3
WINNERS = {0: "*", 1: "1-0", 2: "0-1", 3: "1/2-1/2"}


class AdminError(Exception):
    def __init__(self, message: str, status: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr, like every other error of this command."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"ajedrez-admin: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ajedrez-admin", description="AdmChess: administer Ajedrez.")
    p.add_argument("--database-url", help="SQLAlchemy URL (default as for ajedrez-server)")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    top = p.add_subparsers(
        dest="area", required=True, metavar="{db,users,subs,games}", parser_class=_Parser
    )

    db = top.add_parser("db", help="the database schema").add_subparsers(
        dest="action", required=True
    )
    db.add_parser("upgrade", help="bring the schema to the newest migration")

    users = top.add_parser("users", help="accounts").add_subparsers(dest="action", required=True)
    add = users.add_parser("add", help="create an active account")
    add.add_argument("name")
    add.add_argument(
        "--password-stdin",
        action="store_true",
        required=True,
        help="read the password from the first line of standard input",
    )
    add.add_argument("--comment", default="", help="full name or other note")
    users.add_parser("list", help="all accounts")
    remove = users.add_parser("remove", help="close an account (as its UNSU would)")
    remove.add_argument("name")
    passwd = users.add_parser("passwd", help="set an account's password")
    passwd.add_argument("name")
    passwd.add_argument("--password-stdin", action="store_true", required=True)

    subs = top.add_parser("subs", help="subscription requests").add_subparsers(
        dest="action", required=True
    )
    subs.add_parser("list", help="pending requests")
    for verb, text in (("approve", "create the account"), ("reject", "drop the request")):
        subs.add_parser(verb, help=text).add_argument("name")

    games = top.add_parser("games", help="games").add_subparsers(dest="action", required=True)
    games.add_parser("list", help="all games")
    games.add_parser("purge", help="remove finished games and their moves")
    export = games.add_parser("export", help="print a game as PGN")
    export.add_argument("game", help="game id, e.g. P0000001")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        handler = COMMANDS[(args.area, args.action)]
        upgrading = (args.area, args.action) == ("db", "upgrade")
        db = Database(resolve_url(args.database_url), pool_size=2, create=upgrading)
        try:
            if not upgrading and not is_current(db):
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
    except StorageError as e:
        hint = "" if "file" not in str(e) else " (start the server or run 'db upgrade' first)"
        return _error(args, f"database error: {e}{hint}", EXIT_DATABASE)
    except Exception as e:
        url = redact(resolve_url(args.database_url))
        return _error(args, f"cannot use the database {url}: {_one_line(e)}", EXIT_DATABASE)
    return 0


def _error(args: argparse.Namespace, message: str, status: int) -> int:
    if args.debug:
        traceback.print_exc()
    print(f"ajedrez-admin: {message}", file=sys.stderr)
    return status


def _one_line(e: BaseException) -> str:
    text = str(getattr(e, "orig", None) or e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _read_password() -> str:
    line = sys.stdin.readline()
    password = line.rstrip("\r\n")
    return _checked(values.password, password)


def _checked(parse: Callable[[str], object], value: str) -> str:
    try:
        parse(value)
    except ValueError as e:
        raise AdminError(str(e), EXIT_USAGE) from None
    return value


def _date(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


# -- actions -------------------------------------------------------------------------


def db_upgrade(db: Database, _args: argparse.Namespace) -> None:
    upgrade(db)
    print("database schema is up to date")


def users_add(db: Database, args: argparse.Namespace) -> None:
    name = _checked(values.usuario, args.name)
    comment = _checked(values.comentario, args.comment)
    Accounts(db).add_user(name, _read_password(), comment)
    print(f"user {name} added")


def users_list(db: Database, _args: argparse.Namespace) -> None:
    rows = Accounts(db).list_users()
    print(f"{'NAME':<32}  {'STATUS':<8}  {'ADMITTED':<16}  {'WINS':>5}  COMMENT")
    for u in rows:
        status = "active" if u.active else "closed"
        print(f"{u.name:<32}  {status:<8}  {_date(u.admitted_at):<16}  {u.wins:>5}  {u.comment}")


def users_remove(db: Database, args: argparse.Namespace) -> None:
    Accounts(db).remove_user(_checked(values.usuario, args.name))
    print(f"user {args.name} removed; active games forfeited")


def users_passwd(db: Database, args: argparse.Namespace) -> None:
    Accounts(db).set_password(_checked(values.usuario, args.name), _read_password())
    print(f"password of {args.name} changed")


def subs_list(db: Database, _args: argparse.Namespace) -> None:
    print(f"{'NAME':<32}  {'REQUESTED':<16}  COMMENT")
    for s in Accounts(db).list_subscriptions():
        print(f"{s.name:<32}  {_date(s.requested_at):<16}  {s.comment}")


def subs_approve(db: Database, args: argparse.Namespace) -> None:
    Accounts(db).approve(_checked(values.usuario, args.name))
    print(f"subscription of {args.name} approved")


def subs_reject(db: Database, args: argparse.Namespace) -> None:
    Accounts(db).reject(_checked(values.usuario, args.name))
    print(f"subscription of {args.name} rejected")


def games_list(db: Database, _args: argparse.Namespace) -> None:
    print(
        f"{'GAME':<8}  {'WHITE':<16}  {'BLACK':<16}  {'STATUS':<8}  {'RESULT':<7}  "
        f"{'PLIES':>5}  {'LAST CHANGE':<16}  END"
    )
    for g in Games(db).list_all():
        status = "active" if g.status == 0 else "finished"
        result = WINNERS[g.winner] if g.status else "*"
        print(
            f"{values.format_partida(g.game_id):<8}  {g.white:<16}  {g.black:<16}  "
            f"{status:<8}  {result:<7}  {g.plies:>5}  {_date(g.changed_at):<16}  "
            f"{g.end_reason or ''}"
        )


def games_purge(db: Database, _args: argparse.Namespace) -> None:
    count = len(Games(db).purge_finished())
    print(f"{count} finished game(s) removed")


def games_export(db: Database, args: argparse.Namespace) -> None:
    try:
        game_id = values.partida(args.game)
    except ValueError as e:
        raise AdminError(str(e), EXIT_USAGE) from None
    sys.stdout.write(Games(db).pgn(game_id))


COMMANDS: dict[tuple[str, str], Callable[[Database, argparse.Namespace], None]] = {
    ("db", "upgrade"): db_upgrade,
    ("users", "add"): users_add,
    ("users", "list"): users_list,
    ("users", "remove"): users_remove,
    ("users", "passwd"): users_passwd,
    ("subs", "list"): subs_list,
    ("subs", "approve"): subs_approve,
    ("subs", "reject"): subs_reject,
    ("games", "list"): games_list,
    ("games", "purge"): games_purge,
    ("games", "export"): games_export,
}


if __name__ == "__main__":
    sys.exit(main())
