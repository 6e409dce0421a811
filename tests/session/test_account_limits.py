"""Limits on what one account or one network may hold, without a socket: the sessions of
one account (``max_sessions_per_account``, counted in the store over every process) and
the IPv6 network block that counts as one client address (``ipv6_block_size``), as the
ESPOL connection and the session apply them (docs/security.md)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from ajedrez.domain.errors import StorageError
from ajedrez.espol.connection import Connection
from ajedrez.server.reactor import Reactor, make_service
from ajedrez.server.settings import Limits
from ajedrez.service.netblocks import client_key
from ajedrez.store.db import Database
from tests.support.clock import FakeClock
from tests.support.common import PASSWORD
from tests.support.session import Client, frame, make_session


@pytest.mark.parametrize(
    ("address", "size", "key"),
    [
        ("2001:db8:1:2:3:4:5:6", 64, "2001:db8:1:2::/64"),
        ("2001:db8:1:2::9", 64, "2001:db8:1:2::/64"),
        ("2001:db8:1:3::9", 64, "2001:db8:1:3::/64"),
        ("2001:db8:1:2::9", 48, "2001:db8:1::/48"),
        ("2001:db8:1:2::9", 128, "2001:db8:1:2::9"),
        ("fe80::1%eth0", 64, "fe80::/64"),
        ("::ffff:192.0.2.7", 64, "192.0.2.7"),  # an IPv4 client of a dual-stack listener
        ("192.0.2.7", 64, "192.0.2.7"),
        ("?", 64, "?"),
    ],
)
def test_the_address_a_limit_counts(address: str, size: int, key: str) -> None:
    assert client_key(address, size) == key


@dataclass
class Transport:
    """What an ESPOL connection asks of its transport, from a given peer address."""

    peer: tuple[str, int]
    written: list[bytes] = field(default_factory=list)
    closed: bool = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.peer if name == "peername" else default

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


def connect_from(peers: list[str], limits: Limits) -> list[Transport]:
    """A connection from each address, in order, on one process: their transports."""

    async def scenario() -> list[Transport]:
        service = make_service(None, None, None, limits)  # type: ignore[arg-type]
        reactor = Reactor(service, "::", [], limits)
        transports = []
        for i, peer in enumerate(peers):
            transport = Transport((peer, 40000 + i))
            Connection(reactor).connection_made(transport)  # type: ignore[arg-type]
            transports.append(transport)
        return transports

    return asyncio.run(scenario())


def refused(t: Transport) -> bool:
    return t.closed and b"".join(t.written).startswith(b"810")


def test_ipv6_addresses_count_by_their_block() -> None:
    """Issue 32: one IPv6 client holds a whole /64, so each of its addresses must not be
    a client of its own for max_connections_per_address."""
    peers = ["2001:db8:1:2::1", "2001:db8:1:2:ffff::2", "2001:db8:1:2:abcd::3", "2001:db8:1:3::1"]
    capped = Limits(max_connections_per_address=2)
    first, second, third, next_block = connect_from(peers, capped)
    assert not first.closed and not second.closed
    assert refused(third)  # the same /64: a third connection from that client
    assert b"too many connections from your address (limit 2)" in third.written[0]
    assert not next_block.closed  # the next /64 is another client
    each_alone = connect_from(peers, Limits(max_connections_per_address=2, ipv6_block_size=128))
    assert not any(t.closed for t in each_alone)


def test_the_sessions_of_one_account_are_capped(session_db: Database, user, loop) -> None:  # type: ignore[no-untyped-def]
    """Issue 32: 1,000 sessions of one account filled the server. Each session here is
    as another process's (a service of its own): the count is the store's."""
    clock = FakeClock()
    ana, bob = user("a"), user("b")

    def log_in(name: str) -> tuple[Client, bytes]:
        c = Client(make_session(session_db, clock=clock, sessions_per_account=2), loop)
        assert c.raw(f"USER:{name}") == frame(101, name)
        return c, c.raw(f"PASS:{PASSWORD}")

    first, _ = log_in(ana)
    _second, _ = log_in(ana)
    third, reply = log_in(ana)
    assert reply == frame(
        810, f"too many sessions of the account '{ana}' (limit 2); end one of them first"
    )
    assert third.closed and not third.session.logged_in
    assert log_in(bob)[1] == frame(102, bob)
    assert first.code("HELP:QUIT") == 110  # the others go on
    caller = first.session.caller
    assert caller is not None
    loop.run_until_complete(first.session.service.log_out(caller))  # its connection ended
    assert log_in(ana)[1] == frame(102, ana)
    assert log_in(ana)[1][:3] == b"810"


class StoreRefusingWrites:
    """A presence whose store refuses writes (docs/security.md, "Integrity and
    durability"): it records what was asked of it."""

    def __init__(self) -> None:
        self.departed: list[int] = []

    def arrive(self, user_id: int, name: str = "") -> None:
        raise StorageError("the database refused the write")

    def depart(self, user_id: int) -> int:
        self.departed.append(user_id)
        return 0


def test_a_login_while_the_store_refuses_writes_gets_in_uncounted(
    session_db: Database, user, loop
) -> None:  # type: ignore[no-untyped-def]
    """Reads go on in a storage outage, so logins do too; such a session counts nothing
    out when it ends, as it counted nothing in."""
    presence = StoreRefusingWrites()
    ana = user("a")
    c = Client(make_session(session_db, presence=presence), loop)
    assert c.raw(f"USER:{ana}") == frame(101, ana)
    assert c.raw(f"PASS:{PASSWORD}") == frame(102, ana)
    assert c.code("HELP:QUIT") == 110
    caller = c.session.caller
    assert caller is not None
    service = c.session.service
    loop.run_until_complete(service.log_out(caller))
    assert presence.departed == []
    loop.run_until_complete(service.log_out(caller))  # a counted session's end: counted out
    assert presence.departed == [caller.id]


class StoreRefusingOneWrite:
    """A presence whose store refuses the first count out, then takes writes again."""

    def __init__(self) -> None:
        self.arrived: list[int] = []
        self.departed: list[int] = []
        self.refusals = 1

    def arrive(self, user_id: int, name: str = "") -> None:
        self.arrived.append(user_id)

    def depart(self, user_id: int) -> int:
        if self.refusals:
            self.refusals -= 1
            raise StorageError("the database refused the write")
        self.departed.append(user_id)
        return 0


def test_a_session_whose_end_the_store_refused_is_counted_out_later(
    session_db: Database, user, loop
) -> None:  # type: ignore[no-untyped-def]
    """Or the account would count one session too many, and look connected, for good."""
    presence = StoreRefusingOneWrite()
    ana = user("a")
    c = Client(make_session(session_db, presence=presence), loop)
    assert c.raw(f"USER:{ana}") == frame(101, ana)
    assert c.raw(f"PASS:{PASSWORD}") == frame(102, ana)
    caller = c.session.caller
    assert caller is not None and presence.arrived == [caller.id]
    service = c.session.service
    loop.run_until_complete(service.log_out(caller))  # refused: owed
    assert presence.departed == []
    loop.run_until_complete(service.count_out_owed())  # what each renewal does first
    assert presence.departed == [caller.id]
    loop.run_until_complete(service.count_out_owed())  # nothing owed any more
    assert presence.departed == [caller.id]
