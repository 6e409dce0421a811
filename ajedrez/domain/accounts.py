"""Accounts: login, subscription requests, leaving, the user list, and the admin's side,
written against the store's protocol (``ports.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from ajedrez.domain import events, games
from ajedrez.domain.clocks import Clock, SystemClock
from ajedrez.domain.errors import Conflict, Failure, Refusal
from ajedrez.domain.guests import make_room
from ajedrez.domain.passwords import hash_password, verify
from ajedrez.domain.ports import Store, StoreTx
from ajedrez.domain.values import REMOVED_CHALLENGE
from ajedrez.domain.values import game_name as format_partida
from ajedrez.domain.values import new_user_name as new_usuario


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
    guest: bool = False


@dataclass(frozen=True)
class SubscriptionInfo:
    name: str
    comment: str
    requested_at: int


class Accounts:
    def __init__(
        self,
        store: Store,
        *,
        max_pending: int | None = None,
        max_pending_per_address: int | None = None,
        open_signup: bool = False,
        clock: Clock | None = None,
    ) -> None:
        """``max_pending``, ``max_pending_per_address``: caps on SUBS requests waiting for
        the administrator, in all and from one client address (None: no cap);
        ``open_signup``: a SUBS makes the account at once instead of a request."""
        self.store = store
        self.clock = clock or SystemClock()
        self.max_pending = max_pending
        self.max_pending_per_address = max_pending_per_address
        self.open_signup = open_signup

    # -- protocol side -----------------------------------------------------------------

    def check_active(self, name: str) -> None:
        """USER: the name must be an active account."""
        with self.store.reading() as tx:
            found = tx.active_user_id(name)
        if found is None:
            raise Failure(Refusal.NO_SUCH_USER, f"no active user '{name}'")

    def login(self, name: str, password: str) -> Caller:
        """PASS: verify outside any transaction (the hash is slow on purpose)."""
        with self.store.reading() as tx:
            row = tx.login_row(name)
        if row is None:
            raise Failure(Refusal.NO_SUCH_USER, f"no active user '{name}'")
        ok, new_hash = verify(password, row.password_hash)
        if not ok:
            raise Failure(Refusal.WRONG_PASSWORD, "wrong password")
        if new_hash is not None:
            with self.store.writing() as tx:
                tx.replace_hash(row.id, row.password_hash, new_hash)
        return Caller(row.id, name)

    def subscribe(self, name: str, password: str, comment: str, address: str = "") -> bool:
        """SUBS from the client at ``address``: a request for the administrator, or with
        open sign-up the active account itself (then True). The name, and the caps on
        requests waiting (which open sign-up leaves none of), are checked before the
        (slow) hash, and again in the transaction that stores it."""
        _check_new_name(name)
        with self.store.reading() as tx:
            _check_name_free(tx, name)
            if not self.open_signup:
                self._check_pending(tx, address)
        password_hash = hash_password(password)
        try:
            with self.store.writing() as tx:
                _check_name_free(tx, name)
                if self.open_signup:
                    tx.add_account(name, password_hash, comment)
                    return True
                self._check_pending(tx, address)
                tx.add_request(name, password_hash, comment, address)
        except Conflict:
            raise self._taken(name) from None
        return False

    def _check_pending(self, tx: StoreTx, address: str) -> None:
        total = self.max_pending
        if total is not None and tx.pending_requests() >= total:
            raise Failure(
                Refusal.SIGNUPS_FULL,
                f"the administrator has {total} subscription requests to answer already; "
                "try again later",
            )
        mine = self.max_pending_per_address
        if mine is None or not address:
            return
        if tx.pending_requests(address) >= mine:
            raise Failure(
                Refusal.SIGNUPS_FULL,
                f"{mine} subscription requests from your address are waiting for the "
                "administrator already",
            )

    def unsubscribe(self, caller: Caller, name: str, password: str) -> None:
        if name != caller.name:
            raise Failure(Refusal.NOT_SELF, f"you are logged in as '{caller.name}', not '{name}'")
        self.login(name, password)
        self._deactivate(name)

    def active_users_since(self, since: int) -> tuple[int, list[str]]:
        """JAUT: (fecha to send back, names of accounts)."""
        with self.store.syncing() as tx:
            return tx.stamp, tx.active_users_since(since)

    def players_since(self, since: int) -> tuple[int, list[tuple[str, bool]]]:
        """JAUT's guests too: (fecha to send back, (name, guest) of the accounts and of
        the guests connected now)."""
        now = self.clock.now_ms()
        with self.store.syncing() as tx:
            return tx.stamp, tx.players_since(since, now)

    # -- administrator side ------------------------------------------------------------

    def check_name_free(self, name: str) -> None:
        """``users add``: may an account be made with this name? (Asked again when it is.)"""
        _check_new_name(name)
        with self.store.reading() as tx:
            _check_name_free(tx, name)

    # ``by``: the operating-system user running ajedrez-admin, recorded in the audit trail
    # in the transaction of the change (``StoreTx.audit``); None records nothing.
    def add_user(
        self, name: str, password: str, comment: str = "", *, by: str | None = None
    ) -> None:
        _check_new_name(name)
        self._create_user(name, hash_password(password), comment, by)

    def list_users(self) -> list[UserInfo]:
        with self.store.reading() as tx:
            rows = tx.accounts()
        return [UserInfo(*row) for row in rows]

    def name_clashes(self) -> list[list[str]]:
        """Accounts whose names differ only in case, which only accounts made before names
        were compared regardless of case can be: one list per name, first the account
        that holds it (``name_key``; new accounts cannot take it), then the others. They
        all keep working: login compares names exactly."""
        with self.store.reading() as tx:
            names = tx.clashing_names()
        groups: dict[str, list[str]] = {}
        for name in names:
            groups.setdefault(name.lower(), []).append(name)
        return list(groups.values())

    def remove_user(self, name: str, *, by: str | None = None) -> list[int]:
        """Returns the ids of the active games the user forfeited."""
        return self._deactivate(name, by)

    def set_password(self, name: str, password: str, *, by: str | None = None) -> None:
        new_hash = hash_password(password)
        with self.store.writing() as tx:
            if not tx.set_hash(name, new_hash):
                raise Failure(Refusal.NO_SUCH_USER, f"no user '{name}'")
            # A password reset is how a lost or stolen device is shut out: the tokens
            # made with the old password go with it.
            tx.drop_tokens_named(name)
            tx.audit(by, "users passwd", name)

    def list_subscriptions(self) -> list[SubscriptionInfo]:
        with self.store.reading() as tx:
            rows = tx.requests()
        return [SubscriptionInfo(*row) for row in rows]

    def approve(self, name: str, *, by: str | None = None) -> None:
        """The account keeps the password hash given with SUBS."""
        try:
            with self.store.writing() as tx:
                row = tx.take_request(name)
                if row is None:
                    raise Failure(Refusal.NO_SUCH_USER, f"no subscription request for '{name}'")
                # A request filed before these rules held may break them: it can only be
                # rejected, and the reason says so.
                try:
                    _check_new_name(name)
                    _check_name_free(tx, name, requests=False)
                except Failure as f:
                    raise Failure(f.kind, f"{f.reason}: reject the request") from None
                make_room(tx, name)
                tx.add_account(name, row.password_hash, row.comment)
                tx.audit(by, "subs approve", name)
        except Conflict:
            raise self._taken(name, requests=False) from None

    def reject(self, name: str, *, by: str | None = None) -> None:
        with self.store.writing() as tx:
            if not tx.drop_request(name):
                raise Failure(Refusal.NO_SUCH_USER, f"no subscription request for '{name}'")
            tx.audit(by, "subs reject", name)

    # -- shared ------------------------------------------------------------------------

    def _create_user(
        self, name: str, password_hash: str, comment: str, by: str | None = None
    ) -> None:
        try:
            with self.store.writing() as tx:
                _check_name_free(tx, name)
                make_room(tx, name)
                tx.add_account(name, password_hash, comment)
                tx.audit(by, "users add", name, comment)
        except Conflict:
            raise self._taken(name) from None

    def _taken(self, name: str, *, requests: bool = True) -> Failure:
        """The failure for a write a unique index refused: another session took the name
        (in any case) between the check and the insert; the reason names its spelling."""
        try:
            with self.store.reading() as tx:
                _check_name_free(tx, name, requests=requests)
        except Failure as f:
            return f
        return Failure(Refusal.NAME_TAKEN, f"the name '{name}' is taken")

    def _deactivate(self, name: str, by: str | None = None) -> list[int]:
        """UNSU and ``users remove``: the account is closed and its active games lost.
        Returns the ids of those games."""
        with self.store.writing() as tx:
            user_id = tx.active_user_id(name)
            if user_id is None:
                raise Failure(Refusal.NO_SUCH_USER, f"no active user '{name}'")
            # Games first: a finishing move locks its game before the winner's user row,
            # so taking the same order here leaves PostgreSQL no lock cycle.
            now = self.clock.now_ms()
            forfeited = games.forfeit_all(tx, user_id, now)
            tx.drop_seeks(user_id)
            closed = tx.drop_challenges_of(user_id)
            others = [b if a == user_id else a for a, b in closed]
            tx.note_removals(REMOVED_CHALLENGE, [(other, name) for other in others])
            names = tx.user_names(others) | {user_id: name}
            for maker, challenged in closed:
                tx.emit(
                    events.challenge_closed(
                        now, (maker, names[maker]), (challenged, names[challenged]), user_id
                    )
                )
            tx.close_account(user_id)
            lost = ", ".join(format_partida(g) for g in forfeited)
            tx.audit(by, "users remove", name, f"active games forfeited: {lost or 'none'}")
            return forfeited


def _check_new_name(name: str) -> None:
    try:
        new_usuario(name)
    except ValueError as e:
        raise Failure(Refusal.INVALID, str(e)) from None


def _check_name_free(tx: StoreTx, name: str, *, requests: bool = True) -> None:
    """A new account or request may not take a name that differs only in case from an
    account's (active or closed: names are never reused) or, with ``requests``, from a
    pending request's. ``name_key`` finds it through its index; the exact name also finds
    an account that clashed before the rule and has no key."""
    spelled = tx.account_spelled(name)
    if spelled is not None:
        raise Failure(Refusal.NAME_TAKEN, f"the name '{name}' is taken{_as(name, spelled)}")
    if not requests:
        return
    spelled = tx.request_spelled(name)
    if spelled is not None:
        raise Failure(
            Refusal.NAME_TAKEN,
            f"an account for '{name}' has been requested already{_as(name, spelled)}, "
            "awaiting the administrator's answer",
        )


def _as(name: str, spelled: str) -> str:
    return "" if spelled == name else f" (as '{spelled}')"
