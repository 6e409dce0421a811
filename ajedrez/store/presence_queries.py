"""The SQL of presence (``domain/presence.py``): the logged-in sessions each server
process serves of each account, a leased row per (account, process)."""

from __future__ import annotations

from sqlalchemy import Connection, delete, func, insert, select, update

from ajedrez.store.models import Presence


class PresenceQueries:
    conn: Connection
    stamp: int

    def sessions_of(self, user_id: int, now_ms: int) -> int:
        """The account's sessions over every process whose lease runs past ``now_ms``."""
        return int(
            self.conn.scalar(
                select(func.coalesce(func.sum(Presence.sessions), 0)).where(
                    Presence.user_id == user_id, Presence.lease_ms > now_ms
                )
            )
            or 0
        )

    def add_session(self, user_id: int, holder: str, lease_ms: int) -> None:
        """One more session of the account in the process ``holder``. The caller holds
        the user's row locked, so no other transaction inserts the same row meanwhile."""
        done = self.conn.execute(
            update(Presence)
            .where(Presence.user_id == user_id, Presence.holder == holder)
            .values(sessions=Presence.sessions + 1, lease_ms=lease_ms)
        )
        if done.rowcount == 0:
            self.conn.execute(
                insert(Presence).values(
                    user_id=user_id, holder=holder, sessions=1, lease_ms=lease_ms
                )
            )

    def drop_session(self, user_id: int, holder: str) -> None:
        """One session fewer of the account in ``holder``; the row goes with its last."""
        mine = (Presence.user_id == user_id, Presence.holder == holder)
        self.conn.execute(update(Presence).where(*mine).values(sessions=Presence.sessions - 1))
        self.conn.execute(delete(Presence).where(*mine, Presence.sessions <= 0))

    def renew_presences(self, holder: str, lease_ms: int) -> None:
        self.conn.execute(
            update(Presence).where(Presence.holder == holder).values(lease_ms=lease_ms)
        )

    def drop_presences(self, *, holder: str | None = None, lapsed_at: int | None = None) -> None:
        """The rows of the process ``holder`` (it stops), or those whose lease ended by
        ``lapsed_at`` (their processes died)."""
        query = delete(Presence)
        if holder is not None:
            query = query.where(Presence.holder == holder)
        if lapsed_at is not None:
            query = query.where(Presence.lease_ms <= lapsed_at)
        self.conn.execute(query)
