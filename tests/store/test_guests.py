"""Guests on the store under test (SQLite, or PostgreSQL with
``AJEDREZ_TEST_DATABASE_URL``): a name held by one connection at a time through its
lease, never an account's or a pending request's, free again once released or lapsed;
released, a guest loses its games, seeks and observing; an account made later takes a
guest's name; a guest never logs in, is never challenged, listed or ranked as an account,
and is marked where it is shown (docs/dialects.md, "Guests")."""

from __future__ import annotations

import asyncio
import io

import chess.pgn
import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.games import Games
from ajedrez.domain.guests import LEASE_MS, Guests, retired_name
from ajedrez.domain.presence import Presence
from ajedrez.domain.values import STATUS_FINISHED, WINNER_WHITE
from ajedrez.service.guests import GuestBook
from ajedrez.store.db import Database
from tests.support.clock import FakeClock
from tests.support.common import PASSWORD, unique_name


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def guests(db: Database, clock: FakeClock) -> Guests:
    return Guests(db, clock)


def refused(kind: Refusal, call, *args):  # type: ignore[no-untyped-def]
    with pytest.raises(Failure) as e:
        call(*args)
    assert e.value.kind is kind, e.value.reason
    return e.value


def test_a_name_is_one_connection_s_until_released(guests: Guests) -> None:
    name = unique_name("g")
    guest_id, lease = guests.claim(name)
    refused(Refusal.NAME_TAKEN, guests.claim, name)
    refused(Refusal.NAME_TAKEN, guests.claim, name.upper())  # in any case
    assert guests.release(guest_id, lease) == []
    again, lease = guests.claim(name.upper())  # the same row, spelled as given now
    assert again == guest_id
    with guests.store.reading() as tx:
        assert tx.user_name(guest_id) == name.upper()
    guests.release(again, lease)


def test_an_account_s_or_a_request_s_name_is_never_a_guest_s(
    guests: Guests, accounts: Accounts
) -> None:
    registered, requested = unique_name("r"), unique_name("q")
    accounts.add_user(registered, PASSWORD)
    accounts.subscribe(requested, PASSWORD, "")
    for name in (registered, registered.upper(), requested, requested.upper()):
        refused(Refusal.NAME_TAKEN, guests.claim, name)
    for bad in ("", "-x", ".x", "a b", "a#b", "x" * 33, "ñandú"):
        refused(Refusal.INVALID, guests.claim, bad)


def test_a_lease_that_lapses_frees_the_name(guests: Guests, clock: FakeClock) -> None:
    name = unique_name("g")
    guest_id, first = guests.claim(name)
    assert guests.renew({guest_id: first}) == {guest_id: clock.now + LEASE_MS}
    renewed = clock.now + LEASE_MS
    clock.advance(LEASE_MS)  # not renewed since: the holder's process is gone
    taken, second = guests.claim(name)
    assert taken == guest_id
    # The old holder's renewal and release find it another connection's: no change.
    assert guests.renew({guest_id: renewed}) == {}
    assert guests.release(guest_id, renewed) == []
    refused(Refusal.NAME_TAKEN, guests.claim, name)
    guests.release(guest_id, second)


def test_released_a_guest_loses_its_games_and_seeks(guests: Guests, games: Games) -> None:
    white_name, black_name = unique_name("w"), unique_name("b")
    white, white_lease = guests.claim(white_name)
    black, black_lease = guests.claim(black_name)
    assert games.live.seek(white, "10m", False) is None
    game_id = games.live.seek(black, "10m", False)
    assert game_id is not None
    assert games.live.seek(white, "1d", False) is None  # a second seek, still waiting

    lost = guests.release(black, black_lease)
    assert lost == [game_id]
    with games.store.reading() as tx:
        row = tx.game(game_id)
        assert (row.status, row.winner, row.end_reason) == (
            STATUS_FINISHED,
            WINNER_WHITE,
            "left the service",
        )
    # White's seeks are its own: black's release left them.
    assert (white_name, "1d") in games.live.seeks()
    guests.release(white, white_lease)
    assert not [s for s in games.live.seeks() if s[0] in (white_name, black_name)]


def test_released_a_guest_stops_observing(guests: Guests, games: Games, new_user) -> None:
    a, b = new_user("a"), new_user("b")
    with games.store.reading() as tx:
        a_id, b_id = tx.active_user_id(a), tx.active_user_id(b)
    games.challenge(a_id, b, "10m")
    game_id = games.accept(b_id, "N", a)
    name = unique_name("g")
    guest, lease = guests.claim(name)
    games.live.observe(guest, game_id)
    assert games.live.observers(a_id, game_id) == [name]
    guests.release(guest, lease)
    assert games.live.observers(a_id, game_id) == []
    games.resign(a_id, game_id, b)


def test_a_guest_never_logs_in_is_never_challenged_listed_or_ranked(
    guests: Guests, accounts: Accounts, games: Games, new_user
) -> None:
    name = unique_name("g")
    guest, lease = guests.claim(name)
    refused(Refusal.NO_SUCH_USER, accounts.check_active, name)
    refused(Refusal.NO_SUCH_USER, accounts.login, name, "")
    someone = new_user("s")
    with games.store.reading() as tx:
        someone_id = tx.active_user_id(someone)
    refused(Refusal.NO_SUCH_USER, games.challenge, someone_id, name)
    assert name not in accounts.active_users_since(0)[1]
    assert name not in [n for n, _wins in games.ranking(100_000)]
    listing = Accounts(accounts.store, clock=guests.clock)  # the guests' time
    players = dict(listing.players_since(0)[1])
    assert players[name] is True and players[someone] is False
    assert [u.guest for u in accounts.list_users() if u.name == name] == [True]
    guests.release(guest, lease)
    assert name not in dict(listing.players_since(0)[1])  # not connected: not listed


def test_an_account_made_later_takes_a_guest_s_name(
    guests: Guests, accounts: Accounts, games: Games, new_user
) -> None:
    name = unique_name("g")
    guest, lease = guests.claim(name)
    opponent = new_user("o")
    with games.store.reading() as tx:
        opponent_id = tx.active_user_id(opponent)
    assert opponent_id is not None
    # An account's live seek pairs while the account is connected (domain/presence.py).
    connected = Presence(games.store, games.clock)
    connected.arrive(opponent_id)
    assert games.live.seek(opponent_id, "10m", False) is None
    game_id = games.live.seek(guest, "10m", False)
    assert game_id is not None
    connected.depart(opponent_id)
    guests.release(guest, lease)  # the game is lost: black left
    accounts.add_user(name.upper(), PASSWORD)  # in any case
    assert accounts.login(name.upper(), PASSWORD).name == name.upper()
    retired = retired_name(guest, name)
    pgn = chess.pgn.read_game(io.StringIO(games.pgn(game_id)))
    assert pgn is not None
    assert (pgn.headers["White"], pgn.headers["Black"]) == (opponent, retired)
    assert pgn.headers.get("BlackGuest") == "yes" and "WhiteGuest" not in pgn.headers
    assert pgn.headers["Result"] == "1-0"
    refused(Refusal.NAME_TAKEN, guests.claim, name)
    assert retired.startswith("-") and len(retired) <= 32


def test_released_as_the_server_stops_a_guest_s_game_ends_without_a_result(
    guests: Guests, games: Games
) -> None:
    white, white_lease = guests.claim(unique_name("w"))
    black, black_lease = guests.claim(unique_name("b"))
    assert games.live.seek(white, "10m", False) is None
    game_id = games.live.seek(black, "10m", False)
    assert game_id is not None
    assert guests.release(white, white_lease, stopping=True) == [game_id]
    with games.store.reading() as tx:
        row = tx.game(game_id)
        assert (row.status, row.winner, row.end_reason) == (STATUS_FINISHED, 0, "server stopped")
    assert guests.release(black, black_lease, stopping=True) == []
    pgn = chess.pgn.read_game(io.StringIO(games.pgn(game_id)))
    assert pgn is not None
    assert (pgn.headers["Result"], pgn.headers["Termination"]) == ("*", "unterminated")


def test_the_book_renews_its_guests_and_ends_one_whose_name_went_elsewhere(
    guests: Guests, clock: FakeClock
) -> None:
    """A connection whose guest's lease lapsed unrenewed (its process stalled) and whose
    name another connection took is told so, and its release changes nothing."""

    async def run(what: str, work):  # type: ignore[no-untyped-def]
        return work()

    async def scenario() -> tuple[int, int, bool, list[int]]:
        book = GuestBook(guests, run, max_per_address=2)
        book.renew_every = 0.01
        kept = await book.claim(unique_name("k"), "192.0.2.1", "-")
        name = unique_name("g")
        lost = await book.claim(name, "192.0.2.1", "-")
        told: list[str] = []
        lost.on_lost = lambda: told.append("lost")
        with pytest.raises(Failure) as capped:  # two from one address at most
            await book.claim(unique_name("x"), "192.0.2.1", "-")
        assert capped.value.kind is Refusal.SIGNUP_RATE
        first = kept.lease_ms
        await asyncio.sleep(0.05)  # renewed at least once
        renewed = kept.lease_ms
        clock.advance(LEASE_MS)
        taken, taken_lease = guests.claim(name)  # another process takes the name
        await asyncio.sleep(0.05)
        released = await book.release(lost)
        await book.release(kept)
        await book.stop()
        guests.release(taken, taken_lease)
        return first, renewed, told == ["lost"] and lost.lost, released

    first, renewed, told, released = asyncio.run(scenario())
    assert renewed >= first and told and released == []
