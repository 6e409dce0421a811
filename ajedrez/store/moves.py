"""A move's way through the store, and the queued reads of a game (STAT, SPAR).

A move becomes a :class:`MoveJob` queued to the store (``Database.write_later``) and
written in a batch with the others queued meanwhile; what a move does is decided by the
domain's use case (``domain/moves.py``: :class:`~ajedrez.domain.moves.Moving`), on the
rows read here. The database decides what differs, one class each (as Alembic keeps one
implementation per dialect):

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

from ajedrez.domain import rules
from ajedrez.domain.clocks import Clock, ClockRules, SystemClock
from ajedrez.domain.errors import Conflict, Failure, Refusal
from ajedrez.domain.moves import MoveWrite, Moving
from ajedrez.domain.values import game_name
from ajedrez.domain.views import MoveRecord
from ajedrez.store import statements as st
from ajedrez.store.db import Database, mapped_errors
from ajedrez.store.game_queries import stored_moves
from ajedrez.store.tx import Tx


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
                return self.moves.use.write_one(tx, self)
        except Conflict:
            raise just_played(self.game_id, self.move) from None

    @staticmethod
    def together(tx: Tx, jobs: list[MoveJob]) -> list[Exception | None]:
        return jobs[0].moves.use.write_batch(tx, jobs)

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
        self.use = Moving(self, self.clock, self.clock_rules)  # what a move does

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

    def game_rows(self, game_id: int, takeback: bool = False) -> asyncio.Future[list[Any]]:
        """STAT: the game's row with its players' names (none: no such game); with
        ``takeback``, also ``takeback_by``: who asks a takeback now (None: nobody)."""
        return self.db.read_later(st.GAME_WITH_TAKEBACK if takeback else st.GAME, gid=game_id)

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

    # -- the rows the domain's use case reads and writes (domain/moves.py: MoveRows) -------

    def row(self, tx: Tx, game_id: int) -> Any:
        return st.PLAY_ROW.first(tx.conn, gid=game_id)

    def move_at(self, tx: Tx, game_id: int, ply: int) -> Any:
        return st.MOVE_AT.first(tx.conn, gid=game_id, ply=ply)

    def rows(self, tx: Tx, game_ids: list[int]) -> dict[int, Any]:
        """The game rows a batch's moves need, by game id, locked for the batch."""
        raise NotImplementedError

    def store(self, tx: Tx, moves: list[MoveWrite]) -> None:
        """Insert checked moves and bring their games up to date."""
        self._store(tx, [_parameters(m) for m in moves])

    def _store(self, tx: Tx, values: list[dict[str, object]]) -> None:
        raise NotImplementedError


class SqliteMoves(Moves):
    def preplan(self, caller_id: int, game_id: int, move: MoveRecord) -> rules.Plan | None:
        """Writers take turns (SQLite), so the check and its effects are computed before
        the write, on a snapshot, and the write only confirms the game has not changed."""
        with self.db.read_each() as conn:
            row = st.PLAY_ROW.first(conn, gid=game_id)
            after = 0 if row is None else row.base_ply
            stored = partial(stored_moves, conn, game_id, after=after)
            return self.use.plan(row, caller_id, game_id, move, stored)

    def rows(self, tx: Tx, game_ids: list[int]) -> dict[int, Any]:
        # Under the write lock; one short statement each costs less than a batch's.
        return {gid: st.PLAY_ROW.first(tx.conn, gid=gid) for gid in game_ids}

    def _store(self, tx: Tx, values: list[dict[str, object]]) -> None:
        # SQLite has no INSERT inside WITH: one executemany for the moves, one for the games.
        st.INSERT_MOVE.run_each(tx.conn, values)
        st.UPDATE_AFTER_MOVE.run_each(tx.conn, values)


class PostgresMoves(Moves):
    def rows(self, tx: Tx, game_ids: list[int]) -> dict[int, Any]:
        return {r.id: r for r in st.PLAY_ROWS.all(tx.conn, gids=game_ids)}

    def _store(self, tx: Tx, values: list[dict[str, object]]) -> None:
        st.STORE_MOVES.run_each(tx.conn, values)


def just_played(game_id: int, move: MoveRecord) -> Failure:
    # Another transaction stored this ply first (possible only across databases that do
    # not honour the row lock); the client must resynchronise.
    return Failure(Refusal.WRONG_PLY, f"ply {move.ply} of {game_name(game_id)} was just played")


def _parameters(m: MoveWrite) -> dict[str, object]:
    """The parameters of ``INSERT_MOVE``, ``UPDATE_AFTER_MOVE`` and ``STORE_MOVES``."""
    move = m.move
    return {
        "m_game": m.game_id,
        "m_ply": move.ply,
        "m_jugada": move.jugada,
        "m_reverso": move.reverso,
        "m_posicion": move.posicion,
        "m_promocion": move.promocion,
        "m_san": m.san,
        "m_at": m.at,
        "m_clock": m.clock_ms,
        "gid": m.game_id,
        "g_next": move.ply + 1,
        "g_fen": m.fen,
        "g_changed": m.at,
        "g_base_ply": m.base_ply,
        "g_base_fen": m.base_fen,
        "g_white_ms": m.white_ms,
        "g_black_ms": m.black_ms,
        "g_since": m.since_ms,
        "g_deadline": m.deadline_ms,
        "g_warn": m.warn_at_ms,
    }
