"""The SQL of tokens (FICN, FICH, FICL, FICR; ``domain/tokens.py`` asks them), one
method each, within a transaction. Secrets never reach this module: only their hashes."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from ajedrez.store.models import Token, User


class TokenQueries:
    conn: Connection
    stamp: int

    def add_token(
        self, user_id: int, secret_hash: str, label: str, now: int, expires_at: int
    ) -> int:
        return int(
            self.conn.execute(
                insert(Token)
                .values(
                    user_id=user_id,
                    secret_hash=secret_hash,
                    label=label,
                    created_at=now,
                    last_used_at=now,
                    expires_at=expires_at,
                )
                .returning(Token.id)
            ).scalar_one()
        )

    def token_login_row(self, secret_hash: str) -> Any:
        """(id, user_id, name, expires_at) of the token with that hash whose account is
        active and no guest, or None: a closed account's tokens log no one in."""
        return self.conn.execute(
            select(Token.id, Token.user_id, User.name, Token.expires_at)
            .join(User, User.id == Token.user_id)
            .where(
                Token.secret_hash == secret_hash,
                User.active.is_(True),
                User.guest.is_(False),
            )
        ).first()

    def touch_token(self, token_id: int, now: int, expires_at: int) -> None:
        self.conn.execute(
            update(Token)
            .where(Token.id == token_id)
            .values(last_used_at=now, expires_at=expires_at)
        )

    def token_count(self, user_id: int) -> int:
        counted = select(func.count()).select_from(Token).where(Token.user_id == user_id)
        return int(self.conn.scalar(counted) or 0)

    def tokens_of(self, user_id: int) -> list[Any]:
        """(id, label, created_at, last_used_at, expires_at) of the user's tokens, by id."""
        return list(
            self.conn.execute(
                select(
                    Token.id, Token.label, Token.created_at, Token.last_used_at, Token.expires_at
                )
                .where(Token.user_id == user_id)
                .order_by(Token.id)
            ).all()
        )

    def drop_token(self, user_id: int, token_id: int) -> bool:
        deleted = self.conn.execute(
            delete(Token).where(Token.user_id == user_id, Token.id == token_id)
        )
        return deleted.rowcount > 0

    def drop_tokens(self, user_id: int) -> int:
        """Every token of the user; how many there were."""
        return int(self.conn.execute(delete(Token).where(Token.user_id == user_id)).rowcount)

    def drop_tokens_named(self, name: str) -> int:
        """Every token of the account ``name`` (a password set by the administrator)."""
        owner = select(User.id).where(User.name == name).scalar_subquery()
        return int(self.conn.execute(delete(Token).where(Token.user_id == owner)).rowcount)

    def drop_expired_tokens(self, user_id: int, now: int) -> None:
        self.conn.execute(delete(Token).where(Token.user_id == user_id, Token.expires_at <= now))
