"""The one write path a move takes, and the queued reads of a game (STAT, SPAR).

A move (JGDA) becomes a :class:`MoveJob` queued to the store (``Database.write_later``)
and written in a batch with the others queued meanwhile: every game row of the batch is
read at once, each move is checked by the rules (``domain/rules.py``) against its row,
and the checked moves are stored together. The database decides what differs, one
class each (as Alembic keeps one implementation per dialect):

- :class:`SqliteMoves`: writers take turns on the database's one write lock, so a
  move is checked on a snapshot before it is queued (a wrong move is refused at once,
  and the batch only confirms that the row has not changed); rows are read one by one
  and written with one ``executemany`` for the moves and one for the games.
- :class:`PostgresMoves`: rows of a batch are read and locked in one statement, in id
  order, so two processes' batches cannot deadlock; moves are stored in one statement.

A game row is locked (``FOR UPDATE`` on PostgreSQL; the SQLite write lock covers it)
before it is read for a change, so two sessions racing for one ply cannot both win, and
the primary key (game, ply) of ``moves`` makes a duplicate ply impossible in any case.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from typing import Any

from ajedrez.domain import clocks, events, rules
from ajedrez.domain.clocks import Clock, ClockRules, SystemClock
from ajedrez.domain.errors import Conflict, Failure, Refusal
from ajedrez.domain.timekeeping import flag, timed_out
from ajedrez.domain.values import BLACK, STATUS_ACTIVE, WHITE
from ajedrez.domain.views import MoveRecord
from ajedrez.store import statements as st
from ajedrez.store.db import Database, mapped_errors
from ajedrez.store.game_queries import stored_moves
from ajedrez.store.tx import Tx

NAMES_KEPT = 100_000  # user names a process keeps for its move events


@dataclass(frozen=True)
class MoveJob:
    """One move's write, queued to run in a batch (``Database.write_later``)."""

    moves: Moves
    caller_id: int
    game_id: int
    move: MoveRecord
    plan: rules.Plan | None  # checked on a snapshot (SQLite), to be confirmed against the row

    def __call__(self, tx: Tx) -> Failure | None:
        """Store the move. A move past its game's deadline is refused by *returning*
        the Failure: the game's end on time stays written (a raised one would be undone
        with the job's work)."""
        try:
            with mapped_errors():
                return self.moves.write_one(tx, self)
        except Conflict:
            raise just_played(self.game_id, self.move) from None

    @staticmethod
    def together(tx: Tx, jobs: list[MoveJob]) -> list[Exception | None]:
        return jobs[0].moves.write_batch(tx, jobs)

    def payload(self) -> list[object]:
        """The job as JSON values, for the writer process (``Moves.job_from_payload``).
        Without the plan: the writer checks the move against the row it locks, as a
        batch on PostgreSQL always does."""
        m = self.move
        return [self.caller_id, self.game_id, [m.ply, m.jugada, m.reverso, m.posicion, m.promocion]]


class Moves:
    """The moves of one store: queued writes and queued reads of a game."""

    def __init__(
        self, db: Database, clock: Clock | None = None, clock_rules: ClockRules | None = None
    ) -> None:
        self.db = db
        self.clock = clock or SystemClock()
        self.clock_rules = clock_rules or ClockRules()
        self.boards = rules.Boards(rules.BOARD_CACHE_GAMES)
        self.user_names: dict[int, str] = {}

    @staticmethod
    def of(
        db: Database, clock: Clock | None = None, clock_rules: ClockRules | None = None
    ) -> Moves:
        """The implementation for ``db``: where writers take turns, moves are checked
        before they queue."""
        kind = SqliteMoves if db.serializes_writes else PostgresMoves
        return kind(db, clock, clock_rules)

    # -- from an event loop --------------------------------------------------------------

    def play(
        self, caller_id: int, game_id: int, move: MoveRecord
    ) -> asyncio.Future[Failure | None]:
        """JGDA: the future completes when the move is durable, or fails with the reason
        it was refused (``Failure``: also one the job returned, as the store raises an
        outcome that is an exception) or could not be stored."""
        return self.db.write_later(self.job(caller_id, game_id, move))

    def game_rows(self, game_id: int) -> asyncio.Future[list[Any]]:
        """STAT: the game's row with its players' names (none: no such game)."""
        return self.db.read_later(st.GAME, gid=game_id)

    def observing(self, game_id: int, user_id: int) -> asyncio.Future[list[Any]]:
        """A row if the user observes the game (STAT and SPAR of an observer)."""
        return self.db.read_later(st.OBSERVING, gid=game_id, uid=user_id)

    def move_rows(self, game_id: int, after: int) -> asyncio.Future[list[Any]]:
        """SPAR: the game's players and its moves after ``after`` (none: no such game;
        one with ``ply`` None: no move after it)."""
        return self.db.read_later(st.PLAYERS_AND_MOVES_AFTER, gid=game_id, after=after)

    # -- jobs ------------------------------------------------------------------------------

    def job(self, caller_id: int, game_id: int, move: MoveRecord) -> MoveJob:
        return MoveJob(self, caller_id, game_id, move, self.preplan(caller_id, game_id, move))

    def job_from_payload(self, payload: list[Any]) -> MoveJob:
        """The writer process's copy of a worker's ``MoveJob.payload()``."""
        caller_id, game_id, move = payload
        return MoveJob(self, int(caller_id), int(game_id), MoveRecord(*move), None)

    def preplan(self, caller_id: int, game_id: int, move: MoveRecord) -> rules.Plan | None:
        """The move checked before it is queued, where that shortens every writer's wait."""
        return None

    # -- writing (in the store's writer, within a batch's transaction) ---------------------

    def write_one(self, tx: Tx, job: MoveJob) -> Failure | None:
        """One move alone: a game's second move in a batch, a possible resend, or a
        batch's move run again after a fault. Returns the refusal of a move past its
        game's deadline (see ``MoveJob.__call__``); raises any other."""
        row = st.PLAY_ROW.first(tx.conn, gid=job.game_id)
        if row is None:
            raise rules.no_game(job.game_id)
        move = job.move
        if rules.maybe_resend(row, job.caller_id, job.game_id, move):
            last = st.MOVE_AT.first(tx.conn, gid=job.game_id, ply=move.ply)
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
        self.store([_move_values(tx, job, plan, row, now)], tx)
        self._played(tx, [(job, row, plan)], now)
        return None

    def write_batch(self, tx: Tx, jobs: list[MoveJob]) -> list[Exception | None]:
        """A batch of moves in a few statements instead of several a move (a round trip
        each on PostgreSQL; on SQLite a hand-back of the GIL each, while the batch holds
        the one write lock): every game row read at once, each move checked (or the
        check made on a snapshot confirmed), all stored together.

        A game's second move in the batch, and a possible resend, run afterwards one by
        one (``write_one``), seeing the stored moves. A refused move is refused before
        anything is written, so it leaves nothing to undo (but the end on time of a game
        whose deadline has passed, which is its own change); a database fault raises,
        and ``Database.write_jobs`` then runs each job alone."""
        rows = self.rows(tx, sorted({j.game_id for j in jobs}))
        now = self.clock.now_ms()
        out: list[Exception | None] = [None] * len(jobs)
        planned: list[tuple[MoveJob, Any, rules.Plan]] = []
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
        self.store([_move_values(tx, j, p, r, now) for j, r, p in planned], tx)
        self._played(tx, planned, now)
        for i in alone:
            try:
                out[i] = jobs[i](tx)
            except Failure as e:
                out[i] = e
        return out

    def _end_if_late(self, tx: Tx, job: MoveJob, row: Any, now: int) -> Failure | None:
        """A move at or after its game's deadline ends the game on time (written in this
        transaction); returns its refusal."""
        if row.status == STATUS_ACTIVE and clocks.expired(row, now, self.clock_rules):
            color = rules.color_of(row, job.caller_id, job.game_id)  # a stranger: 831 alone
            reason = flag(tx, job.game_id, row, now)
            return timed_out(job.game_id, reason, color == clocks.waiting_color(row))
        return None

    def _played(self, tx: Tx, planned: list[tuple[MoveJob, Any, rules.Plan]], now: int) -> None:
        """The events of stored moves, and of the games they ended."""
        turns = self._names(
            tx, [r.black_id if j.caller_id == r.white_id else r.white_id for j, r, _p in planned]
        )
        for (job, row, plan), turn in zip(planned, turns, strict=True):
            m = job.move
            played = (m.ply, m.jugada, m.promocion, plan.san)
            made = events.move_played(now, row, job.game_id, job.caller_id, played, turn, plan.fen)
            tx.emit(made)
            if plan.outcome is not None:
                winner = rules.winner_code(plan.outcome.winner)
                reason = rules.ending_name(plan.outcome.termination)
                tx.finish_game(job.game_id, row, winner, reason)
                tx.emit(events.game_ended(now, row, job.game_id, winner, reason))

    def _names(self, tx: Tx, user_ids: list[int]) -> list[str]:
        """Users' names, from this process's copy (a user's name never changes)."""
        known = self.user_names
        missing = [u for u in set(user_ids) if u not in known]
        if missing:
            if len(known) + len(missing) > NAMES_KEPT:
                known.clear()
            known.update(tx.user_names(missing))
        return [known.get(u, "") for u in user_ids]

    def _plan(self, tx: Tx, job: MoveJob, row: Any) -> rules.Plan:
        return rules.current_plan(
            row,
            job.caller_id,
            job.game_id,
            job.move,
            job.plan,
            self.boards,
            partial(tx.moves, job.game_id, after=row.base_ply),
        )

    def rows(self, tx: Tx, game_ids: list[int]) -> dict[int, Any]:
        """The game rows a batch's moves need, by game id, locked for the batch."""
        raise NotImplementedError

    def store(self, values: list[dict[str, object]], tx: Tx) -> None:
        """Insert checked moves and bring their games up to date (``_move_values`` each)."""
        raise NotImplementedError


class SqliteMoves(Moves):
    def preplan(self, caller_id: int, game_id: int, move: MoveRecord) -> rules.Plan | None:
        """Writers take turns (SQLite), so the check and its effects are computed before
        the write, on a snapshot, and the write only confirms the game has not changed."""
        with self.db.read_each() as conn:
            row = st.PLAY_ROW.first(conn, gid=game_id)
            if row is None or rules.maybe_resend(row, caller_id, game_id, move):
                return None
            stored = partial(stored_moves, conn, game_id, after=row.base_ply)
            return rules.plan_move(row, caller_id, game_id, move, self.boards, stored)

    def rows(self, tx: Tx, game_ids: list[int]) -> dict[int, Any]:
        # Under the write lock; one short statement each costs less than a batch's.
        return {gid: st.PLAY_ROW.first(tx.conn, gid=gid) for gid in game_ids}

    def store(self, values: list[dict[str, object]], tx: Tx) -> None:
        # SQLite has no INSERT inside WITH: one executemany for the moves, one for the games.
        st.INSERT_MOVE.run_each(tx.conn, values)
        st.UPDATE_AFTER_MOVE.run_each(tx.conn, values)


class PostgresMoves(Moves):
    def rows(self, tx: Tx, game_ids: list[int]) -> dict[int, Any]:
        return {r.id: r for r in st.PLAY_ROWS.all(tx.conn, gids=game_ids)}

    def store(self, values: list[dict[str, object]], tx: Tx) -> None:
        st.STORE_MOVES.run_each(tx.conn, values)


def just_played(game_id: int, move: MoveRecord) -> Failure:
    # Another transaction stored this ply first (possible only across databases that do
    # not honour the row lock); the client must resynchronise.
    return Failure(Refusal.WRONG_PLY, f"ply {move.ply} of {rules.pid(game_id)} was just played")


def _move_values(tx: Tx, job: MoveJob, plan: rules.Plan, row: Any, now: int) -> dict[str, object]:
    """The parameters of ``INSERT_MOVE``, ``UPDATE_AFTER_MOVE`` and ``STORE_MOVES``."""
    move = job.move
    clock: dict[str, object] = {
        "m_clock": None,
        "g_white_ms": row.white_ms,
        "g_black_ms": row.black_ms,
        "g_since": row.clock_since_ms,
        "g_deadline": row.deadline_ms,
        "g_warn": None,
    }
    if clocks.has_clock(row):
        mover = WHITE if row.white_id == job.caller_id else BLACK
        leave = clocks.leave_until(row, BLACK if mover == WHITE else WHITE)
        after, bank = clocks.after_move(row, mover, now, leave)
        clock = {
            "m_clock": bank,
            "g_white_ms": after.white_ms,
            "g_black_ms": after.black_ms,
            "g_since": after.since_ms,
            "g_deadline": after.deadline_ms,
            "g_warn": after.warn_at_ms,
        }
    return clock | {
        "m_game": job.game_id,
        "m_ply": move.ply,
        "m_jugada": move.jugada,
        "m_reverso": move.reverso,
        "m_posicion": move.posicion,
        "m_promocion": move.promocion,
        "m_san": plan.san,
        "m_at": tx.stamp,
        "gid": job.game_id,
        "g_next": move.ply + 1,
        "g_fen": plan.fen,
        "g_changed": tx.stamp,
        "g_base_ply": plan.base_ply,
        "g_base_fen": plan.base_fen,
    }
