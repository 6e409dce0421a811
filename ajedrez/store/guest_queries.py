"""The SQL of guests (``domain/guests.py``): accounts a seed protocol's listener makes
for a connection, and the lease on each name that the connection holding it renews."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, insert, or_, select, update

from ajedrez.domain.values import STATUS_ACTIVE
from ajedrez.store.models import Game, Observer, User

# The password hash of a guest: no password verifies against it, and login never looks.
NO_PASSWORD = ""


class GuestQueries:
    conn: Connection
    stamp: int

    def name_holder(self, name: str) -> Any:
        """(id, name, guest, guest_lease_ms) of the account, registered or guest, whose
        name is ``name`` in any case; None when there is none."""
        return self.conn.execute(
            select(User.id, User.name, User.guest, User.guest_lease_ms)
            .where(or_(User.name_key == name.lower(), User.name == name))
            .limit(1)
        ).first()

    def add_guest(self, name: str, lease_ms: int) -> int:
        return int(
            self.conn.execute(
                insert(User)
                .values(
                    name=name,
                    name_key=name.lower(),
                    password_hash=NO_PASSWORD,
                    comment="",
                    active=True,
                    admitted_at=self.stamp,
                    changed_at=self.stamp,
                    wins=0,
                    guest=True,
                    guest_lease_ms=lease_ms,
                )
                .returning(User.id)
            ).scalar_one()
        )

    def take_guest(self, user_id: int, name: str, now_ms: int, lease_ms: int) -> bool:
        """Hold the guest ``user_id``, spelled ``name`` from now on, unless another
        connection holds it (its lease runs past ``now_ms``)."""
        done = self.conn.execute(
            update(User)
            .where(
                User.id == user_id,
                User.guest.is_(True),
                or_(User.guest_lease_ms.is_(None), User.guest_lease_ms <= now_ms),
            )
            .values(
                name=name, name_key=name.lower(), guest_lease_ms=lease_ms, changed_at=self.stamp
            )
        )
        return done.rowcount == 1

    def renew_guest(self, user_id: int, held_ms: int, lease_ms: int) -> bool:
        """Move the lease of the guest held until ``held_ms`` on to ``lease_ms``; False
        when it is not held so any more (another connection took the name meanwhile)."""
        done = self.conn.execute(
            update(User)
            .where(User.id == user_id, User.guest.is_(True), User.guest_lease_ms == held_ms)
            .values(guest_lease_ms=lease_ms)
        )
        return done.rowcount == 1

    def release_guest(self, user_id: int, held_ms: int) -> bool:
        done = self.conn.execute(
            update(User)
            .where(User.id == user_id, User.guest.is_(True), User.guest_lease_ms == held_ms)
            .values(guest_lease_ms=None, changed_at=self.stamp)
        )
        return done.rowcount == 1

    def rename_guest(self, user_id: int, new_name: str) -> None:
        self.conn.execute(
            update(User)
            .where(User.id == user_id, User.guest.is_(True))
            .values(name=new_name, name_key=new_name.lower(), changed_at=self.stamp)
        )

    def guest_ids(self, user_ids: list[int]) -> set[int]:
        """Which of ``user_ids`` are guests."""
        return set(
            self.conn.scalars(select(User.id).where(User.id.in_(user_ids), User.guest.is_(True)))
        )

    def observed_games(self, user_id: int) -> list[int]:
        """The active games ``user_id`` observes."""
        return list(
            self.conn.scalars(
                select(Observer.game_id)
                .join(Game, and_(Game.id == Observer.game_id, Game.status == STATUS_ACTIVE))
                .where(Observer.user_id == user_id)
                .order_by(Observer.game_id)
            )
        )
