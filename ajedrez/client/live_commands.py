"""The commands of live play: watch (the event stream, with --exec), observe and
observers, chat, seek, seeks and unseek, hint."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import chess

from ajedrez.client.app import EXIT_OK, EXIT_USAGE, App, CliError
from ajedrez.client.cache import Cache
from ajedrez.client.chessboard import board_from, color_name, render_board, to_move
from ajedrez.client.clocks import control_text, describe_control, live_control
from ajedrez.client.errors import (
    GameOver,
    MalformedEvent,
    NoSeek,
    ObserveRefused,
    PrivateGame,
    ProtocolFailure,
    ReplyError,
    SeekExists,
)
from ajedrez.client.event_lines import describe, event_environment, event_line
from ajedrez.client.follow import Handler, follow
from ajedrez.client.output import numbered, table
from ajedrez.client.play_commands import seek_control
from ajedrez.client.protocol import CHANNEL_PLAYERS, Client, StreamItem, StreamMark
from ajedrez.client.sync import sync_game
from ajedrez.domain.values import WHITE, color_of_ply
from ajedrez.espol import events as ev
from ajedrez.espol.codes import Reply
from ajedrez.espol.events import EventRecord

# Events after which a game of the user's own is fetched again into the local copy.
GAME_CHANGES = frozenset(
    {
        ev.INICIO_PARTIDA,
        ev.FIN_DE_TURNO,
        ev.TABLAS,
        ev.TABLAS_ACEPTADAS,
        ev.TABLAS_RECHAZADAS,
        ev.ABANDONO,
        ev.FINALIZACION,
        ev.RETROCESO_ACEPTADO,
    }
)


@contextmanager
def stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM (a service manager stopping the command) ends it as Ctrl-C does."""

    def stop(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (the command run in-process): no signals
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _no_stream(app: App, e: ProtocolFailure) -> CliError:
    if e.code == Reply.F_CMDINV:
        return CliError(
            f"the server at {app.settings.server} has no event stream (EVEN): it predates "
            f"it ({e.code} {e.name})"
        )
    return CliError(f"{e.reason} ({e.code} {e.name})")


# -- watch -------------------------------------------------------------------------------


class Watch(Handler):
    """Prints each event, keeps the local copy and the stored cursor up to date, and runs
    ``--exec``'s command."""

    def __init__(self, app: App, cache: Cache, command: str | None, from_start: bool) -> None:
        self.app = app
        self.cache = cache
        self.command = command
        self.me = app.user
        self.cursor = 0 if from_start else cache.event_cursor()
        self.known: dict[str, tuple[str, str]] = {}  # games started while watching
        self.dirty: set[str] = set()  # own games to fetch again into the local copy
        self.live = False  # caught up on this connection (601)
        self.connections = 0
        self.announced = False

    def players(self, gid: str) -> tuple[str, str] | None:
        if gid in self.known:
            return self.known[gid]
        g = self.cache.game(gid)
        return None if g is None else (g.white, g.black)

    def store(self, cursor: int) -> None:
        with self.cache.transaction():
            self.cache.set_event_cursor(cursor)
        self.cursor = cursor

    def started(self, client: Client, cursor: int) -> None:
        self.connections += 1
        self.live = False
        if self.connections > 1:
            self.app.warn(f"connected again; going on from event {cursor}")
        if self.cursor is None:  # from now on: a restart goes on from here
            self.store(cursor)

    def item(self, client: Client, item: StreamItem) -> None:
        if isinstance(item, StreamMark):
            self.mark(client, item)
            return
        try:
            summary = describe(item, self.me, self.players)
            line = event_line(item, self.me, self.players)
        except (ValueError, KeyError):  # a field that does not read as its kind says
            summary = line = f"{item.kind} {':'.join(item.fields)}"
        self.app.say(line)
        self.app.out.flush()
        self.note(item)
        if self.live:
            self.refresh(client)
        if self.command:
            self.run(item, summary)
        self.store(item.cursor)

    def mark(self, client: Client, mark: StreamMark) -> None:
        if mark.gap:
            if self.cursor is not None and mark.cursor < self.cursor:
                why = (
                    f"the server's events end at {mark.cursor}, before the {self.cursor} "
                    "stored here (its database was restored from a backup)"
                )
            else:
                why = f"the server no longer keeps them (it keeps those after {mark.cursor})"
            self.app.say(
                f"Some events were missed: {why}. Run `ajedrez sync` to bring your games "
                "and challenges up to date."
            )
        if mark.caught_up:
            self.live = True
            self.refresh(client)
            if not self.announced:
                self.announced = True
                self.app.say(
                    f"Up to date with {self.app.settings.server} as {self.me}; waiting for "
                    "events (Ctrl-C to stop)."
                )
        self.app.out.flush()
        self.store(mark.cursor)

    def unreadable(self, error: MalformedEvent) -> None:
        self.app.warn(f"an event this client cannot read was skipped: {error}")
        if error.cursor is not None:
            self.store(error.cursor)

    def note(self, e: EventRecord) -> None:
        """What the event changes in the local copy: challenges at once; games are fetched
        again (STAT, SPAR, RELJ) once caught up, each game once however many events it
        had meanwhile."""
        f = e.named()
        me = self.me
        if e.kind == ev.DESAFIO and me in (f["retador"], f["retado"]):
            incoming = f["retado"] == me
            other = f["retador"] if incoming else f["retado"]
            with self.cache.transaction():
                self.cache.add_challenges(
                    [other], "in" if incoming else "out", control=f["control"]
                )
        elif e.kind in (ev.DESAFIO_RETIRADO, ev.DESAFIO_RECHAZADO) and me in (
            f["retador"],
            f["retado"],
        ):
            other = f["retado"] if f["retador"] == me else f["retador"]
            with self.cache.transaction():
                self.cache.remove_challenges(other)
        elif e.kind == ev.INICIO_PARTIDA:
            # Any game's players: an observed game's moves are then told by their names.
            self.known[f["partida"]] = (f["blancas"], f["negras"])
            if me not in (f["blancas"], f["negras"]):
                return
            other = f["negras"] if f["blancas"] == me else f["blancas"]
            with self.cache.transaction():
                self.cache.remove_challenges(other)
            self.dirty.add(f["partida"])
        elif e.kind in GAME_CHANGES:
            gid = f.get("partida", "")
            players = self.players(gid)
            observer_only = e.kind == ev.ABANDONO and f.get("observador") == "1"
            if players is not None and me in players and not observer_only:
                self.dirty.add(gid)

    def refresh(self, client: Client) -> None:
        while self.dirty:
            gid = min(self.dirty)
            try:
                sync_game(client, self.cache, gid)
            except ReplyError as e:
                self.app.warn(
                    f"{gid} could not be brought up to date in the local data: {e.reason} "
                    f"({e.code} {e.name}); `ajedrez sync` later"
                )
            self.dirty.discard(gid)

    def run(self, e: EventRecord, summary: str) -> None:
        assert self.command is not None
        s = self.app.settings
        own = {
            "AJEDREZ_USER": self.me,
            "AJEDREZ_SERVER": s.server,
            "AJEDREZ_DATA_DIR": str(s.data_dir),
        }
        env = event_environment(e, summary, self.app.env, own)
        self.app.out.flush()
        try:
            done = subprocess.run(
                self.command, shell=True, env=env, stdin=subprocess.DEVNULL, check=False
            )
        except OSError as err:
            self.app.warn(f"--exec: cannot run {self.command!r}: {err}; watching goes on")
            return
        if done.returncode != 0:
            how = (
                f"was killed by signal {-done.returncode}"
                if done.returncode < 0
                else f"exited with status {done.returncode}"
            )
            self.app.warn(
                f"--exec: {self.command!r} {how} for event {e.cursor} ({e.kind}); watching goes on"
            )


def cmd_watch(app: App) -> int:
    with app.open_cache(create=True) as cache:
        app.credentials()  # asked once: every reconnection uses it
        handler = Watch(app, cache, app.args.exec, app.args.from_start)
        try:
            with stopped_by_sigterm():
                follow(app, handler)
        except KeyboardInterrupt:
            pass
        except ProtocolFailure as e:
            raise _no_stream(app, e) from None
    return EXIT_OK


# -- observe -----------------------------------------------------------------------------


class Observe(Handler):
    """Draws the game's board after each move and shows what its players and observers
    do, until the game ends."""

    def __init__(self, app: App, gid: str) -> None:
        self.app = app
        self.gid = gid
        self.me = app.user
        self.white = self.black = ""
        self.ply = 0  # the last ply drawn
        self.positioned = False
        self.observing = False  # OBSV answered

    def players(self, gid: str) -> tuple[str, str] | None:
        return (self.white, self.black) if gid == self.gid and self.white else None

    def connected(self, client: Client) -> None:
        if self.observing:
            # Observing outlasts the connection; asking again would undo an
            # `observe --stop` given while this one was away.
            return
        gid = self.gid
        try:
            client.obsv(gid)
        except PrivateGame as e:
            raise CliError(
                f"{gid} is a private game: nobody may observe it ({e.code} {e.name})"
            ) from None
        except ObserveRefused as e:
            raise CliError(
                f"you play in {gid}: `ajedrez show {gid}` and `ajedrez watch` follow it "
                f"({e.code} {e.name})"
            ) from None
        except GameOver as e:
            raise CliError(
                f"{gid} is over; only a game being played can be observed ({e.code} {e.name})"
            ) from None
        self.observing = True

    def started(self, client: Client, cursor: int) -> None:
        if self.cursor is None or not self.positioned:
            # The stream runs from here: a move made from now on comes as an event, one
            # made before is in the position read now.
            self.show_position(client)
        self.cursor = cursor

    def show_position(self, client: Client) -> None:
        st = client.stat(self.gid)
        moves = client.spar(self.gid, 0)
        self.white, self.black = st.white, st.black
        board = board_from((m.jugada, m.promocion) for m in moves)
        last = board.peek() if board.move_stack else None
        self.ply = len(moves)
        self.positioned = True
        self.app.say(
            f"Observing {self.gid}: {st.white} (white) vs {st.black} (black). Ctrl-C stops "
            f"watching; `ajedrez observe {self.gid} --stop` stops observing."
        )
        self.draw(board, last, "No moves yet." if last is None else self.last_line(board))

    def last_line(self, board: chess.Board) -> str:
        move = board.pop()
        san = board.san(move)
        board.push(move)
        return f"Last move: {numbered(len(board.move_stack), san)} ({move.uci()[:4]})"

    def draw(self, board: chess.Board, last: chess.Move | None, caption: str) -> None:
        self.app.say()
        self.app.say(render_board(board, bottom=WHITE, coordinates=True, last_move=last))
        self.app.say(caption)
        if not board.is_game_over():
            turn = self.white if board.turn == chess.WHITE else self.black
            color = "white" if board.turn == chess.WHITE else "black"
            self.app.say(f"{turn} ({color}) to move.")

    def item(self, client: Client, item: StreamItem) -> None:
        if isinstance(item, StreamMark):
            if item.gap:
                self.show_position(client)
            self.cursor = item.cursor
            return
        self.cursor = item.cursor
        f = item.named()
        if f.get("partida") != self.gid:
            return
        if item.kind == ev.FIN_DE_TURNO:
            ply = int(f["jugada_n"])
            if ply <= self.ply:
                return  # in the position drawn already
            self.ply = ply
            mover = self.white if color_of_ply(ply) == WHITE else self.black
            last = to_move(f["jugada"], int(f["promocion"]))
            self.draw(
                chess.Board(f["fen"]),
                last,
                f"{mover} played {numbered(ply, f['san'])} ({f['jugada']})",
            )
        elif item.kind == ev.RETROCESO_ACEPTADO:
            self.ply = int(f["jugada_n"]) - 1
            self.draw(
                chess.Board(f["fen"]),
                None,
                f"{f['usuario']} accepted the takeback: ply {f['jugada_n']} undone",
            )
        elif item.kind == ev.SUSURRO:
            self.app.say(f"{f['usuario']} whispers: {f['texto']}")
        elif item.kind == ev.ABANDONO and (f.get("observador"), f.get("usuario")) == ("1", self.me):
            # `observe --stop` from another terminal or machine: nothing more will come.
            self.app.say(f"No longer observing {self.gid}.")
            self.done = True
        else:
            self.app.say(describe(item, self.me, self.players))
        if item.kind == ev.FINALIZACION:
            self.done = True
        self.app.out.flush()

    def unreadable(self, error: MalformedEvent) -> None:
        self.app.warn(f"an event this client cannot read was skipped: {error}")
        if error.cursor is not None:
            self.cursor = error.cursor


def game_of(app: App) -> str:
    """The game the command names: an id, a number, or an opponent in the local data."""
    path = app.cache_file
    if not path.exists():
        return app.resolve_game(None, app.args.game)
    with app.open_cache(create=False) as cache:
        return app.resolve_game(cache, app.args.game)


def cmd_observe(app: App) -> int:
    gid = game_of(app)
    if app.args.stop:
        with app.session() as client:
            try:
                client.obsf(gid)
            except ObserveRefused as e:
                raise CliError(f"you do not observe {gid} ({e.code} {e.name})") from None
        app.say(f"No longer observing {gid}.")
        return EXIT_OK
    app.credentials()
    handler = Observe(app, gid)
    try:
        with stopped_by_sigterm():
            follow(app, handler)
    except KeyboardInterrupt:
        return EXIT_OK
    except ProtocolFailure as e:
        raise _no_stream(app, e) from None
    return EXIT_OK


def cmd_observers(app: App) -> int:
    gid = game_of(app)
    with app.session() as client:
        names = client.obsl(gid)
    if names:
        app.say(f"Observing {gid}: {', '.join(names)}.")
    else:
        app.say(f"Nobody observes {gid}.")
    return EXIT_OK


# -- chat --------------------------------------------------------------------------------


def cmd_chat(app: App) -> int:
    gid = game_of(app)
    words = app.args.text
    if words:
        text = " ".join(words)
        if not text.strip():
            raise CliError("an empty message: give some text, or none to read", EXIT_USAGE)
        with app.session() as client:
            try:
                client.chat(gid, text)
            except ValueError as e:
                raise CliError(str(e), EXIT_USAGE) from None
        app.say(f"Said in {gid}: {text}")
        return EXIT_OK
    with app.session() as client:
        _fecha, messages = client.chle(gid, 0)
    if not messages:
        app.say(f"No messages in {gid}.")
    for m in messages:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(m.at_ms / 1000))
        channel = "players" if m.channel == CHANNEL_PLAYERS else "observers"
        app.say(f"{stamp}  {channel:<9}  {m.user}: {m.text}")
    return EXIT_OK


# -- seeks -------------------------------------------------------------------------------


def cmd_seek(app: App) -> int:
    control = seek_control(app.args.time) or "none"
    private = app.args.private
    with app.open_cache(create=True) as cache, app.session() as client:
        try:
            gid = client.busc(control, private=private)
        except SeekExists as e:
            # The server says which: that control sought already, or its cap on seeks.
            raise CliError(
                f"{e.reason} ({e.code} {e.name}); `ajedrez seeks` lists the seeks"
            ) from None
        if gid is not None:
            st = sync_game(client, cache, gid).status
            with cache.transaction():
                cache.remove_challenges(st.opponent)
            held = cache.clock(gid)
            if held is not None:  # corr pairs at the control the game got
                control = held.status.control
    terms = ("no clock" if describe_control(control) == "no clock" else control_text(control)) + (
        ", private" if private else ""
    )
    if gid is None:
        app.say(
            f"Seeking a game ({terms}). It starts when another player seeks the same time "
            "control: `ajedrez watch` tells you at once, `ajedrez sync` later. "
            "`ajedrez unseek` withdraws the seek."
        )
        if live_control(control):
            # The server withdraws a live seek with its owner's last session.
            app.say(
                "A live seek lasts only while you are connected: keep `ajedrez watch` "
                "running, or the server withdraws it once your last session ends."
            )
        return EXIT_OK
    if st.color == WHITE:
        first = f"Your move: ajedrez move {gid} MOVE"
    else:
        first = f"{st.opponent} moves first."
    app.say(
        f"Paired at once: game {gid} started ({terms}), you play {color_name(st.color)} "
        f"against {st.opponent}. {first}"
    )
    return EXIT_OK


def cmd_unseek(app: App) -> int:
    control = seek_control(app.args.time)
    with app.session() as client:
        try:
            client.busr(control)
        except NoSeek as e:
            which = f" with time control {control}" if control else ""
            raise CliError(f"you have no seek{which} to withdraw ({e.code} {e.name})") from None
    app.say(f"Seek for {control} withdrawn." if control else "Your seeks are withdrawn.")
    return EXIT_OK


def cmd_seeks(app: App) -> int:
    with app.session() as client:
        seeks = client.busl()
    if not seeks:
        app.say("No seeks waiting. `ajedrez seek --time CONTROL` makes one.")
        return EXIT_OK
    rows = [[s.user, control_text(s.control), "you" if s.user == app.user else ""] for s in seeks]
    app.say(table(rows, ["PLAYER", "TIME CONTROL", ""]))
    return EXIT_OK


# -- hints -------------------------------------------------------------------------------


def cmd_hint(app: App) -> int:
    gid = game_of(app)
    square = app.args.square.lower()
    try:
        chess.parse_square(square)
    except ValueError:
        raise CliError(
            f"invalid square {app.args.square!r}: a file a-h and a rank 1-8, as e2", EXIT_USAGE
        ) from None
    with app.session() as client:
        targets = client.hovr(gid, square)
    if targets:
        app.say(f"{gid}: the piece on {square} can move to {', '.join(targets)}.")
    else:
        app.say(
            f"{gid}: nothing on {square} can move now (an empty square, a piece of the side "
            "not to move, or a piece with no legal move)."
        )
    return EXIT_OK
