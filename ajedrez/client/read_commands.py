"""The commands that read (games, show, status, challenges, players, ranking, export):
they show the local data, offline, and say how old it is; with ``--sync`` they refresh it
first. And ``sync``, which refreshes it."""

from __future__ import annotations

import time
from pathlib import Path

import chess

from ajedrez.client.app import EXIT_OK, App, CliError
from ajedrez.client.cache import Cache, CachedGame
from ajedrez.client.chessboard import (
    color_name,
    end_reason_guess,
    ending,
    move_table,
    render_board,
    result_tag,
)
from ajedrez.client.clocks import clock_lines, control_text, local_ms, span
from ajedrez.client.output import (
    REMOVED_NOTE,
    REMOVED_UNSYNCED,
    ago,
    clock_column,
    draw_offer,
    game_state,
    numbered,
    players_of,
    shown_clock,
    status_line,
    table,
    whose_turn,
)
from ajedrez.client.protocol import Client
from ajedrez.client.sync import board_of, learn_facts, sync_all
from ajedrez.domain.export import game_pgn
from ajedrez.domain.timecontrol import TimeControl, parse_control
from ajedrez.domain.values import other_color


def cmd_games(app: App) -> int:
    with app.open_cache(create=app.args.sync) as cache:
        app.maybe_sync(cache)
        games = cache.games()
        if app.args.active:
            games = [g for g in games if g.status == 0]
        clocks = cache.clocks()
        now = local_ms()
        rows = []
        for g in games:
            board = board_of(cache, g.id)
            held = clocks.get(g.id)
            turn, status = game_state(g, board, held.status.end_reason if held else None)
            rows.append((g, board, turn, status, clock_column(g, held, now)))
        sort = app.args.sort

        def key(item: tuple[CachedGame, chess.Board, str, str, str]) -> tuple[object, ...]:
            g, _b, turn, _s, _c = item
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
            # The CLOCK column only when a game listed has a clock: without clocks the
            # list stays as it was.
            timed = any(cell for *_rest, cell in rows)
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
                            *([cell] if timed else []),
                        ]
                        for g, b, turn, status, cell in rows
                    ],
                    ["GAME", "OPPONENT", "YOU", "TURN", "MOVE", "STATUS", "LAST CHANGE"]
                    + (["CLOCK"] if timed else []),
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


def cmd_show(app: App) -> int:
    with app.open_cache(create=app.args.sync) as cache:
        app.maybe_sync(cache)
        g = cached_game(app, cache, app.args.game)
        moves = cache.moves(g.id)
        board = board_of(cache, g.id)
        last = board.peek() if board.move_stack else None
        bottom = other_color(g.color) if app.args.flip else g.color
        app.say(f"{g.id}  {g.white} (white) vs {g.black} (black)")
        app.say()
        app.say(
            render_board(board, bottom=bottom, coordinates=app.args.coordinates, last_move=last)
        )
        app.say()
        if moves:
            m = moves[-1]
            who = "you" if m.color == g.color else g.opponent
            app.say(f"Last move: {numbered(m.ply, m.san)} ({m.jugada}) by {who}")
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
        clock = shown_clock(g, cache.clock(g.id), local_ms())
        if clock is not None:
            for line in clock_lines(clock, players_of(g)):
                app.say(line)
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
            state = "active, " + whose_turn(g)
        else:
            state = "finished: " + (ending(board, st, cache.end_reason(g.id)) or "")
        draw = draw_offer(g) or "none"
        clock = clock_column(g, cache.clock(g.id), local_ms())
        rows = [
            ("Game", g.id),
            ("White", g.white),
            ("Black", g.black),
            ("You play", color_name(g.color)),
            ("Status", state),
            ("Next ply", f"{g.next_ply} (move {board.fullmove_number})"),
            ("Draw offer", draw),
            ("Result", result_tag(not st.active, g.ganador)),
            *([("Clock", clock)] if clock else []),
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
    with app.open_cache(create=True) as cache:
        if cache.last_sync is None:
            # Never synced here: an empty list would say "no challenges" when there may
            # be some, which is what one asks after being told of one. Sync first; with
            # nothing to fall back on, a server that cannot be reached is an error.
            with app.session() as client:
                sync_all(client, cache)
        else:
            app.maybe_sync(cache)
        received = cache.challenge_controls("in")
        sent = cache.challenge_controls("out")
        if received:
            app.say("Challenges to you:")
            for name, control in received.items():
                app.say(
                    f"  {name}   {control_text(control)}   "
                    f"(ajedrez accept {name} --color B|N, or ajedrez decline {name})"
                )
        else:
            app.say("No challenges to you.")
        if sent:
            app.say("Challenges you sent:")
            for name, control in sent.items():
                app.say(f"  {name}   {control_text(control)}")
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
    if app.args.from_server or app.args.chat:
        # The local data holds no chat: the messages come with the server's PGN.
        cache = app.open_cache(create=True)
        gid = app.resolve_game(cache, app.args.game)
        cache.close()
        with app.session() as client:
            text = client.pgnx(gid, chat=app.args.chat)
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

    The start and end days, the end reason and each move's clock come from the server's
    PGN, which sync fetches once for a new game and once when it ends; a game without them
    gets what the local copy can tell: an unknown start, its last change as the end, the
    reason RELJ or the final position and solicitudes show, no clock comments. The time
    control comes from RELJ.
    """
    board = board_of(cache, g.id)
    st = g.status_record
    facts = cache.facts(g.id)
    held = cache.clock(g.id)
    moves = cache.moves(g.id)
    banks = [m.clock_ms for m in moves]
    started = facts.started if facts else None
    ended = end_reason = None
    if not st.active:
        if facts is not None and facts.ended is not None:
            ended, end_reason = facts.ended, facts.end_reason
        else:
            ended, end_reason = g.changed, end_reason_guess(board, st, cache.end_reason(g.id))
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
        control=_control_of(held.status.control) if held else None,
        # Every move's clock or none: they come from the server's PGN, which sync reads
        # when a game reaches this machine and when it ends, not at every move.
        clock_ms=banks if banks and None not in banks else None,
    )


def _control_of(name: str) -> TimeControl | None:
    try:
        return parse_control(name)
    except ValueError:  # a control this client cannot read: exported without the tag
        return None


def cmd_sync(app: App) -> int:
    with app.open_cache(create=True) as cache, app.session() as client:
        if app.args.full:
            cache.reset()
        report = sync_all(client, cache, full=app.args.full)
        app.say(f"Synced with {app.settings.server} as {app.user}.")
        app.say(f"Players: {report.players} ({report.new_players} new).")
        received = cache.challenge_names("in")
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
            clocks = cache.clocks()
            now = local_ms()

            def left(g: CachedGame) -> str:
                clock = shown_clock(g, clocks.get(g.id), now)
                if clock is None or clock.running != g.color:
                    return ""
                return f", {span(clock.bank(g.color))} left"

            app.say(
                "Your turn: " + ", ".join(f"{g.id} ({g.opponent}{left(g)})" for g in mine) + "."
            )
    return EXIT_OK
