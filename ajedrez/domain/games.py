"""Challenges and games: every rule through python-chess, every write in one transaction.

A game row is locked (``FOR UPDATE`` on PostgreSQL; the SQLite write lock covers it)
before it is read for a change, so two sessions racing for one ply cannot both win, and
the primary key (game, ply) of ``moves`` makes a duplicate ply impossible in any case.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import chess
from sqlalchemy import (
    Connection,
    Integer,
    and_,
    any_,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    select,
    true,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import aliased

from ajedrez.domain import rules
from ajedrez.domain.errors import Failure
from ajedrez.domain.export import LEFT_SERVICE, game_pgn
from ajedrez.protocol.codes import Reply
from ajedrez.protocol.records import (
    REMOVED_CHALLENGE,
    REMOVED_GAME,
    REQ_ACCEPT,
    REQ_NONE,
    REQ_OFFER,
    REQ_RESIGN,
    STATUS_ACTIVE,
    STATUS_FINISHED,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_NONE,
    WINNER_WHITE,
    GameStatus,
    GameSummary,
    MoveRecord,
    other_color,
)
from ajedrez.store import audit
from ajedrez.store.db import Conflict, Database, Tx, mapped_errors
from ajedrez.store.eager import Eager, settle, when_done
from ajedrez.store.models import Game, GameRequest, Move, Removal, User
from ajedrez.store.prepared import Prepared, PreparedMany

# Ids per statement when purging: far below any driver's limit on bound parameters.
PURGE_CHUNK = 500
PURGE_AUDIT_IDS = 20  # the audit trail names this many purged games, then counts the rest

T = TypeVar("T")

White = aliased(User)
Black = aliased(User)


@dataclass(frozen=True)
class GameListing:
    game_id: int
    white: str
    black: str
    status: int
    winner: int
    plies: int
    changed_at: int
    end_reason: str | None


class Games:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._boards = rules.Boards(rules.BOARD_CACHE_GAMES)

    # -- challenges --------------------------------------------------------------------

    def challenge(self, caller_id: int, target: str) -> None:
        try:
            with self.db.write() as tx:
                me = tx.conn.execute(
                    select(User.name, User.active).where(User.id == caller_id)
                ).one()
                if not me.active:
                    raise Failure(Reply.F_NOUSER, f"your account '{me.name}' is closed")
                target_id = _active_user_id(tx.conn, target)
                if target_id == caller_id:
                    raise Failure(Reply.F_SELF, "you cannot challenge yourself")
                lo, hi = sorted((caller_id, target_id))
                if _open_request(tx.conn, lo, hi) is not None:
                    raise Failure(
                        Reply.F_REQEXISTS, f"a challenge between you and '{target}' is open"
                    )
                if _active_game(tx.conn, lo, hi) is not None:
                    raise Failure(
                        Reply.F_GAMEEXISTS, f"you already have an active game with '{target}'"
                    )
                tx.conn.execute(
                    insert(GameRequest).values(
                        challenger_id=caller_id,
                        challenged_id=target_id,
                        user_lo=lo,
                        user_hi=hi,
                        created_at=tx.stamp,
                    )
                )
        except Conflict:
            raise Failure(
                Reply.F_REQEXISTS, f"a challenge between you and '{target}' is open"
            ) from None

    def challengers_since(self, caller_id: int, since: int) -> tuple[int, list[str]]:
        """TRAN: (fecha to send back, users whose open challenges to me are that recent)."""
        with self.db.sync_read() as tx:
            names = tx.conn.scalars(
                select(User.name)
                .join(GameRequest, GameRequest.challenger_id == User.id)
                .where(GameRequest.challenged_id == caller_id, GameRequest.created_at >= since)
                .order_by(GameRequest.created_at, User.name)
            ).all()
            return tx.stamp, list(names)

    def accept(self, caller_id: int, color: str, challenger: str) -> int:
        """ACEP: the challenged player picks the colour; returns the new game's id."""
        try:
            with self.db.write() as tx:
                challenger_id = tx.conn.scalar(select(User.id).where(User.name == challenger))
                consumed = None
                if challenger_id is not None:
                    consumed = tx.conn.execute(
                        delete(GameRequest)
                        .where(
                            GameRequest.challenger_id == challenger_id,
                            GameRequest.challenged_id == caller_id,
                        )
                        .returning(GameRequest.id)
                    ).first()
                if consumed is None or challenger_id is None:
                    raise Failure(Reply.F_NOREQ, f"no open challenge from '{challenger}' to you")
                white, black = (
                    (caller_id, challenger_id) if color == "B" else (challenger_id, caller_id)
                )
                lo, hi = sorted((white, black))
                return tx.conn.execute(
                    insert(Game)
                    .values(
                        white_id=white,
                        black_id=black,
                        user_lo=lo,
                        user_hi=hi,
                        status=STATUS_ACTIVE,
                        winner=WINNER_NONE,
                        req_white=REQ_NONE,
                        req_black=REQ_NONE,
                        next_ply=1,
                        fen=chess.STARTING_FEN,
                        created_at=tx.stamp,
                        changed_at=tx.stamp,
                    )
                    .returning(Game.id)
                ).scalar_one()
        except Conflict:
            raise Failure(
                Reply.F_GAMEEXISTS, f"you already have an active game with '{challenger}'"
            ) from None

    def decline(self, caller_id: int, other: str) -> None:
        """DECL: remove the open challenge between me and ``other``, whoever made it.
        Both players' clients learn of it through BAJA."""
        with self.db.write() as tx:
            other_id = tx.conn.scalar(select(User.id).where(User.name == other))
            removed = 0
            if other_id is not None:
                lo, hi = sorted((caller_id, other_id))
                removed = tx.conn.execute(
                    delete(GameRequest).where(GameRequest.user_lo == lo, GameRequest.user_hi == hi)
                ).rowcount
            if not removed:
                raise Failure(Reply.F_NOREQ, f"no open challenge between you and '{other}'")
            assert other_id is not None
            me = tx.conn.scalar(select(User.name).where(User.id == caller_id)) or ""
            note_removals(tx, REMOVED_CHALLENGE, [(caller_id, other), (other_id, me)])

    def open_challenges(self, caller_id: int) -> list[tuple[str, str]]:
        """SOLI: every open challenge I made (``E``) or received (``R``), oldest first."""
        with self.db.read() as conn:
            rows = conn.execute(
                select(GameRequest.challenger_id, User.name)
                .join(
                    User,
                    User.id
                    == case(
                        (GameRequest.challenger_id == caller_id, GameRequest.challenged_id),
                        else_=GameRequest.challenger_id,
                    ),
                )
                .where(
                    (GameRequest.challenger_id == caller_id)
                    | (GameRequest.challenged_id == caller_id)
                )
                .order_by(GameRequest.created_at, GameRequest.id)
            ).all()
        return [("E" if r.challenger_id == caller_id else "R", r.name) for r in rows]

    def removals_since(self, caller_id: int, since: int) -> tuple[int, list[tuple[str, str]]]:
        """BAJA: (fecha to send back, (kind, subject) of what went away since fecha)."""
        with self.db.sync_read() as tx:
            rows = tx.conn.execute(
                select(Removal.kind, Removal.subject)
                .where(Removal.user_id == caller_id, Removal.removed_at >= since)
                .order_by(Removal.removed_at, Removal.id)
            ).all()
            return tx.stamp, [(r.kind, r.subject) for r in rows]

    # -- reading games -----------------------------------------------------------------

    def games_since(self, caller_id: int, since: int) -> tuple[int, list[GameSummary]]:
        """PPEN: my games (active and finished) created or changed since fecha."""
        with self.db.sync_read() as tx:
            out: list[GameSummary] = []
            for mine, theirs, their_color in (
                (Game.white_id, Game.black_id, "N"),
                (Game.black_id, Game.white_id, "B"),
            ):
                rows = tx.conn.execute(
                    select(Game.id, User.name, Game.status)
                    .join(User, User.id == theirs)
                    .where(mine == caller_id, Game.changed_at >= since)
                )
                out += [GameSummary(rules.pid(r.id), r.name, their_color, r.status) for r in rows]
            out.sort(key=lambda g: g.game)
            return tx.stamp, out

    def status(self, caller_id: int, game_id: int) -> asyncio.Future[GameStatus]:
        """STAT, through the store's read queue (``Database.read_later``)."""
        rows = self.db.read_later(_GAME, gid=game_id)
        return _then(rows, lambda found: _status(found, caller_id, game_id))

    def moves_after(
        self, caller_id: int, game_id: int, after: int
    ) -> asyncio.Future[list[MoveRecord]]:
        """SPAR, through the store's read queue."""
        rows = self.db.read_later(_PLAYERS_AND_MOVES_AFTER, gid=game_id, after=after)
        return _then(rows, lambda found: _moves_after(found, caller_id, game_id, after))

    def ranking(self, limit: int = 10) -> list[tuple[str, int]]:
        with self.db.read() as conn:
            rows = conn.execute(
                select(User.name, User.wins)
                .where(User.active.is_(True))
                .order_by(User.wins.desc(), User.name)
                .limit(limit)
            ).all()
        return [(r.name, r.wins) for r in rows]

    # -- moves -------------------------------------------------------------------------

    def play(self, caller_id: int, game_id: int, move: MoveRecord) -> asyncio.Future[None]:
        """JGDA, through the store's write queue (``Database.write_later``): on SQLite the
        move is checked now, on a snapshot, and refused at once if it is wrong; the
        write is queued, and the future completes when it is durable or fails with the
        reason it was refused."""
        return self.db.write_later(self.move_job(caller_id, game_id, move))

    def move_job(self, caller_id: int, game_id: int, move: MoveRecord) -> MoveJob:
        """The queued write of ``play``, for ``Database.write_later``."""
        plan = self._plan_on_snapshot(caller_id, game_id, move)
        return MoveJob(self, caller_id, game_id, move, plan)

    def job_from_payload(self, payload: list[Any]) -> MoveJob:
        """The writer process's copy of a worker's ``MoveJob.payload()``."""
        caller_id, game_id, move = payload
        return MoveJob(self, int(caller_id), int(game_id), MoveRecord(*move), None)

    def _plan_on_snapshot(
        self, caller_id: int, game_id: int, move: MoveRecord
    ) -> rules.Plan | None:
        """Where writers wait for each other (SQLite), check the move and compute its
        effects before the write, so the write only confirms the game has not changed."""
        if not self.db.serializes_writes:
            return None
        with self.db.read_each() as conn:
            row = _PLAY_ROW.first(conn, gid=game_id)
            if row is None or rules.maybe_resend(row, caller_id, game_id, move):
                return None
            return rules.plan_move(
                row, caller_id, game_id, move, self._boards, _since_base(conn, game_id, row)
            )

    def _play(
        self, tx: Tx, caller_id: int, game_id: int, move: MoveRecord, plan: rules.Plan | None
    ) -> None:
        conn = tx.conn
        row = _PLAY_ROW.first(conn, gid=game_id)
        if row is None:
            raise rules.no_game(game_id)
        if rules.maybe_resend(row, caller_id, game_id, move):
            last = _MOVE_AT.first(conn, gid=game_id, ply=move.ply)
            if last is not None and tuple(last) == (
                move.jugada,
                move.reverso,
                move.posicion,
                move.promocion,
            ):
                return  # an exact resend of the move just stored: nothing to do
        plan = rules.current_plan(
            row, caller_id, game_id, move, plan, self._boards, _since_base(conn, game_id, row)
        )
        _write_moves(conn, [_move_values(tx, game_id, move, plan)])
        _finish_if_over(tx, game_id, row, plan)

    # -- draws, resignation ------------------------------------------------------------

    def offer_draw(self, caller_id: int, game_id: int, opponent: str) -> None:
        with self.db.write() as tx:
            row, color = _own_active_game(tx.conn, caller_id, game_id, opponent)
            if REQ_OFFER in (row.req_white, row.req_black):
                raise Failure(
                    Reply.F_OFFERED, f"a draw offer is already pending in {rules.pid(game_id)}"
                )
            _update_game(tx, game_id, **{rules.req_field(color): REQ_OFFER})

    def answer_draw(self, caller_id: int, game_id: int, accept: bool, opponent: str) -> None:
        with self.db.write() as tx:
            row, color = _own_active_game(tx.conn, caller_id, game_id, opponent)
            theirs = rules.req_field(other_color(color))
            if getattr(row, theirs) != REQ_OFFER:
                raise Failure(
                    Reply.F_NOOFFER,
                    f"your opponent has no draw offer pending in {rules.pid(game_id)}",
                )
            if accept:
                values = _finish_values(tx, row, WINNER_DRAW, "agreement")
                values[rules.req_field(color)] = REQ_ACCEPT
                _update_game(tx, game_id, **values)
            else:
                _update_game(tx, game_id, **{theirs: REQ_NONE})

    def resign(self, caller_id: int, game_id: int, opponent: str) -> None:
        with self.db.write() as tx:
            row, color = _own_active_game(tx.conn, caller_id, game_id, opponent)
            winner = WINNER_BLACK if color == "B" else WINNER_WHITE
            values = _finish_values(tx, row, winner, "resignation")
            values[rules.req_field(color)] = REQ_RESIGN
            _update_game(tx, game_id, **values)

    def claim_draw(self, caller_id: int, game_id: int, opponent: str) -> None:
        with self.db.write() as tx:
            row, _color = _own_active_game(tx.conn, caller_id, game_id, opponent)
            board = _replay_since(tx.conn, game_id, row.base_ply, row.base_fen)
            if board.is_repetition(3):
                reason: chess.Termination = chess.Termination.THREEFOLD_REPETITION
            elif board.halfmove_clock >= 100:
                reason = chess.Termination.FIFTY_MOVES
            else:
                raise Failure(
                    Reply.F_NOCLAIM,
                    "no draw to claim: the position has not occurred three times and "
                    f"only {board.halfmove_clock // 2} moves by each side have passed "
                    "without a capture or pawn move (50 needed)",
                )
            _update_game(tx, game_id, **_finish_values(tx, row, WINNER_DRAW, reason))

    # -- export and administration -----------------------------------------------------

    def pgn(self, game_id: int, caller_id: int | None = None) -> str:
        """The game as PGN. ``caller_id`` restricts it to the game's players."""
        with self.db.read() as conn:
            row = _game_row(conn, game_id)
            if caller_id is not None:
                rules.color_of(row, caller_id, game_id)
            moves = _stored_moves(conn, game_id)
        return game_pgn(
            white=row.white,
            black=row.black,
            game_id=rules.pid(game_id),
            started=row.created_at,
            ended=row.finished_at,
            status=row.status,
            winner=row.winner,
            end_reason=row.end_reason,
            moves=moves,
        )

    def list_all(self) -> list[GameListing]:
        with self.db.read() as conn:
            rows = conn.execute(
                select(
                    Game.id,
                    White.name,
                    Black.name,
                    Game.status,
                    Game.winner,
                    Game.next_ply,
                    Game.changed_at,
                    Game.end_reason,
                )
                .join(White, White.id == Game.white_id)
                .join(Black, Black.id == Game.black_id)
                .order_by(Game.id)
            ).all()
        return [GameListing(r[0], r[1], r[2], r[3], r[4], r[5] - 1, r[6], r[7]) for r in rows]

    def purge_finished(
        self,
        *,
        finished_before: int | None = None,
        dry_run: bool = False,
        by: str | None = None,
    ) -> list[int]:
        """Remove finished games (those finished before ``finished_before``, a fecha,
        when given) and their moves; returns their ids, or with ``dry_run`` the ids it
        would remove. Both players of each are told through BAJA. ``by``: the
        administrator, for the audit trail."""
        with self.db.write() as tx:
            query = select(Game.id, Game.white_id, Game.black_id).where(
                Game.status == STATUS_FINISHED
            )
            if finished_before is not None:
                query = query.where(Game.finished_at < finished_before)
            rows = tx.conn.execute(query.order_by(Game.id)).all()
            ids = [r.id for r in rows]
            if dry_run or not ids:
                return ids
            for start in range(0, len(ids), PURGE_CHUNK):
                chunk = ids[start : start + PURGE_CHUNK]
                tx.conn.execute(delete(Move).where(Move.game_id.in_(chunk)))
                tx.conn.execute(delete(Game).where(Game.id.in_(chunk)))
            note_removals(
                tx,
                REMOVED_GAME,
                [(player, rules.pid(r.id)) for r in rows for player in (r.white_id, r.black_id)],
            )
            shown = ", ".join(rules.pid(i) for i in ids[:PURGE_AUDIT_IDS])
            more = f" and {len(ids) - PURGE_AUDIT_IDS} more" if len(ids) > PURGE_AUDIT_IDS else ""
            cutoff = "" if finished_before is None else f" finished before {finished_before}"
            audit.record(tx, by, "games purge", "", f"{len(ids)} game(s){cutoff}: {shown}{more}")
            return ids


def forfeit_all(tx: Tx, user_id: int) -> list[int]:
    """A leaving user loses every active game; each opponent is credited a win. Returns
    the games' ids."""
    rows = tx.conn.execute(
        _game_select()
        .where((Game.white_id == user_id) | (Game.black_id == user_id))
        .where(Game.status == STATUS_ACTIVE)
        .order_by(Game.id)  # lock in one global order
        .with_for_update(of=Game)
    ).all()
    for row in rows:
        color = "B" if row.white_id == user_id else "N"
        winner = WINNER_BLACK if color == "B" else WINNER_WHITE
        values = _finish_values(tx, row, winner, LEFT_SERVICE)
        values[rules.req_field(color)] = REQ_RESIGN
        _update_game(tx, row.id, **values)
    return [row.id for row in rows]


def note_removals(tx: Tx, kind: str, rows: list[tuple[int, str]]) -> None:
    """Record that ``subject`` went away for each (user id, subject), for BAJA."""
    for start in range(0, len(rows), PURGE_CHUNK):
        tx.conn.execute(
            insert(Removal),
            [
                {"user_id": user_id, "kind": kind, "subject": subject, "removed_at": tx.stamp}
                for user_id, subject in rows[start : start + PURGE_CHUNK]
            ],
        )


# -- helpers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MoveJob:
    """One move's write, queued to run in a batch (``Database.write_later``)."""

    games: Games
    caller_id: int
    game_id: int
    move: MoveRecord
    plan: rules.Plan | None  # checked on a snapshot (SQLite), to be confirmed against the row

    def __call__(self, tx: Tx) -> None:
        try:
            with mapped_errors():
                self.games._play(tx, self.caller_id, self.game_id, self.move, self.plan)
        except Conflict:
            raise _just_played(self.game_id, self.move) from None

    @staticmethod
    def together(tx: Tx, jobs: list[MoveJob]) -> list[Exception | None]:
        return _store_moves(tx, jobs)

    def payload(self) -> list[object]:
        """The job as JSON values, for the writer process (``Games.job_from_payload``).
        Without the plan: the writer checks the move against the row it locks, as a
        batch on PostgreSQL always does."""
        m = self.move
        return [self.caller_id, self.game_id, [m.ply, m.jugada, m.reverso, m.posicion, m.promocion]]


def _store_moves(tx: Tx, jobs: list[MoveJob]) -> list[Exception | None]:
    """A batch of moves in a few statements instead of several a move (a round trip
    each on PostgreSQL; on SQLite a hand-back of the GIL each, while the batch holds the
    database's one write lock): read every game row at once (PostgreSQL: locked, in id
    order, so that two processes' batches cannot deadlock over game rows; SQLite: one
    row each, under the write lock), check each move in Python (or confirm the check
    made on a snapshot), store them all in one statement (PostgreSQL) or one
    ``executemany`` each for the moves and the games (SQLite).

    A game's second move in the batch, and a possible resend, run afterwards one by one
    as ``MoveJob`` would alone, seeing the stored moves. A refused move is refused
    before anything is written, so it leaves nothing to undo; a database fault raises,
    and ``Database.write_jobs`` then runs each job alone.
    """
    conn = tx.conn
    game_ids = sorted({j.game_id for j in jobs})
    if conn.dialect.name == "sqlite":
        rows = {gid: _PLAY_ROW.first(conn, gid=gid) for gid in game_ids}
    else:
        rows = {r.id: r for r in _PLAY_ROWS.all(conn, gids=game_ids)}
    out: list[Exception | None] = [None] * len(jobs)
    stores: list[dict[str, object]] = []
    endings = []
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
            plan = rules.current_plan(
                row,
                job.caller_id,
                job.game_id,
                job.move,
                job.plan,
                job.games._boards,
                _since_base(conn, job.game_id, row),
            )
        except Failure as e:
            out[i] = e
            continue
        stores.append(_move_values(tx, job.game_id, job.move, plan))
        endings.append((job.game_id, row, plan))
    _write_moves(conn, stores)
    for game_id, row, plan in endings:
        _finish_if_over(tx, game_id, row, plan)
    for i in alone:
        try:
            jobs[i](tx)
        except Failure as e:
            out[i] = e
    return out


def _write_moves(conn: Connection, stores: list[dict[str, object]]) -> None:
    """Insert checked moves and bring their games up to date (``_move_values`` each):
    PostgreSQL in one statement, SQLite, which has no INSERT inside WITH, in one
    ``executemany`` for the moves and one for the games."""
    if conn.dialect.name == "postgresql":
        _STORE_MOVES.run_each(conn, stores)
    else:
        _INSERT_MOVE.run_each(conn, stores)
        _UPDATE_AFTER_MOVE.run_each(conn, stores)


def _move_values(tx: Tx, game_id: int, move: MoveRecord, plan: rules.Plan) -> dict[str, object]:
    """The parameters of ``_INSERT_MOVE``, ``_UPDATE_AFTER_MOVE`` and ``_STORE_MOVES``."""
    return {
        "m_game": game_id,
        "m_ply": move.ply,
        "m_jugada": move.jugada,
        "m_reverso": move.reverso,
        "m_posicion": move.posicion,
        "m_promocion": move.promocion,
        "m_san": plan.san,
        "m_at": tx.stamp,
        "gid": game_id,
        "g_next": move.ply + 1,
        "g_fen": plan.fen,
        "g_changed": tx.stamp,
        "g_base_ply": plan.base_ply,
        "g_base_fen": plan.base_fen,
    }


def _finish_if_over(tx: Tx, game_id: int, row, plan: rules.Plan) -> None:  # type: ignore[no-untyped-def]
    if plan.outcome is not None:
        winner = rules.winner_code(plan.outcome.winner)
        _update_game(tx, game_id, **_finish_values(tx, row, winner, plan.outcome.termination))


def _status(rows: list[Any], caller_id: int, game_id: int) -> GameStatus:
    if not rows:
        raise rules.no_game(game_id)
    row = rows[0]
    color = rules.color_of(row, caller_id, game_id)
    return GameStatus(
        rules.pid(game_id),
        row.white,
        row.black,
        row.changed_at,
        row.status,
        row.winner,
        row.req_white,
        row.req_black,
        color,
        row.next_ply,
    )


def _moves_after(rows: list[Any], caller_id: int, game_id: int, after: int) -> list[MoveRecord]:
    if not rows:
        raise rules.no_game(game_id)
    rules.color_of(rows[0], caller_id, game_id)
    if rows[0].ply is None:  # the outer join found the game but no move
        raise Failure(Reply.F_NOMASJUG, f"no moves after ply {after} in {rules.pid(game_id)}")
    return [MoveRecord(r.ply, r.jugada, r.reverso, r.posicion, r.promocion) for r in rows]


def _then(rows: asyncio.Future[list[Any]], make: Callable[[list[Any]], T]) -> asyncio.Future[T]:
    """A future of ``make(rows)``, computed on the loop once the rows are in (a task per
    read would cost more than the read's own work on the loop), and completed in the
    same callback (``eager.py``)."""
    result = Eager(rows.get_loop())

    def done(found: asyncio.Future[list[Any]]) -> None:
        if found.cancelled():
            result.cancel()
            return
        outcome: T | BaseException | None = found.exception()
        if outcome is None:
            try:
                outcome = make(found.result())
            except Exception as e:
                outcome = e
        settle(result, outcome)

    when_done(rows, done)
    return result


def _just_played(game_id: int, move: MoveRecord) -> Failure:
    # Another transaction stored this ply first (possible only across databases that do
    # not honour the row lock); the client must resynchronise.
    return Failure(Reply.F_PLY, f"ply {move.ply} of {rules.pid(game_id)} was just played")


def _game_select():  # type: ignore[no-untyped-def]
    return (
        select(Game, White.name.label("white"), Black.name.label("black"))
        .join(White, White.id == Game.white_id)
        .join(Black, Black.id == Game.black_id)
    )


# Built and compiled once (storage/prepared.py): for these small statements, SQLAlchemy's
# statement building and execution cost more than the database's work.
_GAME = Prepared(_game_select().where(Game.id == bindparam("gid")))
_GAME_LOCKED = Prepared(_game_select().where(Game.id == bindparam("gid")).with_for_update(of=Game))
_PLAY_ROW = Prepared(
    select(
        Game.white_id,
        Game.black_id,
        Game.status,
        Game.winner,
        Game.req_white,
        Game.req_black,
        Game.next_ply,
        Game.fen,
        Game.base_ply,
        Game.base_fen,
        Game.end_reason,
    )
    .where(Game.id == bindparam("gid"))
    .with_for_update()
)
# A batch of moves (_store_moves): every game row locked in id order.
_PLAY_ROWS = Prepared(
    select(Game.id, *_PLAY_ROW.statement.selected_columns)
    .where(Game.id == any_(bindparam("gids", type_=ARRAY(Integer))))
    .order_by(Game.id)
    .with_for_update()
)
_MOVE_AT = Prepared(
    select(Move.jugada, Move.reverso, Move.posicion, Move.promocion).where(
        Move.game_id == bindparam("gid"), Move.ply == bindparam("ply")
    )
)
_MOVES_AFTER = Prepared(
    select(Move.ply, Move.jugada, Move.reverso, Move.posicion, Move.promocion)
    .where(Move.game_id == bindparam("gid"), Move.ply > bindparam("after"))
    .order_by(Move.ply)
)
# SPAR in one round trip: the game's players (for the access check) with its new moves.
_PLAYERS_AND_MOVES_AFTER_ONE = Prepared(
    select(
        Game.white_id,
        Game.black_id,
        Move.ply,
        Move.jugada,
        Move.reverso,
        Move.posicion,
        Move.promocion,
    )
    .select_from(Game)
    .outerjoin(Move, and_(Move.game_id == Game.id, Move.ply > bindparam("after")))
    .where(Game.id == bindparam("gid"))
    .order_by(Move.ply)
)
_INSERT_MOVE = Prepared(
    insert(Move).values(
        game_id=bindparam("m_game"),
        ply=bindparam("m_ply"),
        jugada=bindparam("m_jugada"),
        reverso=bindparam("m_reverso"),
        posicion=bindparam("m_posicion"),
        promocion=bindparam("m_promocion"),
        san=bindparam("m_san"),
        created_at=bindparam("m_at"),
    )
)
_UPDATE_AFTER_MOVE = Prepared(
    update(Game)
    .where(Game.id == bindparam("gid"))
    .values(
        next_ply=bindparam("g_next"),
        fen=bindparam("g_fen"),
        changed_at=bindparam("g_changed"),
        base_ply=bindparam("g_base_ply"),
        base_fen=bindparam("g_base_fen"),
    )
)


def _array(name: str, column):  # type: ignore[no-untyped-def]
    """A parameter bound to an array of ``column``'s values (``PreparedMany``)."""
    return cast(bindparam(name), ARRAY(column.type))


# PostgreSQL: many SPARs in one statement (the reader thread's batch). The moves are
# read in a LATERAL subquery kept apart by OFFSET 0: otherwise the planner may join
# ``moves`` as a whole (a generic plan guesses the unnest's size) and check ``ply >
# after`` row by row, a cost that grows with the games' length, or with the table.
_SPAR_QUERIES = (
    func.unnest(_array("gid", Game.id), _array("after", Move.ply))
    .table_valued("gid", "after", with_ordinality="i")
    .render_derived(name="q")
)
_SPAR_MOVES = (
    select(Move.ply, Move.jugada, Move.reverso, Move.posicion, Move.promocion)
    .where(Move.game_id == _SPAR_QUERIES.c.gid, Move.ply > _SPAR_QUERIES.c.after)
    .offset(0)
    .lateral("m")
)
_PLAYERS_AND_MOVES_AFTER = PreparedMany(
    select(_SPAR_QUERIES.c.i, Game.white_id, Game.black_id, *_SPAR_MOVES.c)
    .select_from(_SPAR_QUERIES)
    .join(Game, Game.id == _SPAR_QUERIES.c.gid)
    .outerjoin(_SPAR_MOVES, true())
    .order_by(_SPAR_QUERIES.c.i, _SPAR_MOVES.c.ply),
    each=("gid", "after"),
    alone=_PLAYERS_AND_MOVES_AFTER_ONE,
)

# PostgreSQL: moves (a batch's, or one) inserted and their games updated in one statement.
_MOVE_FIELDS = (
    ("m_game", Move.game_id),
    ("m_ply", Move.ply),
    ("m_jugada", Move.jugada),
    ("m_reverso", Move.reverso),
    ("m_posicion", Move.posicion),
    ("m_promocion", Move.promocion),
    ("m_san", Move.san),
    ("g_fen", Game.fen),
    ("g_base_ply", Game.base_ply),
    ("g_base_fen", Game.base_fen),
)
_NEW_MOVES = (
    func.unnest(*(_array(name, column) for name, column in _MOVE_FIELDS))
    .table_valued(*(name for name, _ in _MOVE_FIELDS))
    .render_derived(name="v")
)
_STORE_MOVES = PreparedMany(
    update(Game)
    .where(Game.id == _NEW_MOVES.c.m_game)
    .values(
        next_ply=_NEW_MOVES.c.m_ply + 1,
        fen=_NEW_MOVES.c.g_fen,
        changed_at=bindparam("g_changed"),
        base_ply=_NEW_MOVES.c.g_base_ply,
        base_fen=_NEW_MOVES.c.g_base_fen,
    )
    .add_cte(
        insert(Move)
        .from_select(
            [column.key for _, column in _MOVE_FIELDS[:7]] + ["created_at"],
            select(
                *(_NEW_MOVES.c[name] for name, _ in _MOVE_FIELDS[:7]),
                bindparam("m_at", type_=Move.created_at.type),
            ),
        )
        .cte("stored")
    ),
    each=tuple(name for name, _ in _MOVE_FIELDS),
)


def _game_row(conn: Connection, game_id: int, *, lock: bool = False):  # type: ignore[no-untyped-def]
    row = (_GAME_LOCKED if lock else _GAME).first(conn, gid=game_id)
    if row is None:
        raise rules.no_game(game_id)
    return row


def _own_active_game(conn: Connection, caller_id: int, game_id: int, opponent: str):  # type: ignore[no-untyped-def]
    row = _game_row(conn, game_id, lock=True)
    color = rules.color_of(row, caller_id, game_id)
    actual = row.black if color == "B" else row.white
    if opponent != actual:
        raise Failure(
            Reply.F_OPPONENT,
            f"your opponent in {rules.pid(game_id)} is '{actual}', not '{opponent}'",
        )
    rules.require_active(row, game_id)
    return row, color


def _finish_values(tx: Tx, row, winner: int, reason: str | chess.Termination) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Column values that end a game; credits the winner's win in the same transaction."""
    reason = rules.ending_name(reason)
    if winner in (WINNER_WHITE, WINNER_BLACK):
        winner_id = row.white_id if winner == WINNER_WHITE else row.black_id
        tx.conn.execute(update(User).where(User.id == winner_id).values(wins=User.wins + 1))
    return {
        "status": STATUS_FINISHED,
        "winner": winner,
        "end_reason": reason,
        "finished_at": tx.stamp,
        "changed_at": tx.stamp,
    }


def _update_game(tx: Tx, game_id: int, **values: object) -> None:
    values.setdefault("changed_at", tx.stamp)
    tx.conn.execute(update(Game).where(Game.id == game_id).values(**values))


def _active_user_id(conn: Connection, name: str) -> int:
    found = conn.scalar(select(User.id).where(User.name == name, User.active.is_(True)))
    if found is None:
        raise Failure(Reply.F_NOUSER, f"no active user '{name}'")
    return found


def _open_request(conn: Connection, lo: int, hi: int) -> int | None:
    return conn.scalar(
        select(GameRequest.id).where(GameRequest.user_lo == lo, GameRequest.user_hi == hi)
    )


def _active_game(conn: Connection, lo: int, hi: int) -> int | None:
    return conn.scalar(
        select(Game.id).where(Game.user_lo == lo, Game.user_hi == hi, Game.status == STATUS_ACTIVE)
    )


def _replay_since(
    conn: Connection, game_id: int, base_ply: int, base_fen: str | None
) -> chess.Board:
    """The board from the game's base position with the plies played since on its stack.

    Every repetition rule of python-chess looks back only to the last irreversible move,
    which is at or before ``base_ply``, so this board answers them as a full replay would.
    Stored moves were validated when played, so ``push`` without a legality re-check.
    """
    return rules.replay(base_fen, _stored_moves(conn, game_id, after=base_ply))


def _since_base(conn: Connection, game_id: int, row: Any) -> rules.StoredSince:
    """The game's stored moves since the base position of ``row``, read when asked."""
    return partial(_stored_moves, conn, game_id, after=row.base_ply)


def _stored_moves(conn: Connection, game_id: int, *, after: int = 0) -> list[chess.Move]:
    """The game's moves in order; ``jugada`` has no promotion, ``promocion`` carries it."""
    rows = _MOVES_AFTER.all(conn, gid=game_id, after=after)
    return [rules.as_move(r.jugada, r.promocion) for r in rows]
