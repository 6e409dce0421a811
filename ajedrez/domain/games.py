"""Challenges and games: what each command may do and what it changes, written against
the store's protocol (``ports.py``). Every change runs in one transaction; every rule
of chess is python-chess's, through ``rules.py``. A move's own path (JGDA) is the
store's (``store/moves.py``), which asks ``rules`` to check each move.
"""

from __future__ import annotations

from collections.abc import Callable

import chess

from ajedrez.domain import clocks, events, rules
from ajedrez.domain.clocks import Clock, ClockRules, SystemClock
from ajedrez.domain.errors import Conflict, Failure, Refusal
from ajedrez.domain.export import LEFT_SERVICE, game_pgn
from ajedrez.domain.fen import position_fen
from ajedrez.domain.finish import finish, timed_out
from ajedrez.domain.live import (
    OBSERVERS,
    PLAYERS,
    Live,
    chat_comment,
    existing_game,
    reader_color,
    start_game,
)
from ajedrez.domain.ports import GameRecord, Store, StoreTx
from ajedrez.domain.timecontrol import TimeControl, control_name, parse_control
from ajedrez.domain.timekeeping import Timekeeping
from ajedrez.domain.values import (
    BLACK,
    REMOVED_CHALLENGE,
    REQ_ACCEPT,
    REQ_NONE,
    REQ_OFFER,
    REQ_RESIGN,
    WHITE,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_WHITE,
    color_of_ply,
    game_name,
    other_color,
)
from ajedrez.domain.views import GameSummary

RANKING_SIZE = 10


class Games:
    def __init__(
        self, store: Store, clock: Clock | None = None, clock_rules: ClockRules | None = None
    ) -> None:
        self.store = store
        self.clock = clock or SystemClock()
        self.clock_rules = clock_rules or ClockRules()
        self.time = Timekeeping(store, self.clock, self.clock_rules)
        self.live = Live(store, self.clock, self.clock_rules)

    # -- challenges --------------------------------------------------------------------

    def challenge(
        self,
        caller_id: int,
        target: str,
        control_text: str | None = None,
        private: bool = False,
    ) -> None:
        """JUEG; ``control_text``: the time control as sent (None: the server's default);
        ``private``: the game will refuse observers."""
        if control_text is None:
            control = self.clock_rules.default_control
        else:
            control = parse_control(control_text)
        self.clock_rules.check(control)
        try:
            with self.store.writing() as tx:
                me = tx.user_ref(caller_id)
                if me is None or not me.active:
                    name = me.name if me is not None else caller_id
                    raise Failure(Refusal.NO_SUCH_USER, f"your account '{name}' is closed")
                target_id = _active_user_id(tx, target)
                if target_id == caller_id:
                    raise Failure(Refusal.SELF_CHALLENGE, "you cannot challenge yourself")
                lo, hi = sorted((caller_id, target_id))
                if tx.challenge_between(lo, hi):
                    raise Failure(
                        Refusal.CHALLENGE_EXISTS, f"a challenge between you and '{target}' is open"
                    )
                if tx.active_game_between(lo, hi):
                    raise Failure(
                        Refusal.GAME_EXISTS, f"you already have an active game with '{target}'"
                    )
                tx.add_challenge(caller_id, target_id, control, private)
                tx.emit(
                    events.challenge_made(
                        self.clock.now_ms(),
                        (caller_id, me.name),
                        (target_id, target),
                        control_name(control),
                        private,
                    )
                )
        except Conflict:
            raise Failure(
                Refusal.CHALLENGE_EXISTS, f"a challenge between you and '{target}' is open"
            ) from None

    def challengers_since(self, caller_id: int, since: int) -> tuple[int, list[tuple[str, str]]]:
        """TRAN: (fecha to send back, (user, time control) of the open challenges to me
        that are that recent)."""
        with self.store.syncing() as tx:
            found = tx.challengers_since(caller_id, since)
            return tx.stamp, [(name, control_name(control)) for name, control in found]

    def accept(
        self, caller_id: int, color: str, challenger: str, expected: str | None = None
    ) -> int:
        """ACEP: the challenged player picks the colour; returns the new game's id.
        ``expected``: the time control the caller saw (the challenge must have it)."""
        try:
            with self.store.writing() as tx:
                challenger_id = tx.user_id(challenger)
                taken = None
                if challenger_id is not None:
                    taken = tx.take_challenge(challenger_id, caller_id)
                if challenger_id is None or taken is None:
                    raise Failure(
                        Refusal.NO_SUCH_CHALLENGE, f"no open challenge from '{challenger}' to you"
                    )
                control: TimeControl | None = taken[0]
                private = taken[1]
                if expected is not None and parse_control(expected) != control:
                    raise Failure(
                        Refusal.TIME_CONTROL_DIFFERS,
                        f"the challenge from '{challenger}' has the time control "
                        f"{control_name(control)}, not {expected}",
                    )
                white, black = (
                    (caller_id, challenger_id) if color == WHITE else (challenger_id, caller_id)
                )
                names = {caller_id: tx.user_name(caller_id) or "", challenger_id: challenger}
                return start_game(
                    tx,
                    self.clock.now_ms(),
                    (white, names[white]),
                    (black, names[black]),
                    control,
                    private,
                    caller_id,
                )
        except Conflict:
            raise Failure(
                Refusal.GAME_EXISTS, f"you already have an active game with '{challenger}'"
            ) from None

    def decline(self, caller_id: int, other: str) -> None:
        """DECL: remove the open challenge between me and ``other``, whoever made it.
        Both players' clients learn of it through BAJA."""
        with self.store.writing() as tx:
            other_id = tx.user_id(other)
            makers: list[int] = []
            if other_id is not None:
                makers = tx.drop_challenges_between(*sorted((caller_id, other_id)))
            if other_id is None or not makers:
                raise Failure(
                    Refusal.NO_SUCH_CHALLENGE, f"no open challenge between you and '{other}'"
                )
            me = tx.user_name(caller_id) or ""
            tx.note_removals(REMOVED_CHALLENGE, [(caller_id, other), (other_id, me)])
            users = {caller_id: (caller_id, me), other_id: (other_id, other)}
            challenged = other_id if makers[0] == caller_id else caller_id
            tx.emit(
                events.challenge_closed(
                    self.clock.now_ms(), users[makers[0]], users[challenged], caller_id
                )
            )

    def open_challenges(self, caller_id: int) -> list[tuple[bool, str, str]]:
        """SOLI: (made by me, the other user, time control) of every open challenge,
        oldest first."""
        with self.store.reading() as tx:
            found = tx.open_challenges(caller_id)
        return [(made, name, control_name(control)) for made, name, control in found]

    def removals_since(self, caller_id: int, since: int) -> tuple[int, list[tuple[str, str]]]:
        """BAJA: (fecha to send back, (kind, subject) of what went away since fecha)."""
        with self.store.syncing() as tx:
            return tx.stamp, tx.removals_since(caller_id, since)

    # -- reading games -----------------------------------------------------------------

    def games_since(self, caller_id: int, since: int) -> tuple[int, list[GameSummary]]:
        """PPEN: my games (active and finished) created or changed since fecha."""
        with self.store.syncing() as tx:
            found = tx.games_since(caller_id, since)
            stamp = tx.stamp
        return stamp, [GameSummary(game_name(g), name, c, s) for g, name, c, s in found]

    def ranking(self, limit: int = RANKING_SIZE) -> list[tuple[str, int]]:
        with self.store.reading() as tx:
            return tx.ranking(limit)

    # -- draws, resignation ------------------------------------------------------------

    def offer_draw(self, caller_id: int, game_id: int, opponent: str) -> None:
        def offer(tx: StoreTx, row: GameRecord, color: str, now: int) -> None:
            if REQ_OFFER in (row.req_white, row.req_black):
                raise Failure(
                    Refusal.DRAW_OFFERED, f"a draw offer is already pending in {game_name(game_id)}"
                )
            if not rules.may_offer_draw(row, color):
                raise Failure(
                    Refusal.DRAW_OFFERED,
                    f"you offered a draw in {game_name(game_id)} since your last move: "
                    "one offer per move of yours, so offer again after your next move",
                )
            # Neither whose clock runs nor who may move changes (docs/protocol.md
            # section 5): the side to move plays on, and a move by the receiver declines.
            values = {rules.req_field(color): REQ_OFFER, rules.offer_field(color): row.next_ply}
            tx.update_game(game_id, **values)
            tx.emit(events.draw_offered(now, row, game_id, (caller_id, _name(row, color))))

        self._act(caller_id, game_id, opponent, offer)

    def answer_draw(self, caller_id: int, game_id: int, accept: bool, opponent: str) -> None:
        def answer(tx: StoreTx, row: GameRecord, color: str, now: int) -> None:
            theirs = rules.req_field(other_color(color))
            if getattr(row, theirs) != REQ_OFFER:
                raise Failure(
                    Refusal.NO_DRAW_OFFER,
                    f"your opponent has no draw offer pending in {game_name(game_id)}",
                )
            me = (caller_id, _name(row, color))
            tx.emit(events.draw_answered(now, row, game_id, me, accept))
            if accept:
                values = {rules.req_field(color): REQ_ACCEPT}
                finish(tx, row.id, row, WINNER_DRAW, "agreement", now, **values)
            else:
                tx.update_game(game_id, **{theirs: REQ_NONE})

        self._act(caller_id, game_id, opponent, answer)

    def resign(self, caller_id: int, game_id: int, opponent: str) -> None:
        def resign(tx: StoreTx, row: GameRecord, color: str, now: int) -> None:
            _forfeit(tx, row, color, "resignation", now)

        self._act(caller_id, game_id, opponent, resign)

    def claim_draw(self, caller_id: int, game_id: int, opponent: str) -> None:
        def claim(tx: StoreTx, row: GameRecord, _color: str, now: int) -> None:
            # Every repetition rule of python-chess looks back only to the last
            # irreversible move, at or before base_ply: this board answers as a full
            # replay would.
            board = rules.replay(row.base_fen, tx.moves(game_id, after=row.base_ply))
            if board.is_repetition(3):
                reason: chess.Termination = chess.Termination.THREEFOLD_REPETITION
            elif board.halfmove_clock >= 100:
                reason = chess.Termination.FIFTY_MOVES
            else:
                raise Failure(
                    Refusal.NO_CLAIM,
                    "no draw to claim: the position has not occurred three times and "
                    f"only {board.halfmove_clock // 2} moves by each side have passed "
                    "without a capture or pawn move (50 needed)",
                )
            finish(tx, row.id, row, WINNER_DRAW, rules.ending_name(reason), now)

        self._act(caller_id, game_id, opponent, claim)

    def _act(
        self,
        caller_id: int,
        game_id: int,
        opponent: str,
        action: Callable[[StoreTx, GameRecord, str, int], None],
    ) -> None:
        """Run ``action`` on the caller's active game, in one transaction, unless the
        game's clock ran out: it then ends on time (committed) and the action is refused."""
        with self.store.writing() as tx:
            row, color = _own_active_game(tx, caller_id, game_id, opponent)
            now = self.clock.now_ms()
            if not clocks.expired(row, now, self.clock_rules):
                action(tx, row, color, now)
                return
            refused = timed_out(tx, game_id, row, now, color)
        raise refused  # once the end on time is committed

    # -- takeback ----------------------------------------------------------------------

    def ask_takeback(self, caller_id: int, game_id: int, opponent: str) -> None:
        def ask(tx: StoreTx, row: GameRecord, color: str, now: int) -> None:
            last = row.next_ply - 1
            if last < 1 or color_of_ply(last) != color:
                raise Failure(
                    Refusal.TAKEBACK_REFUSED,
                    f"the last move in {game_name(game_id)} is not yours: only a move your "
                    "opponent has not answered can be taken back",
                )
            if REQ_OFFER in (row.req_white, row.req_black):
                raise Failure(
                    Refusal.TAKEBACK_REFUSED, f"a draw offer is pending in {game_name(game_id)}"
                )
            pending = tx.takeback(game_id)
            if pending is not None and pending.ply == last:
                raise Failure(
                    Refusal.TAKEBACK_REFUSED, f"a takeback is already asked in {game_name(game_id)}"
                )
            tx.set_takeback(game_id, last, caller_id)
            tx.emit(events.takeback_asked(now, row, game_id, (caller_id, _name(row, color))))

        self._act(caller_id, game_id, opponent, ask)

    def answer_takeback(self, caller_id: int, game_id: int, accept: bool, opponent: str) -> None:
        def answer(tx: StoreTx, row: GameRecord, color: str, now: int) -> None:
            pending = tx.takeback(game_id)
            last = row.next_ply - 1
            if pending is None or pending.ply != last or pending.by_id == caller_id:
                raise Failure(
                    Refusal.TAKEBACK_REFUSED,
                    f"your opponent has no takeback request pending in {game_name(game_id)}",
                )
            tx.drop_takeback(game_id)
            fen = _take_back(tx, row, last, other_color(color), now) if accept else None
            me = (caller_id, _name(row, color))
            tx.emit(events.takeback_answered(now, row, game_id, me, last, fen))

        self._act(caller_id, game_id, opponent, answer)

    # -- export and administration -----------------------------------------------------

    def pgn(self, game_id: int, caller_id: int | None = None, with_chat: bool = False) -> str:
        """The game as PGN. ``caller_id`` restricts it to the game's players and observers
        (and the chat to what the caller may read); ``with_chat`` adds the chat."""
        with self.store.reading() as tx:
            row = existing_game(tx, game_id)
            channels: tuple[str, ...] = (PLAYERS, OBSERVERS)
            if caller_id is not None:
                channels = Live.readable(row, reader_color(tx, row, caller_id))
            moves = tx.moves(game_id)
            clock_ms = tx.move_clocks(game_id) if clocks.has_clock(row) else None
            said = tx.chat(game_id, 0, channels) if with_chat else []
            guests = tx.guest_ids([row.white_id, row.black_id])
        chat = [(line.ply, chat_comment(line.name, line.channel, line.text)) for line in said]
        control = clocks.control_of(row)
        return game_pgn(
            white=row.white,
            black=row.black,
            game_id=game_name(game_id),
            started=row.created_at,
            ended=row.finished_at,
            status=row.status,
            winner=row.winner,
            end_reason=row.end_reason,
            moves=moves,
            control=control,
            clock_ms=clock_ms,
            chat=chat,
            guests=(row.white_id in guests, row.black_id in guests),
        )


def _take_back(tx: StoreTx, row: GameRecord, ply: int, mover: str, now: int) -> str:
    """Remove the move of ``ply``, the game's last; returns the position now. The mover's
    bank is what the turn began with (after their previous move, or the initial one)."""
    board = chess.Board()
    base_ply, base_fen = 0, None
    for number, move in enumerate(tx.moves(row.id)[: ply - 1], start=1):
        irreversible = board.is_irreversible(move)
        board.push(move)
        if irreversible:
            base_ply, base_fen = number, position_fen(board)
    fen = position_fen(board)
    values: dict[str, object] = {"fen": fen, "base_ply": base_ply, "base_fen": base_fen}
    if row.deadline_ms is not None:
        before = tx.move_clock(row.id, ply - 2) if ply > 2 else None
        bank = before if before is not None else (row.tc_initial_ms or 0)
        leave = clocks.leave_until(row, mover)
        values |= clocks.taken_back(row, mover, bank, now, leave).columns()
    tx.take_back(row.id, ply, **values)
    return fen


def forfeit_all(tx: StoreTx, user_id: int, now_ms: int) -> list[int]:
    """A leaving user loses every active game; each opponent is credited a win. Returns
    the games' ids."""
    rows = tx.active_games_of(user_id)
    for row in rows:
        _forfeit(tx, row, WHITE if row.white_id == user_id else BLACK, LEFT_SERVICE, now_ms)
    return [row.id for row in rows]


# -- helpers ---------------------------------------------------------------------------


def _forfeit(tx: StoreTx, row: GameRecord, color: str, reason: str, now: int) -> None:
    """The player of ``color`` loses the game (resignation, or leaving the service)."""
    winner = WINNER_BLACK if color == WHITE else WINNER_WHITE
    leaver = row.white_id if color == WHITE else row.black_id
    tx.emit(events.player_left(now, row, row.id, (leaver, _name(row, color))))
    finish(tx, row.id, row, winner, reason, now, **{rules.req_field(color): REQ_RESIGN})


def _name(row: GameRecord, color: str) -> str:
    return row.white if color == WHITE else row.black


def _own_active_game(
    tx: StoreTx, caller_id: int, game_id: int, opponent: str
) -> tuple[GameRecord, str]:
    row = existing_game(tx, game_id, lock=True)
    color = rules.color_of(row, caller_id, game_id)
    actual = row.black if color == WHITE else row.white
    if opponent != actual:
        raise Failure(
            Refusal.NOT_OPPONENT,
            f"your opponent in {game_name(game_id)} is '{actual}', not '{opponent}'",
        )
    rules.require_active(row, game_id)
    return row, color


def _active_user_id(tx: StoreTx, name: str) -> int:
    found = tx.active_user_id(name)
    if found is None:
        raise Failure(Refusal.NO_SUCH_USER, f"no active user '{name}'")
    return found
