"""Blocks on the store under test (SQLite, or PostgreSQL with
``AJEDREZ_TEST_DATABASE_URL``), written from docs/protocol.md, "Blocks": a blocked
account cannot challenge, chat to, be paired by a seek with, or observe the games of the
blocker; blocking closes the open challenge between the two and ends the blocked
account's observing of the blocker's games, but no game; a block made through one
``Database`` holds at once through another (another server process)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from ajedrez.domain import blocks as blocks_module
from ajedrez.domain.blocks import Blocks
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.games import Games
from ajedrez.domain.values import WHITE
from ajedrez.store.db import Database
from tests.support.clock import FakeClock

_controls = itertools.count(random.randrange(0, 10_000))


def fresh_control() -> str:
    """A correspondence control no other test seeks (odd minutes are never whole hours):
    its seeks wait whether or not their owners are connected."""
    return f"{1001 + 2 * next(_controls)}m+1d"


def refused(kind: Refusal, call, *args):  # type: ignore[no-untyped-def]
    with pytest.raises(Failure) as e:
        call(*args)
    assert e.value.kind is kind, e.value.reason
    return e.value


@dataclass
class Pair:
    """``a`` blocks, or will block, ``b``: each an (id, name)."""

    a: tuple[int, str]
    b: tuple[int, str]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def games(db: Database, clock: FakeClock) -> Games:
    return Games(db, clock)


@pytest.fixture
def blocks(db: Database, clock: FakeClock) -> Blocks:
    return Blocks(db, clock)


@pytest.fixture
def account(db: Database, new_user: Callable[..., str]) -> Callable[[str], tuple[int, str]]:
    def make(prefix: str) -> tuple[int, str]:
        name = new_user(prefix)
        with db.reading() as tx:
            found = tx.active_user_id(name)
        assert found is not None
        return found, name

    return make


@pytest.fixture
def pair(account) -> Pair:  # type: ignore[no-untyped-def]
    return Pair(account("a"), account("b"))


@pytest.fixture
def other_process(database_url: str) -> Iterator[Database]:
    """The same database as another server process sees it: its own engine and pool."""
    database = Database(database_url)
    yield database
    database.dispose()


def test_block_list_unblock(blocks: Blocks, pair: Pair, account) -> None:  # type: ignore[no-untyped-def]
    (a, _), (_, b_name) = pair.a, pair.b
    _, c_name = account("c")
    assert blocks.blocked(a) == []
    blocks.block(a, c_name)
    blocks.block(a, b_name)
    blocks.block(a, b_name)  # again: no change
    assert blocks.blocked(a) == sorted([b_name, c_name])
    blocks.unblock(a, c_name)
    assert blocks.blocked(a) == [b_name]
    refused(Refusal.NOT_BLOCKED, blocks.unblock, a, c_name)
    refused(Refusal.NOT_BLOCKED, blocks.unblock, a, "nobody-of-that-name")
    refused(Refusal.NO_SUCH_USER, blocks.block, a, "nobody-of-that-name")
    refused(Refusal.INVALID, blocks.block, a, pair.a[1])  # oneself


def test_the_list_is_bounded(blocks: Blocks, pair: Pair, account, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(blocks_module, "MAX_BLOCKS", 2)
    a = pair.a[0]
    blocks.block(a, pair.b[1])
    blocks.block(a, account("c")[1])
    failure = refused(Refusal.BLOCKS_FULL, blocks.block, a, account("d")[1])
    assert "2" in failure.reason
    blocks.block(a, pair.b[1])  # blocked already: still fine


def test_a_blocked_account_cannot_challenge_the_blocker(
    blocks: Blocks, games: Games, pair: Pair
) -> None:
    (a, a_name), (b, b_name) = pair.a, pair.b
    blocks.block(a, b_name)
    failure = refused(Refusal.NOT_ACCEPTED, games.challenge, b, a_name)
    assert "block" not in failure.reason and a_name in failure.reason  # the generic refusal
    failure = refused(Refusal.NOT_ACCEPTED, games.challenge, a, b_name)
    assert "BLOR" in failure.reason  # the blocker is told why
    blocks.unblock(a, b_name)
    games.challenge(b, a_name)  # unblocked: as before
    games.decline(a, b_name)


def test_blocking_closes_the_open_challenge(blocks: Blocks, games: Games, pair: Pair) -> None:
    (a, a_name), (b, b_name) = pair.a, pair.b
    games.challenge(b, a_name)
    assert [name for _made, name, _c in games.open_challenges(a)] == [b_name]
    blocks.block(a, b_name)
    assert games.open_challenges(a) == [] and games.open_challenges(b) == []
    assert ("R", a_name) in games.removals_since(b, 0)[1]  # b's client learns it (BAJA)


def test_observing_and_chat_of_the_blocker_s_games(
    blocks: Blocks, games: Games, pair: Pair, account
) -> None:  # type: ignore[no-untyped-def]
    (a, a_name), (b, b_name) = pair.a, pair.b
    c, c_name = account("c")
    games.challenge(a, c_name)
    game_id = games.accept(c, WHITE, a_name)
    games.live.observe(b, game_id)
    games.live.say(b, game_id, "hola")
    blocks.block(a, b_name)
    assert games.live.observers(a, game_id) == []  # observing ended with the block
    refused(Refusal.NOT_ACCEPTED, games.live.observe, b, game_id)
    blocks.block(c, b_name)  # by either player
    blocks.unblock(a, b_name)
    refused(Refusal.NOT_ACCEPTED, games.live.observe, b, game_id)
    blocks.unblock(c, b_name)
    games.live.observe(b, game_id)
    blocks.block(c, b_name)
    assert games.live.observers(a, game_id) == []
    refused(Refusal.NOT_A_PLAYER, games.live.say, b, game_id, "psst")  # no longer observes
    games.live.say(c, game_id, "the players still talk")
    games.resign(a, game_id, c_name)


def test_existing_games_go_on_without_chat_to_the_blocker(
    blocks: Blocks, games: Games, pair: Pair
) -> None:
    (a, a_name), (b, b_name) = pair.a, pair.b
    games.challenge(b, a_name)
    game_id = games.accept(a, WHITE, b_name)
    blocks.block(a, b_name)
    refused(Refusal.NOT_ACCEPTED, games.live.say, b, game_id, "hola")
    refused(Refusal.NOT_ACCEPTED, games.live.say, a, game_id, "hola")  # the blocker neither
    games.offer_draw(b, game_id, a_name)  # the game itself goes on
    games.answer_draw(a, game_id, True, b_name)
    with games.store.reading() as tx:
        row = tx.game(game_id)
        assert row is not None and row.status != 0


def test_seeks_of_the_two_never_pair(blocks: Blocks, games: Games, pair: Pair, account) -> None:  # type: ignore[no-untyped-def]
    (a, _), (b, b_name) = pair.a, pair.b
    blocks.block(a, b_name)
    control = fresh_control()
    assert games.live.seek(a, control, False) is None
    assert games.live.seek(b, control, False) is None  # both wait: no game between them
    c, _ = account("c")
    game_id = games.live.seek(c, control, False)  # someone else pairs with the first
    assert game_id is not None
    with games.store.reading() as tx:
        row = tx.game(game_id)
        assert row is not None and (row.white_id, row.black_id) == (a, c)
    games.live.unseek(b, control)
    games.resign(a, game_id, row.black)


def test_a_block_holds_at_once_in_another_process(
    blocks: Blocks, other_process: Database, pair: Pair, clock: FakeClock
) -> None:
    (a, a_name), (b, b_name) = pair.a, pair.b
    elsewhere = Games(other_process, clock)
    blocks.block(a, b_name)
    refused(Refusal.NOT_ACCEPTED, elsewhere.challenge, b, a_name)
    assert Blocks(other_process, clock).blocked(a) == [b_name]
    Blocks(other_process, clock).unblock(a, b_name)
    assert blocks.blocked(a) == []
