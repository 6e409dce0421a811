"""The SQL of blocks (BLOQ, BLOR, BLOL; ``domain/blocks.py`` asks them), one method
each, within a transaction."""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, insert, or_, select

from ajedrez.domain.values import STATUS_ACTIVE
from ajedrez.store.models import Block, Game, Observer, User


class BlockQueries:
    conn: Connection
    stamp: int

    def blocks(self, blocker_ids: list[int], blocked_id: int) -> bool:
        """Whether any of ``blocker_ids`` blocks ``blocked_id``."""
        found = self.conn.scalar(
            select(Block.blocker_id)
            .where(Block.blocker_id.in_(blocker_ids), Block.blocked_id == blocked_id)
            .limit(1)
        )
        return found is not None

    def add_block(self, blocker_id: int, blocked_id: int) -> None:
        self.conn.execute(
            insert(Block).values(
                blocker_id=blocker_id, blocked_id=blocked_id, created_at=self.stamp
            )
        )

    def drop_block(self, blocker_id: int, blocked_id: int) -> bool:
        deleted = self.conn.execute(
            delete(Block).where(Block.blocker_id == blocker_id, Block.blocked_id == blocked_id)
        )
        return deleted.rowcount > 0

    def block_count(self, blocker_id: int) -> int:
        return int(
            self.conn.scalar(
                select(func.count()).select_from(Block).where(Block.blocker_id == blocker_id)
            )
            or 0
        )

    def blocked_names(self, blocker_id: int) -> list[str]:
        return list(
            self.conn.scalars(
                select(User.name)
                .join(Block, Block.blocked_id == User.id)
                .where(Block.blocker_id == blocker_id)
                .order_by(User.name)
            )
        )

    def observed_games_of(self, observer_id: int, player_id: int) -> list[int]:
        """The active games of ``player_id`` that ``observer_id`` observes."""
        plays = or_(Game.white_id == player_id, Game.black_id == player_id)
        return list(
            self.conn.scalars(
                select(Game.id)
                .join(Observer, Observer.game_id == Game.id)
                .where(Observer.user_id == observer_id, Game.status == STATUS_ACTIVE, plays)
                .order_by(Game.id)
            )
        )
