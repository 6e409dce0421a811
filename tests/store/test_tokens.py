"""Tokens on the store under test (SQLite, or PostgreSQL with
``AJEDREZ_TEST_DATABASE_URL``), written from docs/protocol.md, "Tokens" and
docs/security.md: only the SHA-256 of a secret is stored; a token logs in its own user
only, until it is revoked, lapses unused, or its account is closed or its password set;
a revocation through one ``Database`` holds at once through another (another server
process)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import text

from ajedrez.domain import tokens as tokens_module
from ajedrez.domain.accounts import Accounts, Caller
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.tokens import DAY_S, Tokens, secret_hash
from ajedrez.store.db import Database
from tests.support.clock import FakeClock


def refused(kind: Refusal, call, *args):  # type: ignore[no-untyped-def]
    with pytest.raises(Failure) as e:
        call(*args)
    assert e.value.kind is kind, e.value.reason
    return e.value


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def tokens(db: Database, clock: FakeClock) -> Tokens:
    return Tokens(db, clock, lifetime=30 * DAY_S)


@pytest.fixture
def other_process(database_url: str) -> Iterator[Database]:
    """The same database as another server process sees it: its own engine and pool."""
    database = Database(database_url)
    yield database
    database.dispose()


@pytest.fixture
def account(db: Database, new_user: Callable[..., str]) -> Callable[[str], Caller]:
    def make(prefix: str) -> Caller:
        name = new_user(prefix)
        with db.reading() as tx:
            found = tx.active_user_id(name)
        assert found is not None
        return Caller(found, name)

    return make


def test_only_the_hash_of_the_secret_is_stored(db: Database, tokens: Tokens, account) -> None:  # type: ignore[no-untyped-def]
    me = account("t")
    token_id, secret = tokens.create(me.id, "laptop")
    assert len(secret) == 43  # 32 random bytes, base64url
    with db.engine.connect() as conn:
        rows = conn.execute(text("SELECT * FROM tokens WHERE user_id = :u"), {"u": me.id}).all()
    assert len(rows) == 1
    stored = " ".join(str(v) for v in rows[0])
    assert secret not in stored
    assert secret_hash(secret) in stored
    assert tokens.log_in(me.name, secret) == me
    [info] = tokens.listed(me.id)
    assert (info.id, info.label) == (token_id, "laptop")


def test_a_token_logs_in_its_own_user_only(tokens: Tokens, account) -> None:  # type: ignore[no-untyped-def]
    me, other = account("t"), account("o")
    _, secret = tokens.create(me.id, "laptop")
    refused(Refusal.WRONG_TOKEN, tokens.log_in, other.name, secret)
    refused(Refusal.WRONG_TOKEN, tokens.log_in, me.name, secret[:-1] + "x")
    assert tokens.log_in(me.name, secret) == me


def test_the_lifetime_slides_with_each_use(tokens: Tokens, clock: FakeClock, account) -> None:  # type: ignore[no-untyped-def]
    me = account("t")
    _, secret = tokens.create(me.id, "laptop")
    for _ in range(3):  # used every 20 days: good for 60 days, past the 30-day lifetime
        clock.advance(20 * DAY_S * 1000)
        assert tokens.log_in(me.name, secret) == me
    [info] = tokens.listed(me.id)
    assert info.last_used_at == clock.now // 1000
    assert info.expires_at == info.last_used_at + 30 * DAY_S
    clock.advance(30 * DAY_S * 1000)  # unused for the whole lifetime: lapsed, and gone
    refused(Refusal.WRONG_TOKEN, tokens.log_in, me.name, secret)
    assert tokens.listed(me.id) == []


def test_revoke_one_and_all_across_processes(
    tokens: Tokens, other_process: Database, clock: FakeClock, account
) -> None:  # type: ignore[no-untyped-def]
    me, other = account("t"), account("o")
    elsewhere = Tokens(other_process, clock)
    first, secret1 = tokens.create(me.id, "laptop")
    _, secret2 = tokens.create(me.id, "desk")
    _, secret3 = tokens.create(me.id, "phone")
    assert elsewhere.log_in(me.name, secret1) == me
    refused(Refusal.NO_SUCH_TOKEN, tokens.revoke, other.id, first)  # not theirs
    tokens.revoke(me.id, first)
    refused(Refusal.WRONG_TOKEN, elsewhere.log_in, me.name, secret1)
    refused(Refusal.NO_SUCH_TOKEN, tokens.revoke, me.id, first)
    assert [t.label for t in elsewhere.listed(me.id)] == ["desk", "phone"]
    assert elsewhere.revoke_all(me.id) == 2
    refused(Refusal.WRONG_TOKEN, tokens.log_in, me.name, secret2)
    refused(Refusal.WRONG_TOKEN, tokens.log_in, me.name, secret3)


def test_closing_the_account_or_setting_its_password_ends_its_tokens(
    db: Database, tokens: Tokens, accounts: Accounts, account
) -> None:  # type: ignore[no-untyped-def]
    me = account("t")
    _, secret = tokens.create(me.id, "laptop")
    accounts.set_password(me.name, "a new password")
    refused(Refusal.WRONG_TOKEN, tokens.log_in, me.name, secret)
    _, secret = tokens.create(me.id, "laptop")
    accounts.remove_user(me.name)
    refused(Refusal.WRONG_TOKEN, tokens.log_in, me.name, secret)
    with db.engine.connect() as conn:
        left = conn.scalar(text("SELECT count(*) FROM tokens WHERE user_id = :u"), {"u": me.id})
    assert left == 0


def test_a_deactivated_account_logs_in_with_no_token(db: Database, tokens: Tokens, account) -> None:  # type: ignore[no-untyped-def]
    """Even a token row left behind (by a tool that only marks the account inactive)."""
    me = account("t")
    _, secret = tokens.create(me.id, "laptop")
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE users SET active = false WHERE id = :u"), {"u": me.id})
    refused(Refusal.WRONG_TOKEN, tokens.log_in, me.name, secret)


def test_tokens_per_account_are_bounded(
    tokens: Tokens, account, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(tokens_module, "MAX_TOKENS", 2)
    me = account("t")
    tokens.create(me.id, "a")
    token_id, _ = tokens.create(me.id, "b")
    refused(Refusal.TOKENS_FULL, tokens.create, me.id, "c")
    tokens.revoke(me.id, token_id)
    tokens.create(me.id, "c")
