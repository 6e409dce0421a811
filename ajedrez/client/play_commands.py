"""The commands that play: challenge, accept, decline, move, draw, resign, claim. Each
logs in, acts, and brings the game or the challenges in the local data up to date."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

from ajedrez.client.app import EXIT_OK, EXIT_USAGE, App, CliError
from ajedrez.client.cache import Cache
from ajedrez.client.chessboard import MoveInputError, color_name, jgda_for, parse_move, render_board
from ajedrez.client.clocks import control_text
from ajedrez.client.errors import (
    ClientError,
    ConnectionLost,
    NoChallenge,
    NoSuchGame,
    NoSuchUser,
    ProtocolFailure,
    StalePly,
    TimeControlChanged,
)
from ajedrez.client.output import finished_message, numbered
from ajedrez.client.protocol import Client
from ajedrez.client.sync import board_of, record_own_move, sync_game
from ajedrez.domain.timecontrol import ANY_CORRESPONDENCE, control_name, parse_control
from ajedrez.domain.values import BLACK, WHITE
from ajedrez.domain.views import GameStatus, MoveRecord
from ajedrez.espol.codes import Reply


def parse_color(text: str) -> str:
    words = {"white": WHITE, "blancas": WHITE, "black": BLACK, "negras": BLACK}
    if text in (WHITE, BLACK):
        return text
    if text.lower() in words:
        return words[text.lower()]
    raise CliError(f"invalid colour {text!r}: B (white, blancas) or N (black, negras)", EXIT_USAGE)


def seek_control(text: str | None) -> str | None:
    """``seek``'s and ``unseek``'s ``--time``: a time control, or ``corr`` (any
    correspondence control)."""
    return text if text == ANY_CORRESPONDENCE else time_control(text)


def time_control(text: str | None) -> str | None:
    """``--time``: the control as the protocol names it (``3d+3d/3d`` is ``3d``), checked
    here so that a typing error is named without a login; None without ``--time``."""
    if text is None:
        return None
    try:
        return control_name(parse_control(text))
    except ValueError as e:
        raise CliError(f"--time: {e}", EXIT_USAGE) from None


def cmd_challenge(app: App) -> int:
    target = app.args.target
    control = time_control(app.args.time)
    with app.open_cache(create=True) as cache, app.session() as client:
        try:
            client.juego(target, control)
        except NoSuchUser as e:
            raise CliError(f"no active user '{target}' to challenge ({e.code} {e.name})") from None
        except ProtocolFailure as e:
            if control is not None and e.code == Reply.F_NFIELDS:
                raise CliError(
                    f"the server at {app.settings.server} takes no time control: it predates "
                    f"clocks; challenge without --time ({e.code} {e.name})"
                ) from None
            raise
        with cache.transaction():
            # Without --time the server's default applies, which only the next sync tells.
            cache.add_challenges([target], "out", control=control)
    timed = "" if control is None else f" with time control {control_text(control)}"
    app.say(
        f"Challenge sent to {target}{timed}. When {target} accepts, the game appears after "
        "`ajedrez sync` (`ajedrez games`)."
    )
    return EXIT_OK


def cmd_accept(app: App) -> int:
    target = app.args.target
    color = parse_color(app.args.color)
    with app.open_cache(create=True) as cache, app.session() as client:
        # The control the user was shown (`ajedrez challenges`): the server accepts only
        # if the challenge still has it. Never synced, nothing was shown: plain ACEP.
        control = cache.challenge_controls("in").get(target)
        try:
            gid = client.acep(color, target, control)
        except NoChallenge as e:
            with cache.transaction():
                cache.remove_challenges(target, "in")
            raise CliError(
                f"no open challenge from '{target}' to you ({e.code} {e.name}); "
                "`ajedrez challenges --sync` lists the open ones"
            ) from None
        except TimeControlChanged as e:
            raise CliError(
                f"the challenge from {target} changed since you last synced: {e.reason} "
                f"({e.code} {e.name}); nothing accepted. Look again with "
                "`ajedrez challenges --sync`"
            ) from None
        with cache.transaction():
            cache.remove_challenges(target)
        sync_game(client, cache, gid)
        held = cache.clock(gid)
    first = "Your move" if color == WHITE else f"{target} moves first"
    timed = (
        f", time control {control_text(held.status.control)}"
        if held is not None and held.has_clock
        else ""
    )
    app.say(
        f"Game {gid} started: you play {color_name(color)} against {target}{timed}. {first}"
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


def fresh_game(client: Client, cache: Cache, gid: str) -> GameStatus:
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


def game_to_play(app: App, cache: Cache) -> str:
    """The id of the game the command names. A game the local copy knows has ended stays
    ended (a game id is never given twice): say so without asking the server, which also
    works offline."""
    gid = app.resolve_game(cache, app.args.game)
    g = cache.game(gid)
    if g is not None and not g.status_record.active:
        raise CliError(finished_message(cache, g.status_record))
    return gid


def active_game(client: Client, cache: Cache, gid: str) -> GameStatus:
    """The game's status fresh from the server, refusing the command when it has ended."""
    st = fresh_game(client, cache, gid)
    if not st.active:
        raise CliError(finished_message(cache, st))
    return st


def cmd_move(app: App) -> int:
    with app.open_cache(create=True) as cache:
        gid = game_to_play(app, cache)
        with app.session() as client:
            st = active_game(client, cache, gid)
            opp = st.opponent
            if st.turn != st.color:
                raise CliError(
                    f"not your turn in {gid}: {opp} ({color_name(st.turn)}) is to move; "
                    "`ajedrez sync` later to see their move"
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
                fresh_game(client, cache, gid)
                raise CliError(
                    f"{naming(gid, e.reason)}: the game changed meanwhile; look with "
                    f"`ajedrez show {gid}` and play again"
                ) from None
            record_own_move(
                cache, gid, MoveRecord(j.ply, j.jugada, 0, j.posicion, j.promocion), j.san
            )
            # The move is stored; if this fails, the status comes with the next sync.
            with suppress(ClientError):
                st = fresh_game(client, cache, gid)
        app.say(f"{gid}: you played {numbered(j.ply, j.san)} ({j.jugada}).")
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
    return _ask_or_answer(
        app,
        "offer",
        Client.tbls,
        Client.rtbl,
        {
            "offer": "Draw offered to {opp} in {gid}; play goes on: a move by {opp} declines it.",
            "accept": "Draw agreed in {gid}: the game is over, 1/2-1/2.",
            "decline": "Draw offer declined in {gid}; play goes on.",
        },
    )


def cmd_takeback(app: App) -> int:
    return _ask_or_answer(
        app,
        "ask",
        Client.atrs,
        Client.ratr,
        {
            "ask": "Asked {opp} to take back your last move in {gid}; it stands until {opp} "
            "accepts (a move by {opp} declines).",
            "accept": "Takeback accepted in {gid}: {opp}'s last move is undone; {opp} to move.",
            "decline": "Takeback declined in {gid}; the move stands.",
        },
    )


def _ask_or_answer(
    app: App,
    asking: str,
    ask: Callable[[Client, str, str], None],
    answer: Callable[[Client, str, bool, str], None],
    said: dict[str, str],
) -> int:
    """A request to the opponent (``app.args.action`` ``asking``), or the answer to
    theirs (``accept``, ``decline``); ``said``: what is printed for each, with ``{gid}``
    and ``{opp}``."""
    action = app.args.action
    with app.open_cache(create=True) as cache:
        gid = game_to_play(app, cache)
        with app.session() as client:
            opp = active_game(client, cache, gid).opponent
            if action == asking:
                ask(client, gid, opp)
            else:
                answer(client, gid, action == "accept", opp)
            fresh_game(client, cache, gid)
    app.say(said[action].format(gid=gid, opp=opp))
    return EXIT_OK


def cmd_resign(app: App) -> int:
    with app.open_cache(create=True) as cache:
        gid = game_to_play(app, cache)
        if not app.args.yes and app.stdin.isatty():
            answer = input(f"Resign {gid}? [y/N] ")
            if answer.strip().lower() not in ("y", "yes", "s", "si", "sí"):
                raise CliError("not confirmed; nothing done")
        with app.session() as client:
            st = active_game(client, cache, gid)
            client.rend(gid, st.opponent)
            fresh_game(client, cache, gid)
    app.say(f"You resigned {gid}; {st.opponent} wins.")
    return EXIT_OK


def cmd_claim(app: App) -> int:
    with app.open_cache(create=True) as cache:
        gid = game_to_play(app, cache)
        with app.session() as client:
            st = active_game(client, cache, gid)
            client.finp(gid, st.opponent)
            st = fresh_game(client, cache, gid)
        app.say(f"Draw claimed: {finished_message(cache, st)}")
    return EXIT_OK
