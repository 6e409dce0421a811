"""The SQL of challenges and games that are not a move (``moves.py`` has those): what
the domain's ``Games`` reads and writes, one method each, within a transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import chess
from sqlalchemy import Connection, case, delete, insert, select, update

from ajedrez.domain.clocks import control_columns, control_from, waiting_color
from ajedrez.domain.rules import as_move
from ajedrez.domain.timecontrol import TimeControl
from ajedrez.domain.values import (
    REQ_NONE,
    STATUS_ACTIVE,
    STATUS_FINISHED,
    WHITE,
    WINNER_BLACK,
    WINNER_NONE,
    WINNER_WHITE,
)
from ajedrez.store import statements as st
from ajedrez.store.models import Game, GameRequest, Move, Removal, User

CHUNK = 500  # ids per statement when deleting many games
_CONTROL = (GameRequest.tc_initial_ms, GameRequest.tc_increment_ms, GameRequest.tc_cap_ms)
_CONTROL_OF_GAME = (Game.tc_initial_ms, Game.tc_increment_ms, Game.tc_cap_ms)


class GameQueries:
    conn: Connection
    stamp: int

    # -- users, as games need them ------------------------------------------------------

    def user_ref(self, user_id: int) -> Any:
        """The user's (name, active), or None."""
        return self.conn.execute(select(User.name, User.active).where(User.id == user_id)).first()

    def user_id(self, name: str) -> int | None:
        return self.conn.scalar(select(User.id).where(User.name == name))

    def active_user_id(self, name: str) -> int | None:
        """The active account ``name`` (never a guest: nobody challenges or removes one)."""
        return self.conn.scalar(
            select(User.id).where(User.name == name, User.active.is_(True), User.guest.is_(False))
        )

    def user_name(self, user_id: int) -> str | None:
        return self.conn.scalar(select(User.name).where(User.id == user_id))

    def ranking(self, limit: int) -> list[tuple[str, int]]:
        rows = self.conn.execute(
            select(User.name, User.wins)
            .where(User.active.is_(True), User.guest.is_(False))
            .order_by(User.wins.desc(), User.name)
            .limit(limit)
        ).all()
        return [(r.name, r.wins) for r in rows]

    # -- challenges ----------------------------------------------------------------------

    def challenge_between(self, lo: int, hi: int) -> bool:
        found = self.conn.scalar(
            select(GameRequest.id).where(GameRequest.user_lo == lo, GameRequest.user_hi == hi)
        )
        return found is not None

    def active_game_between(self, lo: int, hi: int) -> bool:
        found = self.conn.scalar(
            select(Game.id).where(
                Game.user_lo == lo, Game.user_hi == hi, Game.status == STATUS_ACTIVE
            )
        )
        return found is not None

    def add_challenge(
        self,
        challenger_id: int,
        challenged_id: int,
        control: TimeControl | None,
        private: bool = False,
    ) -> None:
        lo, hi = sorted((challenger_id, challenged_id))
        self.conn.execute(
            insert(GameRequest).values(
                challenger_id=challenger_id,
                challenged_id=challenged_id,
                user_lo=lo,
                user_hi=hi,
                created_at=self.stamp,
                private=private,
                **control_columns(control),
            )
        )

    def challengers_since(self, user_id: int, since: int) -> list[tuple[str, TimeControl | None]]:
        """(user, time control) of the open challenges to ``user_id`` at least as recent
        as ``since``."""
        rows = self.conn.execute(
            select(User.name, *_CONTROL)
            .join(GameRequest, GameRequest.challenger_id == User.id)
            .where(GameRequest.challenged_id == user_id, GameRequest.created_at >= since)
            .order_by(GameRequest.created_at, User.name)
        ).all()
        return [(r.name, control_from(*r[1:])) for r in rows]

    def take_challenge(
        self, challenger_id: int, challenged_id: int
    ) -> tuple[TimeControl | None, bool] | None:
        """Remove the open challenge from one to the other and return its time control
        and whether the game is to be private; None if there is none."""
        taken = self.conn.execute(
            delete(GameRequest)
            .where(
                GameRequest.challenger_id == challenger_id,
                GameRequest.challenged_id == challenged_id,
            )
            .returning(*_CONTROL, GameRequest.private)
        ).first()
        return None if taken is None else (control_from(*taken[:3]), bool(taken[3]))

    def drop_challenges_between(self, lo: int, hi: int) -> list[int]:
        """Remove the open challenge between the two; returns its maker (none: empty)."""
        return list(
            self.conn.scalars(
                delete(GameRequest)
                .where(GameRequest.user_lo == lo, GameRequest.user_hi == hi)
                .returning(GameRequest.challenger_id)
            )
        )

    def drop_challenges_of(self, user_id: int) -> list[tuple[int, int]]:
        """Remove every open challenge the user made or received; returns (maker,
        challenged) of each."""
        closed = self.conn.execute(
            delete(GameRequest)
            .where((GameRequest.challenger_id == user_id) | (GameRequest.challenged_id == user_id))
            .returning(GameRequest.challenger_id, GameRequest.challenged_id)
        ).all()
        return [(a, b) for a, b in closed]

    def user_names(self, user_ids: list[int]) -> dict[int, str]:
        rows = self.conn.execute(select(User.id, User.name).where(User.id.in_(user_ids)))
        return {r.id: r.name for r in rows}

    def open_challenges(self, user_id: int) -> list[tuple[bool, str, TimeControl | None]]:
        """(made by ``user_id``, the other user, time control) of every open challenge,
        oldest first."""
        rows = self.conn.execute(
            select(GameRequest.challenger_id, User.name, *_CONTROL)
            .join(
                User,
                User.id
                == case(
                    (GameRequest.challenger_id == user_id, GameRequest.challenged_id),
                    else_=GameRequest.challenger_id,
                ),
            )
            .where((GameRequest.challenger_id == user_id) | (GameRequest.challenged_id == user_id))
            .order_by(GameRequest.created_at, GameRequest.id)
        ).all()
        return [(r.challenger_id == user_id, r.name, control_from(*r[2:])) for r in rows]

    def removals_since(self, user_id: int, since: int) -> list[tuple[str, str]]:
        rows = self.conn.execute(
            select(Removal.kind, Removal.subject)
            .where(Removal.user_id == user_id, Removal.removed_at >= since)
            .order_by(Removal.removed_at, Removal.id)
        ).all()
        return [(r.kind, r.subject) for r in rows]

    # -- games ---------------------------------------------------------------------------

    def add_game(
        self, white_id: int, black_id: int, fen: str, clock: dict[str, object] | None = None
    ) -> int:
        """A new game; ``clock``: its ``tc_*`` and clock columns (none: no clock)."""
        lo, hi = sorted((white_id, black_id))
        return self.conn.execute(
            insert(Game)
            .values(
                white_id=white_id,
                black_id=black_id,
                user_lo=lo,
                user_hi=hi,
                status=STATUS_ACTIVE,
                winner=WINNER_NONE,
                req_white=REQ_NONE,
                req_black=REQ_NONE,
                next_ply=1,
                fen=fen,
                created_at=self.stamp,
                changed_at=self.stamp,
                **(clock or {}),
            )
            .returning(Game.id)
        ).scalar_one()

    def games_since(self, user_id: int, since: int) -> list[tuple[int, str, str, int]]:
        """(game, opponent, opponent's colour, status) of the user's games created or
        changed since ``since``, by game id."""
        out: list[tuple[int, str, str, int]] = []
        for mine, theirs, their_color in (
            (Game.white_id, Game.black_id, "N"),
            (Game.black_id, Game.white_id, "B"),
        ):
            rows = self.conn.execute(
                select(Game.id, User.name, Game.status)
                .join(User, User.id == theirs)
                .where(mine == user_id, Game.changed_at >= since)
            )
            out += [(r.id, r.name, their_color, r.status) for r in rows]
        out.sort()
        return out

    def game(self, game_id: int, *, lock: bool = False) -> Any:
        """The game's row with its players' names (``GameRecord``), or None; ``lock``
        holds it for this transaction (``FOR UPDATE``)."""
        return (st.GAME_LOCKED if lock else st.GAME).first(self.conn, gid=game_id)

    def active_games_of(self, user_id: int) -> list[Any]:
        """The user's active games, locked in id order (one global order: no deadlock)."""
        return list(
            self.conn.execute(
                st.game_select()
                .where((Game.white_id == user_id) | (Game.black_id == user_id))
                .where(Game.status == STATUS_ACTIVE)
                .order_by(Game.id)
                .with_for_update(of=Game)
            ).all()
        )

    def moves(self, game_id: int, *, after: int = 0) -> list[chess.Move]:
        """The game's moves after ply ``after``, in order."""
        return stored_moves(self.conn, game_id, after=after)

    def move_clocks(self, game_id: int) -> list[int | None]:
        """Each move's remaining time for its mover (ms; None: not timed), in order."""
        found = self.conn.scalars(
            select(Move.clock_ms).where(Move.game_id == game_id).order_by(Move.ply)
        )
        return list(found)

    def update_game(self, game_id: int, **values: object) -> None:
        values.setdefault("changed_at", self.stamp)
        self.conn.execute(update(Game).where(Game.id == game_id).values(**values))

    def finish_game(
        self, game_id: int, row: Any, winner: int, reason: str, **values: object
    ) -> None:
        """End the game (``row``: its players) with ``winner`` (a WINNER_* value) for
        ``reason``, credit the winner's win, and set ``values`` too."""
        if winner in (WINNER_WHITE, WINNER_BLACK):
            winner_id = row.white_id if winner == WINNER_WHITE else row.black_id
            self.conn.execute(update(User).where(User.id == winner_id).values(wins=User.wins + 1))
        self.update_game(
            game_id,
            status=STATUS_FINISHED,
            winner=winner,
            end_reason=reason,
            finished_at=self.stamp,
            deadline_ms=None,  # no clock runs in a finished game
            warn_at_ms=None,
            **values,
        )

    def finish_timed_out(self, endings: Sequence[tuple[int, Any, int, str]]) -> None:
        """End many games on time at once, each (game id, row, winner, reason): the
        running side's bank spent, the winner credited. Two statements for them all (the
        scheduler's pass ends a burst of games after an outage at this rate)."""
        if not endings:
            return
        wins = [
            {"uid": row.white_id if winner == WINNER_WHITE else row.black_id}
            for _gid, row, winner, _reason in endings
            if winner in (WINNER_WHITE, WINNER_BLACK)
        ]
        if wins:
            self.conn.execute(st.CREDIT_WIN, wins)
        ended = []
        for gid, row, winner, reason in endings:
            white_out = waiting_color(row) == WHITE  # that side's bank is spent
            ended.append(
                {
                    "gid": gid,
                    "g_winner": winner,
                    "g_reason": reason,
                    "g_white_ms": 0 if white_out else row.white_ms,
                    "g_black_ms": row.black_ms if white_out else 0,
                    "g_at": self.stamp,
                }
            )
        self.conn.execute(st.END_ON_TIME, ended)

    def list_games(self) -> list[Any]:
        """Every game: id, white, black, status, winner, next_ply, changed_at, end_reason,
        its time control and deadline."""
        return list(
            self.conn.execute(
                select(
                    Game.id,
                    st.White.name.label("white"),
                    st.Black.name.label("black"),
                    Game.status,
                    Game.winner,
                    Game.next_ply,
                    Game.changed_at,
                    Game.end_reason,
                    *_CONTROL_OF_GAME,
                    Game.deadline_ms,
                )
                .join(st.White, st.White.id == Game.white_id)
                .join(st.Black, st.Black.id == Game.black_id)
                .order_by(Game.id)
            ).all()
        )

    def finished_games(self, before: int | None) -> list[Any]:
        """(id, white_id, black_id) of the games finished before ``before`` (all
        finished games when None), by id."""
        query = select(Game.id, Game.white_id, Game.black_id).where(Game.status == STATUS_FINISHED)
        if before is not None:
            query = query.where(Game.finished_at < before)
        return list(self.conn.execute(query.order_by(Game.id)).all())

    # -- clocks and leave ---------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """The earliest running deadline (``ix_games_deadline``)."""
        return self.conn.scalar(st.NEXT_DEADLINE)

    def next_warning(self) -> int | None:
        """The earliest clock warning due (``ix_games_warn``)."""
        return self.conn.scalar(st.NEXT_WARNING)

    def due_warnings(self, now_ms: int, limit: int) -> list[Any]:
        """Up to ``limit`` games whose clock warning is due at ``now_ms``, earliest
        first, locked; games another transaction holds are skipped."""
        return self._due(Game.warn_at_ms, now_ms, limit)

    def set_warnings(self, warnings: list[tuple[int, int | None]]) -> None:
        """Each (game, its next warning) at once."""
        if warnings:
            self.conn.execute(st.SET_WARNING, [{"gid": g, "warn": w} for g, w in warnings])

    def due_games(self, now_ms: int, limit: int) -> list[Any]:
        """Up to ``limit`` games whose deadline is at or before ``now_ms``, earliest first,
        locked; games another transaction holds are skipped, not waited for."""
        return self._due(Game.deadline_ms, now_ms, limit)

    def _due(self, when: Any, now_ms: int, limit: int) -> list[Any]:
        """The scheduler's games: ``when`` (an indexed ms column) at or before now."""
        return list(
            self.conn.execute(
                st.game_select()
                .where(when.isnot(None), when <= now_ms)
                .order_by(when)
                .limit(limit)
                .with_for_update(of=Game, skip_locked=True)
            ).all()
        )

    def running_clocks(
        self, *, game_id: int | None = None, user_id: int | None = None
    ) -> list[Any]:
        """The games whose clock runs (of one game, or of one player's), locked in id order."""
        query = st.game_select().where(Game.deadline_ms.isnot(None))
        if game_id is not None:
            query = query.where(Game.id == game_id)
        if user_id is not None:
            query = query.where((Game.white_id == user_id) | (Game.black_id == user_id))
        return list(self.conn.execute(query.order_by(Game.id).with_for_update(of=Game)).all())

    def leaves_until(self, user_ids: list[int], now_ms: int) -> dict[int, int]:
        """When the leave of each of these users who is on leave at ``now_ms`` ends."""
        rows = self.conn.execute(
            select(User.id, User.leave_until_ms).where(
                User.id.in_(user_ids), User.leave_until_ms > now_ms
            )
        ).all()
        return {r.id: r.leave_until_ms for r in rows}

    def leave_of(self, user_id: int) -> Any:
        """The user's leave columns, locked."""
        return self.conn.execute(
            select(User.leave_until_ms, User.leave_left_ms, User.leave_year)
            .where(User.id == user_id)
            .with_for_update()
        ).one()

    def set_leave(self, user_id: int, until_ms: int | None, left_ms: int, year: int) -> None:
        self.conn.execute(
            update(User)
            .where(User.id == user_id)
            .values(leave_until_ms=until_ms, leave_left_ms=left_ms, leave_year=year)
        )

    def delete_games(self, ids: list[int]) -> None:
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            self.conn.execute(delete(Move).where(Move.game_id.in_(chunk)))
            self.conn.execute(delete(Game).where(Game.id.in_(chunk)))


def stored_moves(conn: Connection, game_id: int, *, after: int = 0) -> list[chess.Move]:
    """The game's moves after ply ``after``, in order, read on ``conn`` (a transaction's,
    or the snapshot a move is checked on before it is queued)."""
    rows = st.MOVES_AFTER.all(conn, gid=game_id, after=after)
    return [as_move(r.jugada, r.promocion) for r in rows]
