"""The SQL of accounts and subscription requests: what the domain's ``Accounts`` reads
and writes, one method each, within a transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, func, insert, or_, select, update

from ajedrez.store.models import Subscription, Token, User


class AccountQueries:
    conn: Connection
    stamp: int

    def login_row(self, name: str) -> Any:
        """(id, password_hash) of the active account ``name``, or None (a guest has none)."""
        return self.conn.execute(
            select(User.id, User.password_hash).where(
                User.name == name, User.active.is_(True), User.guest.is_(False)
            )
        ).first()

    def replace_hash(self, user_id: int, old_hash: str, new_hash: str) -> None:
        """A stronger hash of the same password, unless the password changed meanwhile."""
        self.conn.execute(
            update(User)
            .where(User.id == user_id, User.password_hash == old_hash)
            .values(password_hash=new_hash)
        )

    def account_spelled(self, name: str) -> str | None:
        """The name of the account (active or closed) whose name is ``name`` in any case.
        A guest's name is no account's: an account may take it (``retire_guest``)."""
        return self.conn.scalar(
            select(User.name)
            .where(or_(User.name_key == name.lower(), User.name == name), User.guest.is_(False))
            .limit(1)
        )

    def request_spelled(self, name: str) -> str | None:
        """The name of a pending subscription request for ``name`` in any case."""
        return self.conn.scalar(
            select(Subscription.name)
            .where(or_(Subscription.name_key == name.lower(), Subscription.name == name))
            .limit(1)
        )

    def pending_requests(self, address: str | None = None) -> int:
        """Subscription requests waiting for the administrator (from ``address``)."""
        query = select(func.count()).select_from(Subscription)
        if address is not None:
            query = query.where(Subscription.requested_from == address[:64])
        return self.conn.scalar(query) or 0

    def add_request(self, name: str, password_hash: str, comment: str, address: str) -> None:
        self.conn.execute(
            insert(Subscription).values(
                name=name,
                name_key=name.lower(),
                password_hash=password_hash,
                comment=comment,
                requested_at=self.stamp,
                requested_from=address[:64],
            )
        )

    def take_request(self, name: str) -> Any:
        """Remove the request for ``name``; its (password_hash, comment), or None."""
        return self.conn.execute(
            delete(Subscription)
            .where(Subscription.name == name)
            .returning(Subscription.password_hash, Subscription.comment)
        ).first()

    def drop_request(self, name: str) -> bool:
        return bool(
            self.conn.execute(delete(Subscription).where(Subscription.name == name)).rowcount
        )

    def requests(self) -> list[Any]:
        """(name, comment, requested_at) of every pending request, oldest first."""
        return list(
            self.conn.execute(
                select(Subscription.name, Subscription.comment, Subscription.requested_at).order_by(
                    Subscription.requested_at, Subscription.name
                )
            ).all()
        )

    def add_account(self, name: str, password_hash: str, comment: str) -> None:
        self.conn.execute(
            insert(User).values(
                name=name,
                name_key=name.lower(),
                password_hash=password_hash,
                comment=comment,
                active=True,
                admitted_at=self.stamp,
                changed_at=self.stamp,
                wins=0,
            )
        )

    def set_hash(self, name: str, password_hash: str) -> bool:
        done = self.conn.execute(
            update(User).where(User.name == name).values(password_hash=password_hash)
        )
        return bool(done.rowcount)

    def close_account(self, user_id: int) -> None:
        """The account is closed; its tokens (logins that last) go with it."""
        self.conn.execute(
            update(User).where(User.id == user_id).values(active=False, changed_at=self.stamp)
        )
        self.conn.execute(delete(Token).where(Token.user_id == user_id))

    def active_users_since(self, since: int) -> list[str]:
        names = self.conn.scalars(
            select(User.name)
            .where(User.active.is_(True), User.guest.is_(False), User.changed_at >= since)
            .order_by(User.name)
        ).all()
        return list(names)

    def players_since(self, since: int, now_ms: int) -> list[tuple[str, bool]]:
        """(name, guest) of the active accounts and of the guests held at ``now_ms``,
        admitted or changed since ``since``, by name."""
        rows = self.conn.execute(
            select(User.name, User.guest)
            .where(
                User.active.is_(True),
                User.changed_at >= since,
                or_(User.guest.is_(False), User.guest_lease_ms > now_ms),
            )
            .order_by(User.name)
        ).all()
        return [(r.name, bool(r.guest)) for r in rows]

    def accounts(self) -> list[Any]:
        """(name, active, comment, admitted_at, changed_at, wins, guest) of every account."""
        return list(
            self.conn.execute(
                select(
                    User.name,
                    User.active,
                    User.comment,
                    User.admitted_at,
                    User.changed_at,
                    User.wins,
                    User.guest,
                ).order_by(User.name)
            ).all()
        )

    def clashing_names(self) -> list[str]:
        """Names shared by several accounts but for case, grouped together, the holder
        of each (``name_key``) first."""
        lowered = func.lower(User.name)
        shared = select(lowered).group_by(lowered).having(func.count() > 1)
        return list(
            self.conn.scalars(
                select(User.name)
                .where(lowered.in_(shared))
                .order_by(lowered, User.name_key.is_(None), User.id)
            ).all()
        )
