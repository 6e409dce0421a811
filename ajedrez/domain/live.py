"""Live play (docs/protocol.md section 4, "Live play"): observers, chat, seeks,
legal-move hints and takeback, written against the store's protocol (``ports.py``).
Every change runs in one transaction and emits its events (``events.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import chess

from ajedrez.domain import clocks, events, rules
from ajedrez.domain.blocking import refuse_blocked, refuse_blocked_by_players
from ajedrez.domain.clocks import Clock, ClockRules, control_from
from ajedrez.domain.errors import Conflict, Failure, Refusal
from ajedrez.domain.ports import GameRecord, Store, StoreTx
from ajedrez.domain.timecontrol import (
    ANY_CORRESPONDENCE,
    ANY_CORRESPONDENCE_GAME,
    TimeControl,
    control_name,
    parse_control,
)
from ajedrez.domain.values import BLACK, OBSERVER, STATUS_ACTIVE, WHITE, game_name

CHAT_MAX = 500  # characters in a message
CHAT_WINDOW_MS = 60_000
PLAYERS = "J"  # chat channels: the players', the observers'
OBSERVERS = "O"
GAMES_IN_PLAY = 50  # games listed for a spectator to choose from
SEEKS_PER_PLAYER = 3  # waiting seeks one user may hold (the seeks_per_player setting)


@dataclass(frozen=True)
class ChatLine:
    at_ms: int
    channel: str
    ply: int
    user: str
    text: str

    def encode(self) -> str:
        return f"{self.at_ms}:{self.channel}:{self.ply}:{self.user}:{self.text}"


def chat_comment(user: str, channel: str, text: str) -> str:
    """A message as a PGN comment: ``ana: good luck``, an observer's marked."""
    return f"{user} (whisper): {text}" if channel == OBSERVERS else f"{user}: {text}"


def reader_color(tx: StoreTx, row: GameRecord, caller_id: int) -> str:
    """The caller's colour in the game, or ``OBSERVER``; anyone else is a stranger
    (``rules.stranger``)."""
    if caller_id in (row.white_id, row.black_id):
        return rules.color_of(row, caller_id, row.id)
    if tx.observes(row.id, caller_id):
        return OBSERVER
    raise rules.stranger(row, row.id, f"you neither play in nor observe {game_name(row.id)}")


class Live:
    def __init__(
        self,
        store: Store,
        clock: Clock,
        clock_rules: ClockRules,
        chat_per_minute: int = 10,
        seeks_per_player: int = SEEKS_PER_PLAYER,
    ) -> None:
        self.store = store
        self.clock = clock
        self.clock_rules = clock_rules
        self.chat_per_minute = chat_per_minute
        self.seeks_per_player = seeks_per_player

    # -- observers -------------------------------------------------------------------------

    def observe(self, caller_id: int, game_id: int) -> None:
        try:
            with self.store.writing() as tx:
                row = existing_game(tx, game_id)
                if caller_id in (row.white_id, row.black_id):
                    raise Failure(Refusal.OBSERVE_REFUSED, f"you play in {game_name(game_id)}")
                if row.private:  # before anything else that would tell it exists
                    raise rules.no_game(game_id)
                rules.require_active(row, game_id)
                refuse_blocked_by_players(tx, row, caller_id, "observers")
                if tx.observes(game_id, caller_id):
                    return
                tx.add_observer(game_id, caller_id)
                me = (caller_id, tx.user_name(caller_id) or "")
                tx.emit(events.observer_joined(self.clock.now_ms(), row, game_id, me))
        except Conflict:
            return  # another session of the caller's got there first: observing, once

    def stop_observing(self, caller_id: int, game_id: int) -> None:
        with self.store.writing() as tx:
            row = existing_game(tx, game_id)
            if not tx.drop_observer(game_id, caller_id):
                if row.private and not rules.plays(row, caller_id):
                    raise rules.no_game(game_id)
                raise Failure(Refusal.OBSERVE_REFUSED, f"you do not observe {game_name(game_id)}")
            me = (caller_id, tx.user_name(caller_id) or "")
            tx.emit(events.observer_left(self.clock.now_ms(), row, game_id, me))

    def observers(self, caller_id: int, game_id: int) -> list[str]:
        with self.store.reading() as tx:
            row = existing_game(tx, game_id)
            reader_color(tx, row, caller_id)
            return tx.observer_names(game_id)

    # -- chat ------------------------------------------------------------------------------

    def say(self, caller_id: int, game_id: int, text: str) -> None:
        with self.store.writing() as tx:
            row = existing_game(tx, game_id)
            color = reader_color(tx, row, caller_id)
            if color == OBSERVER:
                rules.require_active(row, game_id)
                refuse_blocked_by_players(tx, row, caller_id, "messages")
            else:
                white = color == WHITE
                other_id, other = (row.black_id, row.black) if white else (row.white_id, row.white)
                refuse_blocked(tx, caller_id, other_id, other, "messages")
            # The user's row is locked while their messages are counted, so that messages
            # sent at once from several sessions are counted one after the other.
            tx.lock_user(caller_id)
            now = self.clock.now_ms()
            said = tx.chats_since(caller_id, now - CHAT_WINDOW_MS)
            if said >= self.chat_per_minute:
                raise Failure(
                    Refusal.CHAT_RATE,
                    f"at most {self.chat_per_minute} messages a minute; try again in a minute",
                )
            channel = OBSERVERS if color == OBSERVER else PLAYERS
            tx.add_chat(game_id, caller_id, channel, row.next_ply - 1, now, text)
            me = (caller_id, tx.user_name(caller_id) or "")
            tx.emit(events.chat_said(now, row, game_id, me, text, channel == OBSERVERS))

    def chat_since(self, caller_id: int, game_id: int, since: int) -> tuple[int, list[ChatLine]]:
        """CHLE: (fecha to send back, the messages the caller may read since ``since``)."""
        with self.store.syncing() as tx:
            row = existing_game(tx, game_id)
            color = reader_color(tx, row, caller_id)
            lines = tx.chat(game_id, since, self.readable(row, color))
            return tx.stamp, [ChatLine(*line) for line in lines]

    def chat_log(self, game_id: int, by: str | None = None) -> list[ChatLine]:
        """Every message of the game, both channels, for the administrator (``by``, who
        is recorded in the audit trail)."""
        with self.store.writing() as tx:
            existing_game(tx, game_id)
            lines = [ChatLine(*line) for line in tx.chat(game_id)]
            tx.audit(by, "games chat", game_name(game_id), f"{len(lines)} message(s) read")
        return lines

    @staticmethod
    def readable(row: GameRecord, color: str) -> tuple[str, ...]:
        """The channels a reader of ``color`` (or an observer) may read: the observers'
        reach the players once the game is over."""
        if color == OBSERVER:
            return (OBSERVERS,)
        return (PLAYERS,) if row.status == STATUS_ACTIVE else (PLAYERS, OBSERVERS)

    # -- seeks -----------------------------------------------------------------------------

    def seek(self, caller_id: int, control_text: str, private: bool) -> int | None:
        """BUSC: the new game's id when paired at once, else None (the seek waits).
        ``corr`` (``ANY_CORRESPONDENCE``) takes any correspondence control; a
        correspondence seek pairs with such a seek too, at its own control."""
        any_control = control_text == ANY_CORRESPONDENCE
        control = None if any_control else parse_control(control_text)
        self.clock_rules.check(control)
        name = ANY_CORRESPONDENCE if any_control else control_name(control)
        correspondence = any_control or (control is not None and control.correspondence)
        with self.store.writing() as tx:
            tx.serialize()
            me = tx.user_ref(caller_id)
            if me is None or not me.active:
                raise Failure(Refusal.NO_SUCH_USER, "your account is closed")
            if tx.has_seek(caller_id, name):
                raise Failure(Refusal.SEEK_EXISTS, f"you already seek a game of {name}")
            now = self.clock.now_ms()
            live = control is not None and not control.correspondence
            if correspondence:
                found = tx.correspondence_seeks(None if any_control else name, caller_id)
            else:
                found = tx.seeks_of_control(name, caller_id)
            for seek in found:
                if live and tx.absent(seek.user_id, now):
                    # Its owner left (a process that died took the last session along):
                    # a game now would run an absent player's clock.
                    tx.drop_seek(seek.id)
                    continue
                lo, hi = sorted((caller_id, seek.user_id))
                if tx.active_game_between(lo, hi) or tx.blocks([lo], hi) or tx.blocks([hi], lo):
                    continue
                tx.drop_seek(seek.id)
                white, black = seek.user_id, caller_id  # who sought first plays white
                names = {caller_id: me.name, white: tx.user_name(white) or ""}
                players = (white, names[white]), (black, names[black])
                if correspondence:
                    control = _paired_control(control, seek)
                return start_game(tx, now, *players, control, private or seek.private, caller_id)
            # Checked only when the seek is to wait: one that pairs at once holds nothing.
            if tx.seek_count(caller_id) >= self.seeks_per_player:
                raise Failure(
                    Refusal.SEEK_LIMIT,
                    f"you already hold {self.seeks_per_player} seeks, the most allowed; "
                    "withdraw one (BUSR) first",
                )
            tx.add_seek(caller_id, name, control, private)
            return None

    def seeks(self) -> list[tuple[str, str]]:
        with self.store.reading() as tx:
            return tx.seeks()

    def unseek(self, caller_id: int, control_text: str | None) -> int:
        if control_text is None or control_text == ANY_CORRESPONDENCE:
            name = control_text
        else:
            name = control_name(parse_control(control_text))
        with self.store.writing() as tx:
            dropped = tx.drop_seeks(caller_id, name)
        if not dropped:
            what = "any time control" if name is None else name
            raise Failure(Refusal.NO_SUCH_SEEK, f"you seek no game of {what}")
        return dropped

    def games_in_play(self, limit: int = GAMES_IN_PLAY) -> list[tuple[int, str, str]]:
        """(id, white, black) of the newest active games anybody may observe."""
        with self.store.reading() as tx:
            return tx.games_in_play(limit)

    # -- hints -----------------------------------------------------------------------------

    def hints(self, caller_id: int, game_id: int, square: str) -> list[str]:
        """HOVR: the squares the piece on ``square`` may move to, sorted a1..h8."""
        with self.store.reading() as tx:
            row = existing_game(tx, game_id)
            reader_color(tx, row, caller_id)
        rules.require_active(row, game_id)
        board = chess.Board(row.fen)
        origin = chess.parse_square(square)
        targets = {m.to_square for m in board.legal_moves if m.from_square == origin}
        return [chess.square_name(s) for s in sorted(targets)]


def _paired_control(mine: TimeControl | None, seek: Any) -> TimeControl:
    """The control of a game two correspondence seeks make: the specific one's (the
    waiting seek's first), ``ANY_CORRESPONDENCE_GAME`` when both take any."""
    if seek.control != ANY_CORRESPONDENCE:
        theirs = control_from(seek.tc_initial_ms, seek.tc_increment_ms, seek.tc_cap_ms)
        if theirs is not None:
            return theirs
    if mine is not None:
        return mine
    control = parse_control(ANY_CORRESPONDENCE_GAME)
    assert control is not None
    return control


def start_game(
    tx: StoreTx,
    now: int,
    white: tuple[int, str],
    black: tuple[int, str],
    control: TimeControl | None,
    private: bool,
    actor_id: int,
) -> int:
    """A new game between the two, white's clock started; emits INICIO_PARTIDA."""
    clock: dict[str, object] = clocks.control_columns(control)
    if control is not None:
        ids = [white[0], black[0]]
        leaves = tx.leaves_until(ids, now) if control.correspondence else {}
        clock |= clocks.start(control, now, leaves.get(white[0])).columns()
        clock |= clocks.leave_columns(WHITE, leaves.get(white[0]))
        clock |= clocks.leave_columns(BLACK, leaves.get(black[0]))
    game_id = tx.add_game(white[0], black[0], chess.STARTING_FEN, clock | {"private": private})
    name = control_name(control)
    tx.emit(events.game_started(now, game_id, white, black, name, actor_id, private))
    return game_id


def existing_game(tx: StoreTx, game_id: int, *, lock: bool = False) -> GameRecord:
    """The game's row (``lock``: held for the transaction), or 830."""
    row = tx.game(game_id, lock=lock)
    if row is None:
        raise rules.no_game(game_id)
    return row
