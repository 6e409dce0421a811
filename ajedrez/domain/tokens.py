"""Logins that last (docs/protocol.md, "Tokens"): FICN makes a token, FICH logs in with
one instead of USER and PASS, FICL lists them, FICR revokes them; written against the
store's protocol (``ports.py``).

A token's secret is 32 random bytes, shown once (base64url, 43 characters) to the
client that made it; the database keeps only its SHA-256, so a copy of the database logs
no one in. A token lapses ``lifetime`` seconds after it was last used (sliding), when its
account is closed or deactivated, when the administrator sets the account's password, or
when it is revoked. The database is the truth: a revocation holds at once on every
process and server sharing it.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from ajedrez.domain.accounts import Caller
from ajedrez.domain.clocks import Clock, SystemClock
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.ports import Store

DAY_S = 86_400
DEFAULT_LIFETIME_S = 90 * DAY_S  # unused this long, a token lapses
# Far beyond the machines a person logs in from; a bound on the rows one account makes.
MAX_TOKENS = 100
SECRET_BYTES = 32
LABEL_MAX = 64  # the column's width


@dataclass(frozen=True)
class TokenInfo:
    """A token as FICL lists it: never its secret."""

    id: int
    label: str
    created_at: int
    last_used_at: int
    expires_at: int


def secret_hash(secret: str) -> str:
    """What the database keeps of a secret: its SHA-256, hex. A fast hash is enough:
    the secret is 256 random bits, not a password a person chose."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class Tokens:
    def __init__(
        self, store: Store, clock: Clock | None = None, lifetime: int = DEFAULT_LIFETIME_S
    ) -> None:
        """``lifetime``: seconds a token stays good after its last use."""
        self.store = store
        self.clock = clock or SystemClock()
        self.lifetime = lifetime

    def _now(self) -> int:
        return self.clock.now_ms() // 1000

    def create(self, caller_id: int, label: str) -> tuple[int, str]:
        """FICN: a new token of the caller's, labelled ``label``: (its id, its secret).
        The secret is returned here once and never again."""
        secret = secrets.token_urlsafe(SECRET_BYTES)
        now = self._now()
        with self.store.writing() as tx:
            tx.drop_expired_tokens(caller_id, now)
            # Counted under the caller's row lock: tokens made at once from several
            # sessions are counted one after the other.
            tx.lock_user(caller_id)
            if tx.token_count(caller_id) >= MAX_TOKENS:
                raise Failure(
                    Refusal.TOKENS_FULL,
                    f"you have {MAX_TOKENS} tokens already; revoke one (FICR) first",
                )
            token_id = tx.add_token(
                caller_id, secret_hash(secret), label[:LABEL_MAX], now, now + self.lifetime
            )
        return token_id, secret

    def log_in(self, name: str, secret: str) -> Caller:
        """FICH: the account ``name`` if ``secret`` is one of its live tokens; the token's
        lifetime starts again. Wrong, revoked, expired and another user's tokens are
        refused alike (``WRONG_TOKEN``), and the front end counts that as a failed
        login."""
        now = self._now()
        with self.store.writing() as tx:
            row = tx.token_login_row(secret_hash(secret))
            if row is None or row.name != name:
                raise Failure(Refusal.WRONG_TOKEN, "wrong, revoked or expired token")
            if row.expires_at <= now:
                tx.drop_token(row.user_id, row.id)
                expired = True
            else:
                tx.touch_token(row.id, now, now + self.lifetime)
                expired = False
        if expired:  # the deletion above is committed: the refusal is raised after it
            raise Failure(Refusal.WRONG_TOKEN, "wrong, revoked or expired token")
        return Caller(row.user_id, row.name)

    def listed(self, caller_id: int) -> list[TokenInfo]:
        """FICL: the caller's tokens, oldest first."""
        with self.store.reading() as tx:
            return [TokenInfo(*row) for row in tx.tokens_of(caller_id)]

    def revoke(self, caller_id: int, token_id: int) -> None:
        """FICR:<id>: that token of the caller's logs no one in any more."""
        with self.store.writing() as tx:
            if not tx.drop_token(caller_id, token_id):
                raise Failure(Refusal.NO_SUCH_TOKEN, f"you have no token {token_id}")

    def revoke_all(self, caller_id: int) -> int:
        """FICR:*: every token of the caller's; how many there were."""
        with self.store.writing() as tx:
            return tx.drop_tokens(caller_id)

    # -- administrator side ------------------------------------------------------------
    # ``by``: the operating-system user running ajedrez-admin, for the audit trail.

    def listed_for(self, name: str) -> list[TokenInfo]:
        """``users tokens``: the tokens of the account ``name`` (active or closed)."""
        with self.store.reading() as tx:
            user_id = tx.user_id(name)
            if user_id is None:
                raise Failure(Refusal.NO_SUCH_USER, f"no user '{name}'")
            return [TokenInfo(*row) for row in tx.tokens_of(user_id)]

    def revoke_for(self, name: str, token_id: int | None, *, by: str | None = None) -> int:
        """``users revoke-tokens``: the account's token ``token_id``, or all of them
        (None); how many were revoked."""
        with self.store.writing() as tx:
            user_id = tx.user_id(name)
            if user_id is None:
                raise Failure(Refusal.NO_SUCH_USER, f"no user '{name}'")
            if token_id is None:
                revoked = tx.drop_tokens(user_id)
                tx.audit(by, "users revoke-tokens", name, f"all: {revoked}")
                return revoked
            if not tx.drop_token(user_id, token_id):
                raise Failure(Refusal.NO_SUCH_TOKEN, f"{name} has no token {token_id}")
            tx.audit(by, "users revoke-tokens", name, f"token {token_id}")
            return 1
