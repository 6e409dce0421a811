"""Presence and seeks on the store under test (SQLite, or PostgreSQL with
``AJEDREZ_TEST_DATABASE_URL``): every server process counts its sessions of an account
in a leased row of its own, so a live seek goes with its owner's last session in any
process, never pairs once its owner is connected nowhere (a process that died included),
and a correspondence seek stays; a player holds at most a few waiting seeks
(docs/protocol.md, BUSC; docs/security.md, "Streams, chat and seeks")."""

from __future__ import annotations

import itertools
import random

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.errors import Failure, Refusal
from ajedrez.domain.games import Games
from ajedrez.domain.presence import LEASE_MS, Presence
from ajedrez.domain.timecontrol import control_name, parse_control
from ajedrez.store.db import Database
from tests.support.clock import FakeClock
from tests.support.common import PASSWORD, unique_name


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def live_games(db: Database, clock: FakeClock) -> Games:
    return Games(db, clock)


@pytest.fixture
def two_processes(db: Database, clock: FakeClock) -> tuple[Presence, Presence]:
    """The presence of two server processes sharing the database."""
    return Presence(db, clock), Presence(db, clock)


def account(accounts: Accounts) -> tuple[int, str]:
    name = unique_name("p")
    accounts.add_user(name, PASSWORD)
    with accounts.store.reading() as tx:
        user_id = tx.active_user_id(name)
    assert user_id is not None
    return user_id, name


# Controls no other test (nor an earlier run on the same database) seeks: seeks of one
# control pair across tests.
_base = random.randrange(1000, 200_000)
_controls = itertools.count()


def fresh_control(correspondence: bool = False) -> str:
    """A live control (an increment of seconds), or a correspondence one (of a day)."""
    control = f"{_base + next(_controls)}m+{'1d' if correspondence else '7s'}"
    return control_name(parse_control(control))


def seeks_of(games: Games, *names: str) -> list[tuple[str, str]]:
    return [s for s in games.live.seeks() if s[0] in names]


def test_a_live_seek_goes_with_its_owner_s_last_session_in_any_process(
    accounts: Accounts, live_games: Games, two_processes: tuple[Presence, Presence]
) -> None:
    one, two = two_processes
    ana_id, ana = account(accounts)
    control, slow = fresh_control(), fresh_control(correspondence=True)
    one.arrive(ana_id)
    two.arrive(ana_id)
    one.arrive(ana_id)
    assert live_games.live.seek(ana_id, control, False) is None
    assert live_games.live.seek(ana_id, slow, False) is None  # correspondence
    assert one.depart(ana_id) == 0
    assert one.depart(ana_id) == 0  # ana is still connected to the other process
    assert seeks_of(live_games, ana) == [(ana, control), (ana, slow)]
    assert two.depart(ana_id) == 1  # the last session: the live seek goes along
    assert seeks_of(live_games, ana) == [(ana, slow)]  # the correspondence seek stays
    live_games.live.unseek(ana_id, None)


def test_a_seek_whose_owner_is_connected_nowhere_never_pairs(
    accounts: Accounts,
    live_games: Games,
    two_processes: tuple[Presence, Presence],
    clock: FakeClock,
) -> None:
    """The owner's process died: its row lapses, and the seek is dropped instead of
    starting a game whose absent player's clock would run."""
    dead, alive = two_processes
    (ana_id, ana), (bob_id, bob), (cy_id, _cy) = (account(accounts) for _ in range(3))
    control, slow = fresh_control(), fresh_control(correspondence=True)
    dead.arrive(ana_id)
    assert live_games.live.seek(ana_id, control, False) is None
    assert live_games.live.seek(ana_id, slow, False) is None
    clock.advance(LEASE_MS // 2)
    alive.arrive(bob_id)
    alive.arrive(cy_id)
    alive.renew()  # the dead process renews nothing
    clock.advance(LEASE_MS // 2)
    assert live_games.live.seek(bob_id, control, False) is None  # waits: ana is gone
    assert seeks_of(live_games, ana, bob) == [(ana, slow), (bob, control)]
    game_id = live_games.live.seek(cy_id, control, False)  # bob is there: they play
    assert game_id is not None
    assert live_games.live.seek(bob_id, slow, False) is not None  # correspondence pairs
    alive.depart(bob_id)
    alive.depart(cy_id)


def test_renewal_withdraws_the_live_seeks_of_a_process_that_died(
    accounts: Accounts,
    live_games: Games,
    two_processes: tuple[Presence, Presence],
    clock: FakeClock,
) -> None:
    dead, alive = two_processes
    (ana_id, ana), (bob_id, bob) = account(accounts), account(accounts)
    control = fresh_control()
    dead.arrive(ana_id)
    alive.arrive(bob_id)
    assert live_games.live.seek(ana_id, control, False) is None
    assert live_games.live.seek(bob_id, fresh_control(), False) is None
    alive.renew()
    assert len(seeks_of(live_games, ana, bob)) == 2  # both connected
    clock.advance(LEASE_MS)
    assert alive.renew() >= 1  # the dead process's row lapsed: ana's seek goes
    assert [s[0] for s in seeks_of(live_games, ana, bob)] == [bob]
    assert alive.vacate() >= 1  # the other process stops: bob is connected nowhere
    assert seeks_of(live_games, ana, bob) == []


def test_a_player_holds_a_few_waiting_seeks(
    accounts: Accounts, live_games: Games, two_processes: tuple[Presence, Presence]
) -> None:
    here, _other = two_processes
    (ana_id, ana), (bob_id, _bob) = account(accounts), account(accounts)
    here.arrive(ana_id)
    here.arrive(bob_id)
    live_games.live.seeks_per_player = 3
    controls = [fresh_control() for _ in range(4)]
    for control in controls[:3]:
        assert live_games.live.seek(ana_id, control, False) is None
    with pytest.raises(Failure) as capped:
        live_games.live.seek(ana_id, fresh_control(), False)
    assert capped.value.kind is Refusal.SEEK_LIMIT
    assert "3 seeks" in capped.value.reason and "BUSR" in capped.value.reason
    assert len(seeks_of(live_games, ana)) == 3
    # A seek that pairs at once holds nothing: allowed at the cap.
    assert live_games.live.seek(bob_id, controls[3], False) is None
    assert live_games.live.seek(ana_id, controls[3], False) is not None
    live_games.live.unseek(ana_id, controls[0])
    assert live_games.live.seek(ana_id, fresh_control(), False) is None  # room again
    live_games.live.unseek(ana_id, None)
    here.depart(ana_id)
    here.depart(bob_id)


def test_an_account_s_sessions_are_capped_over_every_process(
    db: Database, accounts: Accounts, clock: FakeClock
) -> None:
    """Issue 32: 1,000 sessions of one account filled the server."""
    one, two = Presence(db, clock, max_sessions=3), Presence(db, clock, max_sessions=3)
    (ana_id, ana), (bob_id, _bob) = account(accounts), account(accounts)
    one.arrive(ana_id, ana)
    two.arrive(ana_id, ana)
    one.arrive(ana_id, ana)
    for process in (one, two):
        with pytest.raises(Failure) as capped:
            process.arrive(ana_id, ana)
        assert capped.value.kind is Refusal.SESSION_LIMIT
        assert capped.value.reason == (
            f"too many sessions of the account '{ana}' (limit 3); end one of them first"
        )
    two.arrive(bob_id)  # another account is not held back
    two.depart(ana_id)
    two.arrive(ana_id, ana)  # a place came free
    # A process that dies holds its sessions' places until its lease lapses, no longer.
    clock.advance(LEASE_MS // 2)
    two.renew()
    clock.advance(LEASE_MS // 2)
    two.arrive(ana_id, ana)
    two.arrive(ana_id, ana)
    with pytest.raises(Failure):
        two.arrive(ana_id, ana)
    two.vacate()


def test_the_process_that_takes_a_dead_one_s_place_clears_its_rows(
    db: Database, accounts: Accounts, live_games: Games, clock: FakeClock
) -> None:
    """A server restarted after a crash (the same machine, listeners and slot: the same
    holder) clears what the dead one could not count out, before it serves."""
    (ana_id, ana), (bob_id, _bob) = account(accounts), account(accounts)
    dead = Presence(db, clock, holder="restarted-slot", max_sessions=2)
    dead.arrive(ana_id, ana)
    dead.arrive(ana_id, ana)
    control = fresh_control()
    assert live_games.live.seek(ana_id, control, False) is None
    again = Presence(db, clock, holder="restarted-slot", max_sessions=2)
    assert again.vacate() >= 1  # ana is connected nowhere now: her live seek goes
    assert seeks_of(live_games, ana) == []
    again.arrive(ana_id, ana)  # her places are free at once, not in 2 minutes
    again.arrive(ana_id, ana)
    again.arrive(bob_id)
    again.vacate()


def test_a_process_is_named_by_its_machine_listeners_and_slot() -> None:
    from ajedrez.server.reactor import presence_holder

    opened = [("plain", "127.0.0.1", 1995), ("tls", "127.0.0.1", 1996)]
    name = presence_holder("worker 1", opened)
    assert len(name) == 32
    assert presence_holder("worker 1", list(reversed(opened))) == name
    assert presence_holder("worker 2", opened) != name
    assert presence_holder("worker 1", [("plain", "127.0.0.1", 1997)]) != name
