"""Requests that notify others, and blocks, over TCP on the store under test (SQLite, or
PostgreSQL with ``AJEDREZ_TEST_DATABASE_URL``): the JUEG/DECL flood of issue 32 is held
to the account's burst, and a block made on one server process holds on another sharing
the database (docs/protocol.md, "Requests that notify others" and "Blocks")."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.support.common import PASSWORD
from tests.support.espol import Conn
from tests.support.server import ServerProcess, start_server

BURST = 6
# So slow that no token comes back while a test runs: the counts are exact.
SLOW = ("--events-burst", str(BURST), "--events-per-second", "0.001")


@pytest.fixture(scope="module")
def servers(database_url: str, db) -> Iterator[list[ServerProcess]]:  # type: ignore[no-untyped-def]
    """Two server processes on the test database, each with its own small burst."""
    started: list[ServerProcess] = []
    try:
        for _ in range(2):
            started.append(start_server(database_url, *SLOW))
        yield started
    finally:
        for srv in started:
            srv.stop()


@pytest.fixture
def enter(servers: list[ServerProcess]) -> Iterator[Callable[..., Conn]]:
    """enter(name, server=0): a connection logged in as ``name``."""
    opened: list[Conn] = []

    def do(name: str, server: int = 0) -> Conn:
        c = servers[server].connect()
        opened.append(c)
        assert c.cmd(f"USER:{name}").code == 101
        assert c.cmd(f"PASS:{PASSWORD}").code == 102
        return c

    yield do
    for c in opened:
        c.close()


def test_a_challenge_flood_is_held_to_the_burst(enter, new_user):
    attacker, victim = new_user("x"), new_user("v")
    a, v = enter(attacker), enter(victim)
    codes = [a.cmd(line).code for line in [f"JUEG:{victim}", f"DECL:{victim}"] * BURST]
    assert codes == [200, 213] * (BURST // 2) + [847] * BURST, codes
    r = a.cmd("OBSV:P0000001")
    assert r.code == 847 and "try again in" in r.text, r
    assert a.cmd("SOLI").code == 216  # reads go on
    assert v.cmd(f"JUEG:{attacker}").code == 200  # the victim's budget is its own
    assert v.cmd(f"DECL:{attacker}").code == 213


def test_block_over_tcp_and_across_servers(enter, new_user):
    blocker, blocked = new_user("k"), new_user("d")
    k0, d1 = enter(blocker, 0), enter(blocked, 1)
    assert d1.cmd(f"JUEG:{blocker}").code == 200
    r = k0.cmd(f"BLOQ:{blocked}")
    assert (r.code, r.text) == (232, blocked), r
    assert k0.cmd("SOLI").text == ""  # the open challenge closed with the block
    r = d1.cmd(f"JUEG:{blocker}")  # on the other server
    assert r.code == 851 and blocker in r.text and "block" not in r.text, r
    k1 = enter(blocker, 1)
    assert k1.cmd("BLOL").text == blocked
    assert k1.cmd(f"BLOR:{blocked}").code == 233
    assert k0.cmd("BLOL").text == ""
    assert d1.cmd(f"JUEG:{blocker}").code == 200
    assert k0.cmd(f"DECL:{blocked}").code == 213
