"""``ajedrez``: the terminal client. Keeps a local cache, works offline, syncs by fecha.

Commands that read (games, show, status, challenges, players, ranking, export) use the
cache only and say how old it is; ``--sync`` (or ``ajedrez sync``) refreshes it first.
Commands that act (move, challenge, accept, ...) log in, act, and update the cache.
See ``docs/client.md``.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sqlite3
import ssl
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TextIO

import chess

from ajedrez.client.cache import Cache, CachedGame, cache_path
from ajedrez.client.chessboard import (
    MoveInputError,
    color_name,
    end_reason_guess,
    ending,
    how_it_ended,
    jgda_for,
    move_table,
    parse_move,
    render_board,
    result_tag,
)
from ajedrez.client.config import ConfigError, Settings, default_data_dir, resolve, save_config
from ajedrez.client.errors import (
    ClientError,
    ConnectionLost,
    NameTaken,
    NoChallenge,
    NoSuchGame,
    NoSuchUser,
    NotEspol,
    ProtocolError,
    ReplyError,
    ServerError,
    StalePly,
    Unreachable,
    WrongPassword,
)
from ajedrez.client.protocol import DEFAULT_PORT, Client, game_id
from ajedrez.client.sync import board_of, learn_facts, record_own_move, sync_all, sync_game
from ajedrez.domain.export import game_pgn
from ajedrez.protocol.codes import Reply
from ajedrez.protocol.records import BLACK, WHITE, WINNER_DRAW, WINNER_WHITE, GameStatus, MoveRecord

EXIT_OK = 0
EXIT_FAILED = 1  # refused: by the server or by a local check (illegal move, not your turn)
EXIT_USAGE = 2  # bad options or configuration
EXIT_UNREACHABLE = 3  # no server, or the connection broke
EXIT_AUTH = 4  # wrong password, unknown or unapproved user
EXIT_SERVER = 5  # the server could not do it now (4xx/5xx): try again later
EXIT_NOT_ESPOL = 6  # the other end is not an ESPOL server (wrong host or port)


class CliError(Exception):
    """One line for the user, and the exit status."""

    def __init__(self, message: str, status: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.status = status


# -- formatting helpers ----------------------------------------------------------------


def ago(then: int | None, now: float | None = None) -> str:
    if then is None:
        return "never"
    seconds = max(0, int((time.time() if now is None else now) - then))
    if seconds < 60:
        return "just now" if seconds < 5 else f"{seconds} s ago"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min ago"
    hours = minutes // 60
    if hours < 48:
        return f"{hours} h ago"
    return f"{hours // 24} days ago"


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(out)


def parse_color(text: str) -> str:
    words = {"white": WHITE, "blancas": WHITE, "black": BLACK, "negras": BLACK}
    if text in (WHITE, BLACK):
        return text
    if text.lower() in words:
        return words[text.lower()]
    raise CliError(f"invalid colour {text!r}: B (white, blancas) or N (black, negras)", EXIT_USAGE)


# -- the application -------------------------------------------------------------------


@dataclass
class App:
    args: argparse.Namespace
    env: Mapping[str, str]
    out: TextIO
    err: TextIO
    stdin: TextIO
    _settings: Settings | None = None
    _password: str | None = None

    # -- settings, cache, connection ---------------------------------------------------

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            try:
                self._settings = resolve(
                    server=self.args.server,
                    user=self.args.user,
                    data_dir=self.args.data_dir,
                    config=self.args.config,
                    timeout=self.args.timeout,
                    env=self.env,
                    tls=self.args.tls,
                    tls_ca=self.args.tls_ca,
                )
            except ConfigError as e:
                raise CliError(str(e), EXIT_USAGE) from None
        return self._settings

    @property
    def user(self) -> str:
        user = self.settings.user
        if not user:
            raise CliError(
                'no user: give --user NAME, set AJEDREZ_USER, or put user = "NAME" in '
                f"{self.settings.config_path}",
                EXIT_USAGE,
            )
        return user

    @property
    def cache_file(self) -> Path:
        s = self.settings
        return cache_path(s.data_dir, s.host, s.port, self.user)

    def open_cache(self, *, create: bool) -> Cache:
        path = self.cache_file
        if not create and not path.exists():
            raise CliError(
                f"no local data for {self.user} at {self.settings.server} yet: "
                "run `ajedrez sync` first"
            )
        try:
            return Cache(path)
        except OSError as e:
            raise CliError(f"cannot open the local data {path}: {e}") from None

    def say(self, text: str = "") -> None:
        print(text, file=self.out)

    def warn(self, text: str) -> None:
        print(f"ajedrez: {text}", file=self.err)

    def trace(self) -> Callable[[str], None] | None:
        if not self.args.verbose:
            return None
        return lambda line: print(f"ajedrez: {line}", file=self.err)

    def password(self, *, confirm: bool = False) -> str:
        if self._password is not None:
            return self._password
        if self.args.password_stdin:
            line = self.stdin.readline()
            password = line.rstrip("\r\n")
            if not password:
                raise CliError("--password-stdin: no password on standard input", EXIT_USAGE)
        elif self.env.get("AJEDREZ_PASSWORD"):
            password = self.env["AJEDREZ_PASSWORD"]
        elif self.stdin.isatty():
            prompt = f"Password for {self.user} at {self.settings.server}: "
            password = getpass.getpass(prompt)
            if confirm and getpass.getpass("Again: ") != password:
                raise CliError("the two passwords differ", EXIT_USAGE)
        else:
            raise CliError(
                "no password: set AJEDREZ_PASSWORD, pass --password-stdin, "
                "or run in a terminal to be asked",
                EXIT_USAGE,
            )
        self._password = password
        return password

    def connect(self) -> Client:
        s = self.settings
        tls = None
        if s.tls:
            try:
                tls = ssl.create_default_context(cafile=str(s.tls_ca) if s.tls_ca else None)
            except (OSError, ssl.SSLError) as e:
                raise CliError(f"cannot use the CA file {s.tls_ca}: {e}", EXIT_USAGE) from None
        return Client(s.host, s.port, timeout=s.timeout, trace=self.trace(), tls=tls)

    @contextmanager
    def session(self) -> Iterator[Client]:
        """A logged-in connection, closed with QUIT at the end."""
        user = self.user
        client = self.connect()
        try:
            try:
                client.login(user, self.password())
            except WrongPassword as e:
                raise CliError(
                    f"wrong password for {user} at {self.settings.server} ({e.code} {e.name})",
                    EXIT_AUTH,
                ) from None
            except NoSuchUser as e:
                raise CliError(
                    f"no active user '{user}' at {self.settings.server}: check --user; a new "
                    "subscription works only once the administrator approves it "
                    f"({e.code} {e.name})",
                    EXIT_AUTH,
                ) from None
            except ValueError as e:
                raise CliError(str(e), EXIT_USAGE) from None
            yield client
        finally:
            client.quit()

    def resolve_game(self, cache: Cache | None, text: str) -> str:
        """A game id from ``P0000012``, ``12``, or an opponent's name (their latest game)."""
        try:
            return game_id(text)
        except ValueError:
            pass
        games = [g for g in (cache.games() if cache else []) if g.opponent == text]
        if not games:
            raise CliError(
                f"no game with '{text}' in the local data: give a game id (P0000001), "
                "or run `ajedrez sync`"
            )
        games.sort(key=lambda g: (g.status == 0, g.id))
        return games[-1].id

    def age_line(self, synced_at: int | None, *, stream: TextIO | None = None) -> None:
        when = ago(synced_at)
        text = (
            f"(data from sync {when}; `ajedrez sync` to refresh)"
            if synced_at is not None
            else "(no sync yet: run `ajedrez sync`)"
        )
        print(text, file=stream or self.out)

    def maybe_sync(self, cache: Cache, then: Callable[[Client], None] | None = None) -> None:
        """For read commands with --sync: refresh (and ``then`` on the same connection), or
        go on with the cached data offline."""
        if not getattr(self.args, "sync", False):
            return
        try:
            with self.session() as client:
                sync_all(client, cache)
                if then is not None:
                    then(client)
        except (Unreachable, ConnectionLost) as e:
            self.warn(f"{e}; showing the cached data")


# -- read commands (offline) -----------------------------------------------------------


REMOVED_UNSYNCED = "removed from the server before its end was synced"
REMOVED_NOTE = "removed by the administrator (purged); kept in your local archive"


def game_state(g: CachedGame, board: chess.Board) -> tuple[str, str]:
    """(whose turn, status) in words for the games list."""
    st = g.status_record
    if g.removed and st.active:
        return "-", REMOVED_UNSYNCED
    if not st.active:
        if g.ganador == WINNER_DRAW:
            short = "drawn"
        elif (g.ganador == WINNER_WHITE) == (g.color == WHITE):
            short = "won"
        else:
            short = "lost"
        removed = " (removed from the server)" if g.removed else ""
        return "-", f"{short}: {how_it_ended(board, st)}{removed}"
    turn = "you" if st.turn == g.color else g.opponent
    offer = st.draw_offered_by
    if offer is None:
        status = "active"
    elif offer == g.color:
        status = "active, you offered a draw"
    else:
        status = f"active, {g.opponent} offers a draw"
    return turn, status


def cmd_games(app: App) -> int:
    with app.open_cache(create=app.args.sync) as cache:
        app.maybe_sync(cache)
        games = cache.games()
        if app.args.active:
            games = [g for g in games if g.status == 0]
        rows = []
        for g in games:
            board = board_of(cache, g.id)
            turn, status = game_state(g, board)
            rows.append((g, board, turn, status))
        sort = app.args.sort

        def key(item: tuple[CachedGame, chess.Board, str, str]) -> tuple[object, ...]:
            g, _b, turn, _s = item
            if sort == "id":
                return (g.id,)
            if sort == "opponent":
                return (g.opponent, g.id)
            if sort == "changed":
                return (-g.changed, g.id)
            rank = 0 if turn == "you" else 1 if turn != "-" else 2
            return (rank, -g.changed, g.id)

        rows.sort(key=key)
        if not rows:
            app.say(
                "No games."
                + ("" if app.args.active else " Challenge someone: ajedrez challenge USER")
            )
        else:
            app.say(
                table(
                    [
                        [
                            g.id,
                            g.opponent,
                            color_name(g.color),
                            turn,
                            str(b.fullmove_number),
                            status,
                            ago(g.changed),
                        ]
                        for g, b, turn, status in rows
                    ],
                    ["GAME", "OPPONENT", "YOU", "TURN", "MOVE", "STATUS", "LAST CHANGE"],
                )
            )
        app.age_line(cache.last_sync)
    return EXIT_OK


def cached_game(app: App, cache: Cache, text: str) -> CachedGame:
    gid = app.resolve_game(cache, text)
    g = cache.game(gid)
    if g is None:
        raise CliError(f"{gid} is not in the local data: run `ajedrez sync` (or it is not yours)")
    return g


def data_time(cache: Cache, g: CachedGame) -> int:
    """When the local copy of ``g`` was last known to match the server: its own last STAT,
    or a later successful sync, which fetches every game that changed since the one before
    (so a game it did not fetch was still the same)."""
    return max(g.synced_at, cache.last_sync or 0)


def status_line(cache: Cache, g: CachedGame, board: chess.Board) -> str:
    st = g.status_record
    parts = [f"{g.me} ({color_name(g.color)})", f"move {board.fullmove_number}"]
    if st.active:
        parts.append("your turn" if st.turn == g.color else f"{g.opponent} to move")
    moves = cache.moves(g.id)
    theirs = [m for m in moves if m.color != g.color]
    if not theirs:
        parts.append(f"{g.opponent} has not moved yet")
    else:
        last = theirs[-1]
        at = last.at if last.at is not None else (g.changed if last.ply == len(moves) else None)
        parts.append(f"{g.opponent} moved {ago(at)}" if at else f"{g.opponent} moved earlier")
    if not st.active:
        parts.append("finished: " + (ending(board, st) or ""))
    if g.removed:
        parts.append(REMOVED_UNSYNCED if st.active else "removed from the server")
    return " | ".join(parts)


def cmd_show(app: App) -> int:
    with app.open_cache(create=app.args.sync) as cache:
        app.maybe_sync(cache)
        g = cached_game(app, cache, app.args.game)
        moves = cache.moves(g.id)
        board = board_of(cache, g.id)
        last = board.peek() if board.move_stack else None
        bottom = g.color if not app.args.flip else (BLACK if g.color == WHITE else WHITE)
        app.say(f"{g.id}  {g.white} (white) vs {g.black} (black)")
        app.say()
        app.say(
            render_board(board, bottom=bottom, coordinates=app.args.coordinates, last_move=last)
        )
        app.say()
        if moves:
            m = moves[-1]
            who = "you" if m.color == g.color else g.opponent
            dots = "." if m.color == WHITE else "..."
            app.say(f"Last move: {(m.ply + 1) // 2}{dots} {m.san} ({m.jugada}) by {who}")
        else:
            app.say("No moves yet.")
        offer = g.status_record.draw_offered_by
        if offer == g.color:
            app.say(f"You offered a draw; {g.opponent} must answer before play goes on.")
        elif offer is not None:
            app.say(
                f"{g.opponent} offers a draw: `ajedrez draw accept {g.id}` or "
                f"`ajedrez draw decline {g.id}`."
            )
        if app.args.moves and moves:
            app.say()
            app.say(move_table([(m.jugada, m.san) for m in moves]))
        app.say()
        app.say(status_line(cache, g, board))
        app.age_line(data_time(cache, g))
    return EXIT_OK


def cmd_status(app: App) -> int:
    with app.open_cache(create=app.args.sync) as cache:
        app.maybe_sync(cache)
        g = cached_game(app, cache, app.args.game)
        board = board_of(cache, g.id)
        st = g.status_record
        if g.removed and st.active:
            state = REMOVED_UNSYNCED
        elif st.active:
            state = "active, " + ("your turn" if st.turn == g.color else f"{g.opponent} to move")
        else:
            state = "finished: " + (ending(board, st) or "")
        offer = st.draw_offered_by
        draw = (
            "none"
            if offer is None
            else "you offered a draw"
            if offer == g.color
            else f"{g.opponent} offers a draw"
        )
        rows = [
            ("Game", g.id),
            ("White", g.white),
            ("Black", g.black),
            ("You play", color_name(g.color)),
            ("Status", state),
            ("Next ply", f"{g.next_ply} (move {board.fullmove_number})"),
            ("Draw offer", draw),
            ("Result", result_tag(not st.active, g.ganador)),
            *([("Server", REMOVED_NOTE)] if g.removed else []),
            (
                "Last change",
                f"{ago(g.changed)} ({time.strftime('%Y-%m-%d %H:%M', time.localtime(g.changed))})",
            ),
        ]
        for label, value in rows:
            app.say(f"{label + ':':<12} {value}")
        app.age_line(data_time(cache, g))
    return EXIT_OK


def cmd_challenges(app: App) -> int:
    with app.open_cache(create=app.args.sync) as cache:
        app.maybe_sync(cache)
        received = [n for n, d in cache.challenges() if d == "in"]
        sent = [n for n, d in cache.challenges() if d == "out"]
        if received:
            app.say("Challenges to you:")
            for name in received:
                app.say(
                    f"  {name}   (ajedrez accept {name} --color B|N, or ajedrez decline {name})"
                )
        else:
            app.say("No challenges to you.")
        if sent:
            app.say("Challenges you sent:")
            for name in sent:
                app.say(f"  {name}")
        app.age_line(cache.last_sync)
    return EXIT_OK


def cmd_players(app: App) -> int:
    with app.open_cache(create=app.args.sync) as cache:
        app.maybe_sync(cache)
        active = {g.opponent: g.id for g in cache.games() if g.status == 0}
        challenges = cache.challenges()
        rows = []
        for name in cache.players():
            notes = []
            if name == app.user:
                notes.append("you")
            if name in active:
                notes.append(f"game {active[name]}")
            if (name, "in") in challenges:
                notes.append("challenged you")
            if (name, "out") in challenges:
                notes.append("you challenged them")
            rows.append([name, ", ".join(notes)])
        app.say(table(rows, ["PLAYER", ""]) if rows else "No players known.")
        app.age_line(cache.last_sync)
    return EXIT_OK


def cmd_ranking(app: App) -> int:
    with app.open_cache(create=app.args.sync) as cache:
        app.maybe_sync(cache)
        entries = cache.ranking()
        rows = [[str(i), e.user, str(e.wins)] for i, e in enumerate(entries, 1)]
        app.say(table(rows, ["#", "PLAYER", "WINS"]) if rows else "No ranking yet.")
        at = cache.get_meta("ranking_at")
        app.age_line(int(at) if at else None)
    return EXIT_OK


def cmd_export(app: App) -> int:
    if app.args.from_server:
        cache = app.open_cache(create=True)
        gid = app.resolve_game(cache, app.args.game)
        cache.close()
        with app.session() as client:
            text = client.pgnx(gid)
    else:
        with app.open_cache(create=app.args.sync) as cache:

            def complete(client: Client) -> None:
                # The server's dates, for a game whose local copy lacks them (and only then).
                g = cache.game(app.resolve_game(cache, app.args.game))
                if g is not None:
                    learn_facts(client, cache, g.status_record)

            app.maybe_sync(cache, then=complete)
            g = cached_game(app, cache, app.args.game)
            text = local_pgn(cache, g)
            app.age_line(data_time(cache, g), stream=app.err)
    if app.args.output:
        Path(app.args.output).write_text(text, encoding="utf-8")
    else:
        app.out.write(text)
    return EXIT_OK


def local_pgn(cache: Cache, g: CachedGame) -> str:
    """The game as the server's PGNX writes it (the same writer), from the local data.

    The start and end days and the end reason come from the server's PGN, which sync
    fetches once for a new game and once when it ends; a game without them gets what the
    local copy can tell: an unknown start, its last change as the end, the reason the
    final position and solicitudes show.
    """
    board = board_of(cache, g.id)
    st = g.status_record
    facts = cache.facts(g.id)
    started = facts.started if facts else None
    ended = end_reason = None
    if not st.active:
        if facts is not None and facts.ended is not None:
            ended, end_reason = facts.ended, facts.end_reason
        else:
            ended, end_reason = g.changed, end_reason_guess(board, st)
    return game_pgn(
        white=g.white,
        black=g.black,
        game_id=g.id,
        started=started,
        ended=ended,
        status=g.status,
        winner=g.ganador,
        end_reason=end_reason,
        moves=board.move_stack,
    )


def cmd_config(app: App) -> int:
    s = app.settings
    if app.args.save:
        values: dict[str, object] = {}
        if app.args.server:
            values["server"] = s.server
        if app.args.user:
            values["user"] = app.args.user
        if app.args.data_dir:
            values["data_dir"] = str(s.data_dir)
        if app.args.tls or app.args.tls_ca:
            values["tls"] = True
        if app.args.tls_ca:
            values["tls_ca"] = str(s.tls_ca)
        if not values:
            raise CliError("nothing to save: give --server, --user or --data-dir", EXIT_USAGE)
        save_config(s.config_path, values)
        app.say(f"Saved to {s.config_path}.")
    app.say(f"config file: {s.config_path}{'' if s.config_path.exists() else ' (none)'}")
    app.say(f"server:      {s.server}")
    app.say(f"user:        {s.user or '(not set)'}")
    app.say(f"data dir:    {s.data_dir}")
    app.say(f"tls:         {'yes' if s.tls else 'no'}{f' (CA {s.tls_ca})' if s.tls_ca else ''}")
    if s.user:
        app.say(f"local data:  {app.cache_file}")
    return EXIT_OK


# -- commands that talk to the server --------------------------------------------------


def cmd_sync(app: App) -> int:
    with app.open_cache(create=True) as cache, app.session() as client:
        if app.args.full:
            cache.reset()
        report = sync_all(client, cache, full=app.args.full)
        app.say(f"Synced with {app.settings.server} as {app.user}.")
        app.say(f"Players: {report.players} ({report.new_players} new).")
        received = [n for n, d in cache.challenges() if d == "in"]
        new = set(report.new_challenges)
        if received:
            shown = ", ".join(f"{n} (new)" if n in new else n for n in received)
            app.say(f"Challenges to you: {shown}.")
        if report.closed_challenges:
            closed = ", ".join(report.closed_challenges)
            app.say(f"Challenges closed without a game (declined or withdrawn): {closed}.")
        if report.games_removed:
            app.say(
                f"Removed from the server by its administrator: {', '.join(report.games_removed)}"
                " (kept here: `ajedrez show` and `ajedrez export` still work)."
            )
        n = report.total_new_moves
        per_game = ", ".join(f"{gid}: {k}" for gid, k in report.new_moves.items())
        app.say(
            f"Games changed: {len(report.games_changed)}; {n} new move{'s' if n != 1 else ''}"
            + (f" ({per_game})." if per_game else ".")
        )
        mine = [g for g in cache.games() if g.status == 0 and g.status_record.turn == g.color]
        if mine:
            app.say("Your turn: " + ", ".join(f"{g.id} ({g.opponent})" for g in mine) + ".")
    return EXIT_OK


def cmd_subscribe(app: App) -> int:
    user = app.user
    password = app.password(confirm=True)
    with app.connect() as client:
        try:
            client.subs(user, password, app.args.comment or "")
        except NameTaken as e:
            raise CliError(
                f"the name '{user}' is taken or already requested at {app.settings.server} "
                f"({e.code} {e.name})"
            ) from None
        except ValueError as e:
            raise CliError(str(e), EXIT_USAGE) from None
        client.quit()
    app.say(
        f"Subscription request for {user} sent to {app.settings.server}. "
        "The administrator must approve it (ajedrez-admin subs approve "
        f"{user}) before you can log in."
    )
    return EXIT_OK


def cmd_unsubscribe(app: App) -> int:
    user = app.user
    if not app.args.yes:
        if not app.stdin.isatty():
            raise CliError("closing an account cannot be undone: add --yes to confirm", EXIT_USAGE)
        answer = input(f"Close the account {user} at {app.settings.server}? Type its name: ")
        if answer.strip() != user:
            raise CliError("not confirmed; nothing done")
    with app.session() as client:
        client.unsu(user, app.password())
    app.say(
        f"Account {user} closed at {app.settings.server}; its active games are lost. "
        f"The local data stays in {app.cache_file} (delete it if you like)."
    )
    return EXIT_OK


def cmd_challenge(app: App) -> int:
    target = app.args.target
    with app.open_cache(create=True) as cache, app.session() as client:
        try:
            client.juego(target)
        except NoSuchUser as e:
            raise CliError(f"no active user '{target}' to challenge ({e.code} {e.name})") from None
        with cache.transaction():
            cache.add_challenges([target], "out")
    app.say(
        f"Challenge sent to {target}. When {target} accepts, the game appears after "
        "`ajedrez sync` (`ajedrez games`)."
    )
    return EXIT_OK


def cmd_accept(app: App) -> int:
    target = app.args.target
    color = parse_color(app.args.color)
    with app.open_cache(create=True) as cache, app.session() as client:
        try:
            gid = client.acep(color, target)
        except NoChallenge as e:
            with cache.transaction():
                cache.remove_challenges(target, "in")
            raise CliError(
                f"no open challenge from '{target}' to you ({e.code} {e.name}); "
                "`ajedrez challenges --sync` lists the open ones"
            ) from None
        with cache.transaction():
            cache.remove_challenges(target)
        sync_game(client, cache, gid)
    first = "Your move" if color == WHITE else f"{target} moves first"
    app.say(
        f"Game {gid} started: you play {color_name(color)} against {target}. {first}"
        + (f": ajedrez move {gid} MOVE" if color == WHITE else ".")
    )
    return EXIT_OK


def cmd_decline(app: App) -> int:
    target = app.args.target
    with app.open_cache(create=True) as cache, app.session() as client:
        try:
            client.decl(target)
        except NoChallenge as e:
            with cache.transaction():
                cache.remove_challenges(target)
            raise CliError(
                f"no open challenge between you and '{target}' ({e.code} {e.name})"
            ) from None
        with cache.transaction():
            cache.remove_challenges(target)
    app.say(f"Challenge between you and {target} removed.")
    return EXIT_OK


def fresh_game(app: App, client: Client, cache: Cache, gid: str) -> GameStatus:
    try:
        return sync_game(client, cache, gid).status
    except NoSuchGame as e:
        held = cache.game(gid)
        if held is not None and e.code == Reply.F_NOGAME:
            with cache.transaction():
                cache.mark_removed(gid)
            raise CliError(f"{gid} was removed from the server by its administrator") from None
        raise CliError(f"{naming(gid, e.reason)} ({e.code} {e.name})") from None


def naming(gid: str, reason: str) -> str:
    """The server's reason, prefixed with the game id unless it names it already."""
    return reason if gid in reason else f"{gid}: {reason}"


def finished_message(cache: Cache, st: GameStatus) -> str:
    board = board_of(cache, st.game)
    return f"{st.game} is over: {ending(board, st)}"


def refuse_if_over(cache: Cache, gid: str) -> None:
    """A game the local copy knows has ended stays ended (a game id is never given
    twice): say so without asking the server, which also works offline."""
    g = cache.game(gid)
    if g is not None and not g.status_record.active:
        raise CliError(finished_message(cache, g.status_record))


def cmd_move(app: App) -> int:
    with app.open_cache(create=True) as cache:
        gid = app.resolve_game(cache, app.args.game)
        refuse_if_over(cache, gid)
        with app.session() as client:
            st = fresh_game(app, client, cache, gid)
            if not st.active:
                raise CliError(finished_message(cache, st))
            opp = st.opponent
            if st.turn != st.color:
                raise CliError(
                    f"not your turn in {gid}: {opp} ({color_name(st.turn)}) is to move; "
                    "`ajedrez sync` later to see their move"
                )
            offer = st.draw_offered_by
            if offer == st.color:
                raise CliError(
                    f"your draw offer in {gid} is pending: {opp} must answer it before play goes on"
                )
            if offer is not None:
                raise CliError(
                    f"{opp} offers a draw in {gid}: answer first with "
                    f"`ajedrez draw accept {gid}` or `ajedrez draw decline {gid}`"
                )
            board = board_of(cache, gid)
            try:
                move = parse_move(board, app.args.move)
            except MoveInputError as e:
                raise CliError(f"illegal move in {gid}: {e}") from None
            j = jgda_for(board, move)
            try:
                _send_move(app, client, gid, j.ply, j.jugada, j.posicion, j.promocion)
            except StalePly as e:
                fresh_game(app, client, cache, gid)
                raise CliError(
                    f"{naming(gid, e.reason)}: the game changed meanwhile; look with "
                    f"`ajedrez show {gid}` and play again"
                ) from None
            record_own_move(
                cache, gid, MoveRecord(j.ply, j.jugada, 0, j.posicion, j.promocion), j.san
            )
            # The move is stored; if this fails, the status comes with the next sync.
            with suppress(ClientError):
                st = fresh_game(app, client, cache, gid)
        dots = "." if j.ply % 2 == 1 else "..."
        app.say(f"{gid}: you played {(j.ply + 1) // 2}{dots} {j.san} ({j.jugada}).")
        if not st.active:
            app.say(finished_message(cache, st))
        else:
            app.say(f"{opp} to move.")
        if app.args.show:
            board = board_of(cache, gid)
            app.say()
            app.say(render_board(board, bottom=st.color, coordinates=True, last_move=board.peek()))
    return EXIT_OK


def _send_move(
    app: App, client: Client, gid: str, ply: int, jugada: str, posicion: str, promocion: int
) -> None:
    """JGDA; when the connection breaks before the reply, resend once on a new connection
    (the server answers an exact resend of the move just stored with success)."""
    try:
        client.jgda(gid, ply, jugada, posicion, promocion)
        return
    except ConnectionLost as e:
        app.warn(f"{e}; sending the move again")
    with app.session() as again:
        again.jgda(gid, ply, jugada, posicion, promocion)


def cmd_draw(app: App) -> int:
    with app.open_cache(create=True) as cache:
        gid = app.resolve_game(cache, app.args.game)
        refuse_if_over(cache, gid)
        with app.session() as client:
            st = fresh_game(app, client, cache, gid)
            if not st.active:
                raise CliError(finished_message(cache, st))
            opp = st.opponent
            if app.args.action == "offer":
                client.tbls(gid, opp)
                msg = (
                    f"Draw offered to {opp} in {gid}. Neither of you can move until {opp} answers."
                )
            else:
                accept = app.args.action == "accept"
                client.rtbl(gid, accept, opp)
                msg = (
                    f"Draw agreed in {gid}: the game is over, 1/2-1/2."
                    if accept
                    else f"Draw offer declined in {gid}; play goes on."
                )
            fresh_game(app, client, cache, gid)
    app.say(msg)
    return EXIT_OK


def cmd_resign(app: App) -> int:
    with app.open_cache(create=True) as cache:
        gid = app.resolve_game(cache, app.args.game)
        refuse_if_over(cache, gid)
        if not app.args.yes and app.stdin.isatty():
            answer = input(f"Resign {gid}? [y/N] ")
            if answer.strip().lower() not in ("y", "yes", "s", "si", "sí"):
                raise CliError("not confirmed; nothing done")
        with app.session() as client:
            st = fresh_game(app, client, cache, gid)
            if not st.active:
                raise CliError(finished_message(cache, st))
            client.rend(gid, st.opponent)
            fresh_game(app, client, cache, gid)
    app.say(f"You resigned {gid}; {st.opponent} wins.")
    return EXIT_OK


def cmd_claim(app: App) -> int:
    with app.open_cache(create=True) as cache:
        gid = app.resolve_game(cache, app.args.game)
        refuse_if_over(cache, gid)
        with app.session() as client:
            st = fresh_game(app, client, cache, gid)
            if not st.active:
                raise CliError(finished_message(cache, st))
            client.finp(gid, st.opponent)
            st = fresh_game(app, client, cache, gid)
        app.say(f"Draw claimed: {finished_message(cache, st)}")
    return EXIT_OK


# -- argument parsing ------------------------------------------------------------------


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
        epilog="Password: prompt, --password-stdin, or AJEDREZ_PASSWORD; never stored. "
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
    p = add("challenges", cmd_challenges, "challenges you received (and sent from here)")
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
    p = add("resign", cmd_resign, "resign a game")
    p.add_argument("game", metavar="GAME")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p = add("claim", cmd_claim, "claim a draw (threefold repetition or the fifty-move rule)")
    p.add_argument("game", metavar="GAME")
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
    sync_flag(p)
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
