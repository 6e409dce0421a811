"""Accounts: login, subscription requests, leaving, the user list, and the admin's side."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, delete, func, insert, or_, select, update

from ajedrez.domain import games
from ajedrez.domain.errors import Failure
from ajedrez.domain.passwords import hash_password, verify
from ajedrez.protocol.codes import Reply
from ajedrez.protocol.fields import format_partida, new_usuario
from ajedrez.protocol.records import REMOVED_CHALLENGE
from ajedrez.store import audit
from ajedrez.store.db import Conflict, Database, Tx
from ajedrez.store.models import GameRequest, Subscription, User


@dataclass(frozen=True)
class Caller:
    """The logged-in user a session acts for."""

    id: int
    name: str


@dataclass(frozen=True)
class UserInfo:
    name: str
    active: bool
    comment: str
    admitted_at: int
    changed_at: int
    wins: int


@dataclass(frozen=True)
class SubscriptionInfo:
    name: str
    comment: str
    requested_at: int


class Accounts:
    def __init__(
        self,
        db: Database,
        *,
        max_pending: int | None = None,
        max_pending_per_address: int | None = None,
    ) -> None:
        """``max_pending``, ``max_pending_per_address``: caps on SUBS requests waiting for
        the administrator, in all and from one client address (None: no cap)."""
        self.db = db
        self.max_pending = max_pending
        self.max_pending_per_address = max_pending_per_address

    # -- protocol side -----------------------------------------------------------------

    def check_active(self, name: str) -> None:
        """USER: the name must be an active account."""
        with self.db.read() as conn:
            found = conn.execute(
                select(User.id).where(User.name == name, User.active.is_(True))
            ).first()
        if found is None:
            raise Failure(Reply.F_NOUSER, f"no active user '{name}'")

    def login(self, name: str, password: str) -> Caller:
        """PASS: verify outside any transaction (the hash is slow on purpose)."""
        with self.db.read() as conn:
            row = conn.execute(
                select(User.id, User.password_hash).where(User.name == name, User.active.is_(True))
            ).first()
        if row is None:
            raise Failure(Reply.F_NOUSER, f"no active user '{name}'")
        ok, new_hash = verify(password, row.password_hash)
        if not ok:
            raise Failure(Reply.F_PASINV, "wrong password")
        if new_hash is not None:
            with self.db.write() as tx:
                tx.conn.execute(
                    update(User)
                    .where(User.id == row.id, User.password_hash == row.password_hash)
                    .values(password_hash=new_hash)
                )
        return Caller(row.id, name)

    def subscribe(self, name: str, password: str, comment: str, address: str = "") -> None:
        """SUBS from the client at ``address``. The name and the caps on pending requests
        are checked before the (slow) hash, and again in the transaction that stores it."""
        _check_new_name(name)
        with self.db.read() as conn:
            _check_name_free(conn, name)
            self._check_pending(conn, address)
        password_hash = hash_password(password)
        try:
            with self.db.write() as tx:
                _check_name_free(tx.conn, name)
                self._check_pending(tx.conn, address)
                tx.conn.execute(
                    insert(Subscription).values(
                        name=name,
                        name_key=name.lower(),
                        password_hash=password_hash,
                        comment=comment,
                        requested_at=tx.stamp,
                        requested_from=address[:64],
                    )
                )
        except Conflict:
            raise self._taken(name) from None

    def _check_pending(self, conn: Connection, address: str) -> None:
        pending = select(func.count()).select_from(Subscription)
        total = self.max_pending
        if total is not None and (conn.scalar(pending) or 0) >= total:
            raise Failure(
                Reply.F_SUBSFULL,
                f"the administrator has {total} subscription requests to answer already; "
                "try again later",
            )
        mine = self.max_pending_per_address
        if mine is None or not address:
            return
        if (conn.scalar(pending.where(Subscription.requested_from == address[:64])) or 0) >= mine:
            raise Failure(
                Reply.F_SUBSFULL,
                f"{mine} subscription requests from your address are waiting for the "
                "administrator already",
            )

    def unsubscribe(self, caller: Caller, name: str, password: str) -> None:
        if name != caller.name:
            raise Failure(Reply.F_NOTSELF, f"you are logged in as '{caller.name}', not '{name}'")
        self.login(name, password)
        self._deactivate(name)

    def active_users_since(self, since: int) -> tuple[int, list[str]]:
        """JAUT: (fecha to send back, names)."""
        with self.db.sync_read() as tx:
            names = tx.conn.scalars(
                select(User.name)
                .where(User.active.is_(True), User.changed_at >= since)
                .order_by(User.name)
            ).all()
            return tx.stamp, list(names)

    # -- administrator side ------------------------------------------------------------

    def check_name_free(self, name: str) -> None:
        """``users add``: may an account be made with this name? (Asked again when it is.)"""
        _check_new_name(name)
        with self.db.read() as conn:
            _check_name_free(conn, name)

    # ``by``: the operating-system user running ajedrez-admin, recorded in the audit trail
    # in the transaction of the change (service/audit.py); None records nothing.
    def add_user(
        self, name: str, password: str, comment: str = "", *, by: str | None = None
    ) -> None:
        _check_new_name(name)
        self._create_user(name, hash_password(password), comment, by)

    def list_users(self) -> list[UserInfo]:
        with self.db.read() as conn:
            rows = conn.execute(
                select(
                    User.name,
                    User.active,
                    User.comment,
                    User.admitted_at,
                    User.changed_at,
                    User.wins,
                ).order_by(User.name)
            ).all()
        return [UserInfo(*row) for row in rows]

    def name_clashes(self) -> list[list[str]]:
        """Accounts whose names differ only in case, which only accounts made before names
        were compared regardless of case can be: one list per name, first the account
        that holds it (``name_key``; new accounts cannot take it), then the others. They
        all keep working: login compares names exactly."""
        lowered = func.lower(User.name)
        shared = select(lowered).group_by(lowered).having(func.count() > 1)
        with self.db.read() as conn:
            rows = conn.execute(
                select(User.name)
                .where(lowered.in_(shared))
                .order_by(lowered, User.name_key.is_(None), User.id)
            ).all()
        groups: dict[str, list[str]] = {}
        for (name,) in rows:
            groups.setdefault(name.lower(), []).append(name)
        return list(groups.values())

    def remove_user(self, name: str, *, by: str | None = None) -> list[int]:
        """Returns the ids of the active games the user forfeited."""
        return self._deactivate(name, by)

    def set_password(self, name: str, password: str, *, by: str | None = None) -> None:
        new_hash = hash_password(password)
        with self.db.write() as tx:
            done = tx.conn.execute(
                update(User).where(User.name == name).values(password_hash=new_hash)
            )
            if done.rowcount == 0:
                raise Failure(Reply.F_NOUSER, f"no user '{name}'")
            audit.record(tx, by, "users passwd", name)

    def list_subscriptions(self) -> list[SubscriptionInfo]:
        with self.db.read() as conn:
            rows = conn.execute(
                select(Subscription.name, Subscription.comment, Subscription.requested_at).order_by(
                    Subscription.requested_at, Subscription.name
                )
            ).all()
        return [SubscriptionInfo(*row) for row in rows]

    def approve(self, name: str, *, by: str | None = None) -> None:
        """The account keeps the password hash given with SUBS."""
        try:
            with self.db.write() as tx:
                row = tx.conn.execute(
                    delete(Subscription)
                    .where(Subscription.name == name)
                    .returning(Subscription.password_hash, Subscription.comment)
                ).first()
                if row is None:
                    raise Failure(Reply.F_NOUSER, f"no subscription request for '{name}'")
                # A request filed before these rules held may break them: it can only be
                # rejected, and the reason says so.
                try:
                    _check_new_name(name)
                    _check_name_free(tx.conn, name, requests=False)
                except Failure as f:
                    raise Failure(f.code, f"{f.reason}: reject the request") from None
                self._insert_user(tx, name, row.password_hash, row.comment)
                audit.record(tx, by, "subs approve", name)
        except Conflict:
            raise self._taken(name, requests=False) from None

    def reject(self, name: str, *, by: str | None = None) -> None:
        with self.db.write() as tx:
            done = tx.conn.execute(delete(Subscription).where(Subscription.name == name))
            if done.rowcount == 0:
                raise Failure(Reply.F_NOUSER, f"no subscription request for '{name}'")
            audit.record(tx, by, "subs reject", name)

    # -- shared ------------------------------------------------------------------------

    def _create_user(
        self, name: str, password_hash: str, comment: str, by: str | None = None
    ) -> None:
        try:
            with self.db.write() as tx:
                _check_name_free(tx.conn, name)
                self._insert_user(tx, name, password_hash, comment)
                audit.record(tx, by, "users add", name, comment)
        except Conflict:
            raise self._taken(name) from None

    def _taken(self, name: str, *, requests: bool = True) -> Failure:
        """The failure for a write a unique index refused: another session took the name
        (in any case) between the check and the insert; the reason names its spelling."""
        try:
            with self.db.read() as conn:
                _check_name_free(conn, name, requests=requests)
        except Failure as f:
            return f
        return Failure(Reply.F_NAMETAKEN, f"the name '{name}' is taken")

    @staticmethod
    def _insert_user(tx: Tx, name: str, password_hash: str, comment: str) -> None:
        tx.conn.execute(
            insert(User).values(
                name=name,
                name_key=name.lower(),
                password_hash=password_hash,
                comment=comment,
                active=True,
                admitted_at=tx.stamp,
                changed_at=tx.stamp,
                wins=0,
            )
        )

    def _deactivate(self, name: str, by: str | None = None) -> list[int]:
        """UNSU and ``users remove``: the account is closed and its active games lost.
        Returns the ids of those games."""
        with self.db.write() as tx:
            user_id = tx.conn.scalar(
                select(User.id).where(User.name == name, User.active.is_(True))
            )
            if user_id is None:
                raise Failure(Reply.F_NOUSER, f"no active user '{name}'")
            # Games first: a finishing move locks its game before the winner's user row,
            # so taking the same order here leaves PostgreSQL no lock cycle.
            forfeited = games.forfeit_all(tx, user_id)
            closed = tx.conn.execute(
                delete(GameRequest)
                .where(
                    (GameRequest.challenger_id == user_id) | (GameRequest.challenged_id == user_id)
                )
                .returning(GameRequest.challenger_id, GameRequest.challenged_id)
            ).all()
            others = [a if b == user_id else b for a, b in closed]
            games.note_removals(tx, REMOVED_CHALLENGE, [(other, name) for other in others])
            tx.conn.execute(
                update(User).where(User.id == user_id).values(active=False, changed_at=tx.stamp)
            )
            lost = ", ".join(format_partida(g) for g in forfeited)
            audit.record(tx, by, "users remove", name, f"active games forfeited: {lost or 'none'}")
            return forfeited


def _check_new_name(name: str) -> None:
    try:
        new_usuario(name)
    except ValueError as e:
        raise Failure(Reply.F_PARAM, str(e)) from None


def _check_name_free(conn: Connection, name: str, *, requests: bool = True) -> None:
    """A new account or request may not take a name that differs only in case from an
    account's (active or closed: names are never reused) or, with ``requests``, from a
    pending request's. ``name_key`` finds it through its index; the exact name also finds
    an account that clashed before the rule and has no key."""
    key = name.lower()
    spelled = conn.scalar(
        select(User.name).where(or_(User.name_key == key, User.name == name)).limit(1)
    )
    if spelled is not None:
        raise Failure(Reply.F_NAMETAKEN, f"the name '{name}' is taken{_as(name, spelled)}")
    if not requests:
        return
    spelled = conn.scalar(
        select(Subscription.name)
        .where(or_(Subscription.name_key == key, Subscription.name == name))
        .limit(1)
    )
    if spelled is not None:
        raise Failure(
            Reply.F_NAMETAKEN,
            f"an account for '{name}' has been requested already{_as(name, spelled)}, "
            "awaiting the administrator's answer",
        )


def _as(name: str, spelled: str) -> str:
    return "" if spelled == name else f" (as '{spelled}')"
