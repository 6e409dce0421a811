"""The SQL of live play: observers, chat, seeks and takeback requests (``domain/live.py``
asks them), one method each, within a transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Select, and_, delete, exists, func, insert, or_, select, update
from sqlalchemy.orm import aliased

from ajedrez.domain.clocks import control_columns
from ajedrez.domain.timecontrol import ANY_CORRESPONDENCE, DAY_MS, TimeControl
from ajedrez.domain.values import STATUS_ACTIVE
from ajedrez.store.models import (
    ChatMessage,
    EventCounter,
    Game,
    Move,
    Observer,
    Presence,
    Seek,
    Takeback,
    User,
)

# A live seek: one with a clock whose increment is under a day (TimeControl's
# ``correspondence`` is the rest); it lasts only while its owner is connected.
LIVE_SEEK = and_(Seek.tc_increment_ms.is_not(None), Seek.tc_increment_ms < DAY_MS)


def absent_accounts(now_ms: int) -> Select[int]:
    """The accounts (guests are their connections' own) with no session in any process
    whose lease runs past ``now_ms``."""
    present = exists().where(Presence.user_id == User.id, Presence.lease_ms > now_ms)
    return select(User.id).where(User.guest.is_(False), ~present)


class LiveQueries:
    conn: Connection
    stamp: int

    def serialize(self) -> None:
        """Queue behind every other transaction that calls this (and every one writing
        events): the lock of the events counter's row, held to commit. Pairing seeks
        needs it, or two seeks posted at once could each miss the other."""
        self.conn.execute(
            select(EventCounter.last).where(EventCounter.id == 1).with_for_update()
        ).first()

    def lock_user(self, user_id: int) -> None:
        self.conn.execute(select(User.id).where(User.id == user_id).with_for_update()).first()

    # -- observers -------------------------------------------------------------------------

    def observes(self, game_id: int, user_id: int) -> bool:
        found = self.conn.scalar(
            select(Observer.user_id).where(Observer.game_id == game_id, Observer.user_id == user_id)
        )
        return found is not None

    def add_observer(self, game_id: int, user_id: int) -> None:
        self.conn.execute(
            insert(Observer).values(game_id=game_id, user_id=user_id, since_at=self.stamp)
        )

    def drop_observer(self, game_id: int, user_id: int) -> bool:
        deleted = self.conn.execute(
            delete(Observer).where(Observer.game_id == game_id, Observer.user_id == user_id)
        )
        return deleted.rowcount > 0

    def observer_names(self, game_id: int) -> list[str]:
        return list(
            self.conn.scalars(
                select(User.name)
                .join(Observer, Observer.user_id == User.id)
                .where(Observer.game_id == game_id)
                .order_by(User.name)
            )
        )

    # -- chat ------------------------------------------------------------------------------

    def add_chat(
        self, game_id: int, user_id: int, channel: str, ply: int, at_ms: int, text: str
    ) -> None:
        self.conn.execute(
            insert(ChatMessage).values(
                game_id=game_id,
                user_id=user_id,
                channel=channel,
                ply=ply,
                at=self.stamp,
                at_ms=at_ms,
                text=text,
            )
        )

    def chats_since(self, user_id: int, since_ms: int) -> int:
        """How many messages the user said since ``since_ms``."""
        return int(
            self.conn.scalar(
                select(func.count())
                .select_from(ChatMessage)
                .where(ChatMessage.user_id == user_id, ChatMessage.at_ms >= since_ms)
            )
            or 0
        )

    def chat(
        self, game_id: int, since: int = 0, channels: tuple[str, ...] = ("J", "O")
    ) -> list[Any]:
        """The game's messages stamped at or after ``since`` on those channels, oldest
        first: (at_ms, channel, ply, name, text)."""
        return list(
            self.conn.execute(
                select(
                    ChatMessage.at_ms,
                    ChatMessage.channel,
                    ChatMessage.ply,
                    User.name,
                    ChatMessage.text,
                )
                .join(User, User.id == ChatMessage.user_id)
                .where(
                    ChatMessage.game_id == game_id,
                    ChatMessage.at >= since,
                    ChatMessage.channel.in_(channels),
                )
                .order_by(ChatMessage.id)
            ).all()
        )

    # -- seeks -----------------------------------------------------------------------------

    def seeks_of_control(self, control: str, other_than: int) -> list[Any]:
        """Waiting seeks of that control by other users, oldest first: (id, user_id,
        private)."""
        return list(
            self.conn.execute(
                select(Seek.id, Seek.user_id, Seek.private)
                .where(Seek.control == control, Seek.user_id != other_than)
                .order_by(Seek.id)
            ).all()
        )

    def correspondence_seeks(self, control: str | None, other_than: int) -> list[Any]:
        """Waiting seeks by other users that a correspondence seek pairs with, oldest
        first: those of ``control`` and those of any correspondence control, or, for
        ``control`` None (the caller's own seek takes any), every correspondence seek.
        Rows: (id, user_id, private, control, tc_initial_ms, tc_increment_ms, tc_cap_ms)."""
        wanted = [Seek.control == ANY_CORRESPONDENCE]
        if control is None:
            wanted.append(Seek.tc_increment_ms >= DAY_MS)
        else:
            wanted.append(Seek.control == control)
        return list(
            self.conn.execute(
                select(
                    Seek.id,
                    Seek.user_id,
                    Seek.private,
                    Seek.control,
                    Seek.tc_initial_ms,
                    Seek.tc_increment_ms,
                    Seek.tc_cap_ms,
                )
                .where(or_(*wanted), Seek.user_id != other_than)
                .order_by(Seek.id)
            ).all()
        )

    def has_seek(self, user_id: int, control: str) -> bool:
        found = self.conn.scalar(
            select(Seek.id).where(Seek.user_id == user_id, Seek.control == control)
        )
        return found is not None

    def add_seek(
        self, user_id: int, control_text: str, control: TimeControl | None, private: bool
    ) -> None:
        self.conn.execute(
            insert(Seek).values(
                user_id=user_id,
                control=control_text,
                private=private,
                created_at=self.stamp,
                **control_columns(control),
            )
        )

    def drop_seek(self, seek_id: int) -> None:
        self.conn.execute(delete(Seek).where(Seek.id == seek_id))

    def drop_seeks(self, user_id: int, control: str | None = None) -> int:
        query = delete(Seek).where(Seek.user_id == user_id)
        if control is not None:
            query = query.where(Seek.control == control)
        return self.conn.execute(query).rowcount

    def seek_count(self, user_id: int) -> int:
        return int(
            self.conn.scalar(select(func.count()).select_from(Seek).where(Seek.user_id == user_id))
            or 0
        )

    def absent(self, user_id: int, now_ms: int) -> bool:
        """The account has no session anywhere (a guest never counts as absent)."""
        found = self.conn.scalar(absent_accounts(now_ms).where(User.id == user_id))
        return found is not None

    def drop_live_seeks(self, now_ms: int, user_id: int | None = None) -> int:
        """Withdraw the live seeks of absent accounts (only ``user_id``'s, when given)."""
        owners = absent_accounts(now_ms)
        if user_id is not None:
            owners = owners.where(User.id == user_id)
        return self.conn.execute(delete(Seek).where(LIVE_SEEK, Seek.user_id.in_(owners))).rowcount

    def seeks(self) -> list[tuple[str, str]]:
        """(user, control) of every waiting seek, oldest first."""
        rows = self.conn.execute(
            select(User.name, Seek.control).join(User, User.id == Seek.user_id).order_by(Seek.id)
        ).all()
        return [(r.name, r.control) for r in rows]

    def games_in_play(self, limit: int) -> list[tuple[int, str, str]]:
        """(id, white, black) of the newest active games anybody may observe."""
        white, black = aliased(User), aliased(User)
        rows = self.conn.execute(
            select(Game.id, white.name, black.name)
            .join(white, white.id == Game.white_id)
            .join(black, black.id == Game.black_id)
            .where(Game.status == STATUS_ACTIVE, Game.private.is_(False))
            .order_by(Game.id.desc())
            .limit(limit)
        ).all()
        return [(r[0], r[1], r[2]) for r in rows]

    # -- takeback --------------------------------------------------------------------------

    def takeback(self, game_id: int) -> Any:
        """The game's takeback request (ply, by_id), or None."""
        return self.conn.execute(
            select(Takeback.ply, Takeback.by_id).where(Takeback.game_id == game_id)
        ).first()

    def set_takeback(self, game_id: int, ply: int, by_id: int) -> None:
        self.conn.execute(delete(Takeback).where(Takeback.game_id == game_id))
        self.conn.execute(
            insert(Takeback).values(game_id=game_id, ply=ply, by_id=by_id, asked_at=self.stamp)
        )

    def drop_takeback(self, game_id: int) -> None:
        self.conn.execute(delete(Takeback).where(Takeback.game_id == game_id))

    def move_clock(self, game_id: int, ply: int) -> int | None:
        """The mover's bank after the move of ``ply`` (ms; None: no clock or no move)."""
        return self.conn.scalar(
            select(Move.clock_ms).where(Move.game_id == game_id, Move.ply == ply)
        )

    def take_back(self, game_id: int, ply: int, **values: object) -> None:
        """Remove the move of ``ply`` (the last) and set the game's row to ``values``."""
        self.conn.execute(delete(Move).where(Move.game_id == game_id, Move.ply == ply))
        values.setdefault("changed_at", self.stamp)
        self.conn.execute(update(Game).where(Game.id == game_id).values(next_ply=ply, **values))
