"""Time as the service keeps it: games ended on time (the scheduler's work, and any
command that finds a clock run out), the clock as RELJ shows it, players' leave (LICE),
and the administrator's extensions. The arithmetic is ``clocks.py``'s; this module holds
the transactions, written against the store's protocol (``ports.py``).
"""

from __future__ import annotations

from ajedrez.domain import clocks, events, rules
from ajedrez.domain.clocks import Clock, ClockRules
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.finish import finish_on_time
from ajedrez.domain.live import reader_color
from ajedrez.domain.ports import GameRecord, Store, StoreTx
from ajedrez.domain.timecontrol import DAY_MS, control_name, format_duration
from ajedrez.domain.values import BLACK, WHITE, game_name
from ajedrez.domain.views import NO_CLOCK_RUNS, ClockStatus, LeaveStatus

FLAG_BATCH = 200  # games ended on time in one transaction


class Timekeeping:
    def __init__(self, store: Store, clock: Clock, clock_rules: ClockRules) -> None:
        self.store = store
        self.clock = clock
        self.rules = clock_rules

    # -- the scheduler ---------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """The earliest deadline of a running clock (ms), found by its index."""
        with self.store.reading() as tx:
            return tx.next_deadline()

    def flag_due(self, limit: int = FLAG_BATCH) -> list[tuple[int, str]]:
        """End on time up to ``limit`` games whose running clock is out; returns (game,
        end reason) of each. Games another transaction holds are left for the next call
        (``SKIP LOCKED``): a move that commits meanwhile may have saved them."""
        now = self.clock.now_ms()
        if not self.rules.may_flag(now):
            return []
        with self.store.writing() as tx:
            due = [
                (row.id, row)
                for row in tx.due_games(now, limit)
                if clocks.expired(row, now, self.rules)
            ]
            return finish_on_time(tx, due, now)

    def next_warning(self) -> int | None:
        """The earliest clock warning due (ms), found by its index."""
        with self.store.reading() as tx:
            return tx.next_warning()

    def warn_due(self, limit: int = FLAG_BATCH) -> list[tuple[int, str]]:
        """Send the clock warnings due now (AVISO_RELOJ, to the player whose clock runs),
        up to ``limit``; returns (game, player) of each. As ``flag_due``, games another
        transaction holds are left for the next call, and each warning goes once."""
        now = self.clock.now_ms()
        sent: list[tuple[int, str]] = []
        with self.store.writing() as tx:
            following: list[tuple[int, int | None]] = []
            for row in tx.due_warnings(now, limit):
                deadline, since = row.deadline_ms, row.clock_since_ms
                if deadline is None or since is None:
                    following.append((row.id, None))
                    continue
                color = clocks.waiting_color(row)
                left = clocks.remaining(row, color, now)
                if left > 0:  # else the game is out of time: it ends, no warning
                    player = (
                        (row.white_id, row.white) if color == WHITE else (row.black_id, row.black)
                    )
                    tx.emit(events.clock_warning(now, row.id, player, left, deadline))
                    sent.append((row.id, player[1]))
                following.append((row.id, clocks.next_warning(since, deadline, now)))
            tx.set_warnings(following)
        return sent

    # -- RELJ --------------------------------------------------------------------------------

    def clock_status(self, caller_id: int, game_id: int) -> ClockStatus:
        with self.store.reading() as tx:
            row = tx.game(game_id)
            if row is None:
                raise rules.no_game(game_id)
            reader_color(tx, row, caller_id)
            now = self.clock.now_ms()
            # From the accounts: the opponent sees a leave in any game, also a live one.
            leaves = tx.leaves_until([row.white_id, row.black_id], now)
        control = clocks.control_of(row)
        running = row.deadline_ms is not None
        return ClockStatus(
            game_name(game_id),
            now,
            control_name(control),
            clocks.remaining(row, WHITE, now),
            clocks.remaining(row, BLACK, now),
            clocks.waiting_color(row) if running else NO_CLOCK_RUNS,
            row.deadline_ms or 0,
            leaves.get(row.white_id, 0),
            leaves.get(row.black_id, 0),
            row.end_reason or "",
            0 if self.rules.may_flag(now) else self.rules.flag_after_ms,
        )

    # -- leave (LICE) ----------------------------------------------------------------------

    def start_leave(self, caller_id: int, days: int | None) -> LeaveStatus:
        """Leave from now, for ``days`` or all the leave left this year."""
        with self.store.writing() as tx:
            now = self.clock.now_ms()
            user = tx.leave_of(caller_id)
            if user.leave_until_ms is not None and user.leave_until_ms > now:
                raise Failure(
                    Refusal.LEAVE_REFUSED, "you are on leave already; end it first (LICE:F)"
                )
            year = clocks.utc_year(now)
            left = clocks.leave_left_ms(year, user.leave_year, user.leave_left_ms, self.rules)
            if left <= 0:
                raise Failure(Refusal.LEAVE_REFUSED, f"you have no leave left in {year}")
            length = left if days is None else min(days * DAY_MS, left)
            until = now + length
            games = self._correspondence_of(tx, caller_id)
            for row, color in games:
                running = clocks.waiting_color(row)
                if running == color and clocks.remaining(row, color, now) < clocks.LEAVE_MARGIN_MS:
                    raise Failure(
                        Refusal.LEAVE_REFUSED,
                        f"less than {format_duration(clocks.LEAVE_MARGIN_MS)} is left on your "
                        f"clock in {game_name(row.id)}: move there first",
                    )
            tx.set_leave(caller_id, until, left - length, year)
            for row, color in games:
                values = clocks.leave_columns(color, until)
                if clocks.waiting_color(row) == color:
                    values |= clocks.paused(row, now, until).columns()
                tx.update_game(row.id, **values)
            me = (caller_id, tx.user_name(caller_id) or "")
            for opponent in _opponents(games, caller_id):
                tx.emit(events.leave_started(now, me, until, opponent))
        return LeaveStatus(until, left - length)

    def end_leave(self, caller_id: int) -> LeaveStatus:
        """End the leave now; the unused part is given back."""
        with self.store.writing() as tx:
            now = self.clock.now_ms()
            user = tx.leave_of(caller_id)
            if user.leave_until_ms is None or user.leave_until_ms <= now:
                raise Failure(Refusal.LEAVE_REFUSED, "you are not on leave")
            year = clocks.utc_year(now)
            left = clocks.leave_left_ms(year, user.leave_year, user.leave_left_ms, self.rules)
            if user.leave_year == year:
                left += user.leave_until_ms - now
            tx.set_leave(caller_id, None, left, year)
            games = self._correspondence_of(tx, caller_id)
            for row, color in games:
                values = clocks.leave_columns(color, None)
                resumed = clocks.resumed(row, now) if clocks.waiting_color(row) == color else None
                if resumed is not None:
                    values |= resumed.columns()
                tx.update_game(row.id, **values)
            me = (caller_id, tx.user_name(caller_id) or "")
            for opponent in _opponents(games, caller_id):
                tx.emit(events.leave_ended(now, me, opponent))
        return LeaveStatus(0, left)

    def leave_status(self, caller_id: int) -> LeaveStatus:
        with self.store.reading() as tx:
            now = self.clock.now_ms()
            user = tx.leave_of(caller_id)
        year = clocks.utc_year(now)
        left = clocks.leave_left_ms(year, user.leave_year, user.leave_left_ms, self.rules)
        until = user.leave_until_ms if (user.leave_until_ms or 0) > now else 0
        return LeaveStatus(until or 0, left)

    @staticmethod
    def _correspondence_of(tx: StoreTx, user_id: int) -> list[tuple[GameRecord, str]]:
        """The user's correspondence games whose clock runs, locked, with the user's colour
        in each: their rows carry the user's leave."""
        return [
            (row, WHITE if row.white_id == user_id else BLACK)
            for row in tx.running_clocks(user_id=user_id)
            if clocks.correspondence(row)
        ]

    # -- administration ----------------------------------------------------------------------

    def extend(self, game_id: int | None, by_ms: int, by: str | None = None) -> list[int]:
        """Give ``by_ms`` back to the running side of one game (``game_id``) or of every
        game whose clock runs (None); returns the games extended."""
        with self.store.writing() as tx:
            rows = tx.running_clocks(game_id=game_id)
            if game_id is not None and not rows:
                if tx.game(game_id) is None:
                    raise rules.no_game(game_id)
                raise Failure(Refusal.GAME_OVER, f"no clock runs in {game_name(game_id)}")
            now = self.clock.now_ms()
            for row in rows:
                tx.update_game(row.id, **clocks.extended(row, by_ms, now).columns())
            target = "all" if game_id is None else game_name(game_id)
            tx.audit(by, "games extend", target, f"{len(rows)} game(s) by {format_duration(by_ms)}")
            return [row.id for row in rows]


def _opponents(games: list[tuple[GameRecord, str]], user_id: int) -> list[int]:
    """The user's opponents in these games, each once (the leave's events go to them)."""
    found = {row.black_id if row.white_id == user_id else row.white_id for row, _c in games}
    return sorted(found)
