"""``ajedrez``: the terminal client. Keeps a local cache, works offline, syncs by fecha.

Commands that read (games, show, status, challenges, players, ranking, export) use the
cache only and say how old it is; ``--sync`` (or ``ajedrez sync``) refreshes it first.
Commands that act (move, challenge, accept, ...) log in, act, and update the cache.
See ``docs/client.md``.

This module is the entry point: the argument parser, :func:`main`, and how an error
becomes one line and an exit status. The commands are in :mod:`~ajedrez.client.read_commands`,
:mod:`~ajedrez.client.play_commands` and :mod:`~ajedrez.client.account_commands`; what
they share, in :mod:`~ajedrez.client.app`.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import TextIO

from ajedrez.client.account_commands import (
    cmd_block,
    cmd_blocked,
    cmd_config,
    cmd_leave,
    cmd_move_data,
    cmd_subscribe,
    cmd_unblock,
    cmd_unsubscribe,
)
from ajedrez.client.app import (
    EXIT_FAILED,
    EXIT_NOT_ESPOL,
    EXIT_SERVER,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    App,
    CliError,
)
from ajedrez.client.config import default_data_dir
from ajedrez.client.errors import (
    ClientError,
    ConnectionLost,
    NotEspol,
    NotTls,
    ProtocolError,
    ReplyError,
    ServerError,
    Unreachable,
)
from ajedrez.client.live_commands import (
    cmd_chat,
    cmd_hint,
    cmd_observe,
    cmd_observers,
    cmd_seek,
    cmd_seeks,
    cmd_unseek,
    cmd_watch,
)
from ajedrez.client.login_commands import cmd_login, cmd_logout, cmd_tokens
from ajedrez.client.play_commands import (
    cmd_accept,
    cmd_challenge,
    cmd_claim,
    cmd_decline,
    cmd_draw,
    cmd_move,
    cmd_resign,
    cmd_takeback,
)
from ajedrez.client.protocol import DEFAULT_PORT
from ajedrez.client.read_commands import (
    cmd_challenges,
    cmd_export,
    cmd_games,
    cmd_players,
    cmd_ranking,
    cmd_show,
    cmd_status,
    cmd_sync,
)


def _global_options(p: argparse.ArgumentParser, *, top: bool) -> None:
    """The same options on the main parser and every subcommand, so they may go before
    or after the subcommand; on subcommands they only override what was given."""

    def d(value: object) -> object:
        return value if top else argparse.SUPPRESS

    g = p.add_argument_group("connection and data")
    g.add_argument(
        "--server",
        metavar="HOST[:PORT]",
        default=d(None),
        help="server address (default from the config file, else 127.0.0.1:1995)",
    )
    g.add_argument(
        "--user",
        "-u",
        metavar="NAME",
        default=d(None),
        help="your user name (default from the config file)",
    )
    g.add_argument(
        "--data-dir",
        metavar="DIR",
        default=d(None),
        help=f"where the local data lives (default {default_data_dir()})",
    )
    g.add_argument(
        "--config",
        metavar="FILE",
        default=d(None),
        help="config file (default client.toml in the user config directory)",
    )
    g.add_argument(
        "--password-stdin",
        action="store_true",
        default=d(False),
        help="read the password from the first line of standard input",
    )
    g.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        default=d(None),
        help="network timeout (default 30)",
    )
    g.add_argument(
        "--tls",
        action="store_true",
        default=d(None),
        help="connect to the server's TLS listener (give its port in --server)",
    )
    g.add_argument(
        "--tls-ca",
        metavar="FILE",
        default=d(None),
        help="CA certificate(s) to verify the server with (implies --tls; default: the "
        "system's trusted CAs)",
    )
    g.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        default=d(False),
        help="show the protocol exchange on stderr (never the password)",
    )


def package_version() -> str:
    try:
        return metadata.version("ajedrez")
    except metadata.PackageNotFoundError:
        # Run from a source tree that was never installed: there is no metadata to read.
        return "(version unknown: not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ajedrez",
        description="Correspondence chess from the terminal: keeps your games locally, "
        "works offline, syncs with an Ajedrez (ESPOL 2.0) server.",
        epilog="Password: prompt, --password-stdin, or AJEDREZ_PASSWORD; never stored "
        "(`ajedrez login` keeps a revocable token instead). "
        "See docs/client.md.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"ajedrez {package_version()}",
        help="print the version and exit",
    )
    _global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, func: Callable[[App], int], help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        _global_options(p, top=False)
        p.set_defaults(func=func)
        return p

    def sync_flag(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--sync",
            action="store_true",
            help="sync with the server first (goes on offline if it cannot be reached)",
        )

    p = add("subscribe", cmd_subscribe, "ask the administrator for an account (the --user name)")
    p.add_argument("--comment", default="", help="your full name or a note for the administrator")
    p = add("unsubscribe", cmd_unsubscribe, "close your account (your active games are lost)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p = add("login", cmd_login, "log in once: keep a login token, so commands need no password")
    p.add_argument(
        "--label", default=None, help="the token's name in `ajedrez tokens` (default: host name)"
    )
    p = add("logout", cmd_logout, "revoke this machine's login token and forget it")
    p.add_argument(
        "--all", action="store_true", help="revoke every login token of yours, on every machine"
    )
    p = add("tokens", cmd_tokens, "your login tokens: the machines logged in as you")
    p.add_argument("--revoke", type=int, metavar="ID", help="revoke the token ID")
    p = add("sync", cmd_sync, "fetch what changed since the last sync (only new moves travel)")
    p.add_argument(
        "--full", action="store_true", help="forget the stored fechas and rebuild everything"
    )
    p = add("games", cmd_games, "your games: opponent, colour, whose turn, status, last change")
    p.add_argument(
        "--sort",
        choices=["turn", "id", "changed", "opponent"],
        default="turn",
        help="order (default: your turn first, then most recently changed)",
    )
    p.add_argument("--active", action="store_true", help="only games still being played")
    sync_flag(p)
    p = add("show", cmd_show, "draw a game's board, its moves and its status")
    p.add_argument("game", metavar="GAME", help="game id (P0000001 or 1) or the opponent's name")
    p.add_argument(
        "--no-coordinates",
        dest="coordinates",
        action="store_false",
        help="hide the a-h and 1-8 labels",
    )
    p.add_argument("--flip", action="store_true", help="draw from the opponent's side")
    p.add_argument("--no-moves", dest="moves", action="store_false", help="hide the move list")
    sync_flag(p)
    p = add("status", cmd_status, "a game's status record")
    p.add_argument("game", metavar="GAME")
    sync_flag(p)
    p = add("move", cmd_move, "play a move: SAN (Nf3, exd8=Q, O-O) or coordinates (e2e4, e7e8q)")
    p.add_argument("game", metavar="GAME")
    p.add_argument("move", metavar="MOVE")
    p.add_argument("--show", action="store_true", help="draw the board afterwards")
    p = add("challenge", cmd_challenge, "challenge a user to a game")
    p.add_argument("target", metavar="USER")
    p.add_argument(
        "--time",
        "-t",
        metavar="CONTROL",
        help="the game's time control: a preset (1d, 3d, 7d, 14d, iccf-10/50, 10m, "
        "30s-move), INITIAL+INCREMENT[/CAP] (50d+5d, 2h+30s), or none (default: the "
        "server's)",
    )
    p = add(
        "challenges",
        cmd_challenges,
        "open challenges to you and those you sent, from any machine (as of the last sync)",
    )
    sync_flag(p)
    p = add("accept", cmd_accept, "accept a user's challenge, choosing your colour")
    p.add_argument("target", metavar="USER")
    p.add_argument(
        "--color",
        "--colour",
        "-c",
        required=True,
        metavar="B|N",
        help="B white (blancas) or N black (negras)",
    )
    p = add("decline", cmd_decline, "decline a user's challenge (or withdraw yours)")
    p.add_argument("target", metavar="USER")
    p = add("draw", cmd_draw, "offer a draw, or accept or decline your opponent's offer")
    p.add_argument("action", choices=["offer", "accept", "decline"])
    p.add_argument("game", metavar="GAME")
    p = add(
        "takeback",
        cmd_takeback,
        "ask your opponent to take back your last move, or accept or decline their request",
    )
    p.add_argument("action", choices=["ask", "accept", "decline"])
    p.add_argument("game", metavar="GAME")
    p = add("resign", cmd_resign, "resign a game")
    p.add_argument("game", metavar="GAME")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p = add("claim", cmd_claim, "claim a draw (threefold repetition or the fifty-move rule)")
    p.add_argument("game", metavar="GAME")
    p = add("leave", cmd_leave, "start or end leave (vacation), or see how much is left")
    p.add_argument(
        "action",
        choices=["start", "end", "status"],
        help="start: stop your correspondence clocks from now; end: come back; status: ask",
    )
    p.add_argument(
        "--days",
        type=int,
        metavar="N",
        help="with start: N days (default: every leave day left this year)",
    )
    p = add("block", cmd_block, "block a user: no challenges, chat, pairing or observing")
    p.add_argument("target", metavar="USER")
    p = add("unblock", cmd_unblock, "unblock a user")
    p.add_argument("target", metavar="USER")
    p = add("blocked", cmd_blocked, "the users you block")
    p = add("ranking", cmd_ranking, "the ten players with most wins (as of the last sync)")
    sync_flag(p)
    p = add("players", cmd_players, "the players you can challenge (as of the last sync)")
    sync_flag(p)
    p = add("export", cmd_export, "a game as PGN")
    p.add_argument("game", metavar="GAME")
    p.add_argument(
        "--output", "-o", metavar="FILE", help="write to FILE instead of standard output"
    )
    p.add_argument(
        "--from-server", action="store_true", help="ask the server (PGNX) instead of the local data"
    )
    p.add_argument(
        "--chat",
        action="store_true",
        help="with the game's messages as comments (PGNX:GAME:1; asks the server)",
    )
    sync_flag(p)
    p = add(
        "watch",
        cmd_watch,
        "follow your events as they happen (moves, challenges, draws, ends, chat), one line "
        "each; resumes where it stopped",
    )
    p.add_argument(
        "--exec",
        metavar="CMD",
        help="run CMD through the shell once per event, with the event in AJEDREZ_* "
        "environment variables (AJEDREZ_EVENT, AJEDREZ_PARTIDA, ...)",
    )
    p.add_argument(
        "--from-start",
        action="store_true",
        help="start from the oldest event the server keeps instead of where the last "
        "watch stopped (or, the first time, from now)",
    )
    p = add("observe", cmd_observe, "watch another players' game: the board after each move")
    p.add_argument("game", metavar="GAME")
    p.add_argument("--stop", action="store_true", help="stop observing the game (OBSF)")
    p = add("observers", cmd_observers, "who observes a game")
    p.add_argument("game", metavar="GAME")
    p = add("chat", cmd_chat, "say something in a game, or read its messages")
    p.add_argument("game", metavar="GAME")
    p.add_argument(
        "text", metavar="TEXT", nargs="*", help="the message (without it: read the messages)"
    )
    p = add("seek", cmd_seek, "look for a game with anyone who seeks the same time control")
    p.add_argument(
        "--time",
        "-t",
        metavar="CONTROL",
        help="the time control sought, as for challenge (default: none, no clock)",
    )
    p.add_argument("--private", action="store_true", help="a game nobody may observe")
    p = add("seeks", cmd_seeks, "the seeks waiting for an opponent")
    p = add("unseek", cmd_unseek, "withdraw your seek (or all of them)")
    p.add_argument("--time", "-t", metavar="CONTROL", help="only the seek of this time control")
    p = add("hint", cmd_hint, "the squares a piece may move to (legal-move hints)")
    p.add_argument("game", metavar="GAME")
    p.add_argument("square", metavar="SQUARE", help="the piece's square, as e2")
    p = add(
        "move-data",
        cmd_move_data,
        "move your local data kept for another address of the same server (its TLS port, "
        "a new name) to the server in use",
    )
    p.add_argument("old_server", metavar="OLD_SERVER", help="the address it was kept for")
    p = add(
        "config", cmd_config, "show the settings in use; --save stores --server/--user/--data-dir"
    )
    p.add_argument(
        "--save",
        action="store_true",
        help="write the given --server, --user, --data-dir to the config file",
    )
    return parser


def _describe(e: ClientError, app: App) -> CliError:
    server = app._settings.server if app._settings else "the server"
    if isinstance(e, NotTls):
        return CliError(f"{e}.", EXIT_UNREACHABLE)
    if isinstance(e, Unreachable):
        return CliError(
            f"{e}; is it running? Check --server or the config file. "
            "Read commands (games, show, ...) work offline.",
            EXIT_UNREACHABLE,
        )
    if isinstance(e, ConnectionLost):
        return CliError(f"lost the connection to {server}: {e}", EXIT_UNREACHABLE)
    if isinstance(e, ServerError):
        return CliError(
            f"the server could not do it now: {e.reason} ({e.code} {e.name}); try again later",
            EXIT_SERVER,
        )
    if isinstance(e, ReplyError):
        return CliError(f"{e.reason} ({e.code} {e.name})")
    if isinstance(e, NotEspol):
        return CliError(
            f"{e}; is --server the address of an Ajedrez server? Its default port is "
            f"{DEFAULT_PORT}.",
            EXIT_NOT_ESPOL,
        )
    if isinstance(e, ProtocolError):
        return CliError(f"the server's reply made no sense: {e}", EXIT_SERVER)
    return CliError(str(e))


def main(
    argv: list[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    stdin: TextIO | None = None,
) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    app = App(
        args,
        os.environ if env is None else env,
        stdout or sys.stdout,
        stderr or sys.stderr,
        stdin or sys.stdin,
    )
    try:
        return _run(app)
    finally:
        app.discard_unused()


def _run(app: App) -> int:
    """The command, its errors as one line and an exit status."""
    args = app.args
    try:
        return int(args.func(app))
    except CliError as e:
        app.warn(str(e))
        return e.status
    except ClientError as e:
        err = _describe(e, app)
        app.warn(str(err))
        return err.status
    except ValueError as e:
        app.warn(str(e))
        return EXIT_USAGE
    except OSError as e:
        app.warn(str(e))
        return EXIT_FAILED
    except sqlite3.Error as e:
        where = str(app.cache_file) if app._settings and app._settings.user else "file"
        app.warn(f"the local data {where} cannot be used: {e}; delete it and `ajedrez sync`")
        return EXIT_FAILED
    except KeyboardInterrupt:
        # As ajedrez-admin: what was not done was refused (docs/client.md, exit status).
        app.warn("interrupted")
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
