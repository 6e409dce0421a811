"""The one use case of a move, alone or in a batch: a resend recognised, a game past its
deadline ended on time, the move checked by the rules, stored with its game's new
state, its events emitted, and a game it ended finished (``games.finish``, the one
step every ending takes).

The store reads and writes the rows (:class:`MoveRows`, one implementation per
database in ``store/moves.py``) and queues the moves into batches; every decision is
made here, on the rows it reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple, Protocol

import chess

from ajedrez.domain import clocks, events, rules
from ajedrez.domain.clocks import Clock, ClockRules
from ajedrez.domain.errors import Failure
from ajedrez.domain.finish import finish, timed_out
from ajedrez.domain.ports import StoreTx
from ajedrez.domain.values import BLACK, REQ_NONE, REQ_OFFER, STATUS_ACTIVE, WHITE, other_color
from ajedrez.domain.views import MoveRecord

NAMES_KEPT = 100_000  # user names a process keeps for its move events


class Job(Protocol):
    """One move to write: who plays it, in which game, and its check on a snapshot."""

    @property
    def caller_id(self) -> int: ...

    @property
    def game_id(self) -> int: ...

    @property
    def move(self) -> MoveRecord: ...

    @property
    def plan(self) -> rules.Plan | None:
        """The move checked on a snapshot, to be confirmed against the row."""
        ...

    def __call__(self, tx: Any) -> Failure | None: ...


class MoveRows(Protocol):
    """What the use case needs of the store, beyond the transaction's port."""

    def rows(self, tx: Any, game_ids: list[int]) -> dict[int, Any]:
        """The game rows of a batch, by id, locked for the batch."""
        ...

    def row(self, tx: Any, game_id: int) -> Any:
        """One game row, locked (None: no such game)."""
        ...

    def move_at(self, tx: Any, game_id: int, ply: int) -> tuple[str, int, str, int] | None:
        """The stored move of ``ply``: (jugada, reverso, posicion, promocion)."""
        ...

    def store(self, tx: Any, moves: list[MoveWrite]) -> None:
        """Insert checked moves and bring their games up to date."""
        ...


class MoveWrite(NamedTuple):
    """A checked move as it is stored, with its game's state after it. A named tuple: one
    is made per move, and a frozen dataclass's ``__init__`` costs four times as much (1.3
    against 0.3 us for 13 fields, timeit)."""

    game_id: int
    move: MoveRecord
    san: str
    at: int  # the transaction's stamp (fecha)
    clock_ms: int | None  # the mover's bank after the move (None: no clock)
    fen: str
    base_ply: int
    base_fen: str | None
    white_ms: int | None
    black_ms: int | None
    since_ms: int | None
    deadline_ms: int | None
    warn_at_ms: int | None


class Moving:
    """The moves of one store: checked, written and announced."""

    def __init__(self, store: MoveRows, clock: Clock, clock_rules: ClockRules) -> None:
        self.store = store
        self.clock = clock
        self.clock_rules = clock_rules
        self.boards = rules.Boards(rules.BOARD_CACHE_GAMES)
        self.user_names: dict[int, str] = {}

    def plan(
        self,
        row: Any,
        caller_id: int,
        game_id: int,
        move: MoveRecord,
        stored: Callable[[], list[chess.Move]],
    ) -> rules.Plan | None:
        """The move checked before it is queued, on a snapshot's ``row`` (None: a
        possible resend, or no such game, which the write decides)."""
        if row is None or rules.maybe_resend(row, caller_id, game_id, move):
            return None
        return rules.plan_move(row, caller_id, game_id, move, self.boards, stored)

    def write_one(self, tx: StoreTx, job: Job) -> Failure | None:
        """One move alone: a game's second move in a batch, a possible resend, or a
        batch's move run again after a fault. Returns the refusal of a move past its
        game's deadline (its game's end on time stays written); raises any other."""
        row = self.store.row(tx, job.game_id)
        if row is None:
            raise rules.no_game(job.game_id)
        move = job.move
        if rules.maybe_resend(row, job.caller_id, job.game_id, move):
            last = self.store.move_at(tx, job.game_id, move.ply)
            if last is not None and tuple(last) == (
                move.jugada,
                move.reverso,
                move.posicion,
                move.promocion,
            ):
                return None  # an exact resend of the move just stored: nothing to do
        now = self.clock.now_ms()
        late = self._end_if_late(tx, job, row, now)
        if late is not None:
            return late
        plan = self._plan(tx, job, row)
        self.store.store(tx, [_write(tx, job, plan, row, now)])
        self._played(tx, [(job, row, plan)], now)
        return None

    def write_batch(self, tx: StoreTx, jobs: Sequence[Job]) -> list[Exception | None]:
        """A batch of moves in a few statements instead of several a move (a round trip
        each on PostgreSQL; on SQLite a hand-back of the GIL each, while the batch holds
        the one write lock): every game row read at once, each move checked (or the
        check made on a snapshot confirmed), all stored together.

        A game's second move in the batch, and a possible resend, run afterwards one by
        one (``write_one``), seeing the stored moves. A refused move is refused before
        anything is written, so it leaves nothing to undo (but the end on time of a game
        whose deadline has passed, which is its own change); a database fault raises,
        and the store then runs each job alone."""
        rows = self.store.rows(tx, sorted({j.game_id for j in jobs}))
        now = self.clock.now_ms()
        out: list[Exception | None] = [None] * len(jobs)
        planned: list[tuple[Job, Any, rules.Plan]] = []
        alone: list[int] = []
        seen: set[int] = set()
        for i, job in enumerate(jobs):
            if job.game_id in seen:
                alone.append(i)
                continue
            seen.add(job.game_id)
            row = rows.get(job.game_id)
            try:
                if row is None:
                    raise rules.no_game(job.game_id)
                if rules.maybe_resend(row, job.caller_id, job.game_id, job.move):
                    alone.append(i)
                    continue
                out[i] = self._end_if_late(tx, job, row, now)
                if out[i] is not None:
                    continue
                plan = self._plan(tx, job, row)
            except Failure as e:
                out[i] = e
                continue
            planned.append((job, row, plan))
        self.store.store(tx, [_write(tx, j, p, r, now) for j, r, p in planned])
        self._played(tx, planned, now)
        for i in alone:
            try:
                out[i] = jobs[i](tx)
            except Failure as e:
                out[i] = e
        return out

    def _end_if_late(self, tx: StoreTx, job: Job, row: Any, now: int) -> Failure | None:
        """A move at or after its game's deadline ends the game on time (written in this
        transaction); returns its refusal."""
        if row.status == STATUS_ACTIVE and clocks.expired(row, now, self.clock_rules):
            color = rules.color_of(row, job.caller_id, job.game_id)  # a stranger: 831 alone
            return timed_out(tx, job.game_id, row, now, color)
        return None

    def _played(self, tx: StoreTx, planned: list[tuple[Job, Any, rules.Plan]], now: int) -> None:
        """The events of stored moves, and the end of the games they ended."""
        turns = self._names(
            tx, [r.black_id if j.caller_id == r.white_id else r.white_id for j, r, _p in planned]
        )
        for (job, row, plan), turn in zip(planned, turns, strict=True):
            if REQ_OFFER in (row.req_white, row.req_black):
                self._declined_by_move(tx, job, row, now)
            m = job.move
            played = (m.ply, m.jugada, m.promocion, plan.san)
            made = events.move_played(now, row, job.game_id, job.caller_id, played, turn, plan.fen)
            tx.emit(made)
            if plan.outcome is not None:
                winner = rules.winner_code(plan.outcome.winner)
                reason = rules.ending_name(plan.outcome.termination)
                finish(tx, job.game_id, row, winner, reason, now)

    def _declined_by_move(self, tx: StoreTx, job: Job, row: Any, now: int) -> None:
        """A move by the receiver of a draw offer declines it; the maker's own move leaves
        it pending (docs/protocol.md section 5)."""
        mover = WHITE if row.white_id == job.caller_id else BLACK
        maker = other_color(mover)
        if getattr(row, rules.req_field(maker)) != REQ_OFFER:
            return
        by = (job.caller_id, self._names(tx, [job.caller_id])[0])
        tx.emit(events.draw_answered(now, row, job.game_id, by, False))
        tx.update_game(job.game_id, **{rules.req_field(maker): REQ_NONE})

    def _names(self, tx: StoreTx, user_ids: list[int]) -> list[str]:
        """Users' names, from this process's copy (a user's name never changes)."""
        known = self.user_names
        missing = [u for u in set(user_ids) if u not in known]
        if missing:
            if len(known) + len(missing) > NAMES_KEPT:
                known.clear()
            known.update(tx.user_names(missing))
        return [known.get(u, "") for u in user_ids]

    def _plan(self, tx: StoreTx, job: Job, row: Any) -> rules.Plan:
        return rules.current_plan(
            row,
            job.caller_id,
            job.game_id,
            job.move,
            job.plan,
            self.boards,
            partial(tx.moves, job.game_id, after=row.base_ply),
        )


def _write(tx: StoreTx, job: Job, plan: rules.Plan, row: Any, now: int) -> MoveWrite:
    """The move as stored, its game's clocks brought up to date."""
    white_ms, black_ms = row.white_ms, row.black_ms
    since, deadline, warn, bank = row.clock_since_ms, row.deadline_ms, None, None
    if clocks.has_clock(row):
        mover = WHITE if row.white_id == job.caller_id else BLACK
        leave = clocks.leave_until(row, BLACK if mover == WHITE else WHITE)
        after, bank = clocks.after_move(row, mover, now, leave)
        white_ms, black_ms = after.white_ms, after.black_ms
        since, deadline, warn = after.since_ms, after.deadline_ms, after.warn_at_ms
    return MoveWrite(
        job.game_id,
        job.move,
        plan.san,
        tx.stamp,
        bank,
        plan.fen,
        plan.base_ply,
        plan.base_fen,
        white_ms,
        black_ms,
        since,
        deadline,
        warn,
    )
