"""What goes away reaches every client through sync by fecha (BAJA), and game ids are
never given twice: purged games, declined and withdrawn challenges, a leaver's challenges.

The purge tests run on a database of their own (``own_db``) on the store under test, with
a server of their own; the challenge tests use the shared server.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.game_admin import GameAdmin
from ajedrez.domain.games import Games
from ajedrez.domain.views import MoveRecord
from ajedrez.store.db import Database
from tests.support.common import PASSWORD, unique_name
from tests.support.espol import Conn
from tests.support.moves import play
from tests.support.server import ServerProcess, start_server


def baja(conn: Conn, since: str = "0") -> tuple[str, list[str]]:
    """(the fecha to send next, the records) of one BAJA."""
    parts = conn.cmd_all(f"BAJA:{since}")
    if parts[0].code == 201:
        return parts[0].text, []
    records: list[str] = []
    fecha = ""
    for part in parts:
        assert part.code == 215, part
        fecha, _, rest = part.text.partition(",")
        records += rest.split(",")
    return fecha, records


def logged_in(server: ServerProcess, name: str) -> Conn:
    conn = server.connect()
    assert conn.cmd(f"USER:{name}").code == 101
    assert conn.cmd(f"PASS:{PASSWORD}").code == 102
    return conn


def finished_game(accounts: Accounts, games: Games, white: str, black: str) -> int:
    w, b = accounts.login(white, PASSWORD), accounts.login(black, PASSWORD)
    games.challenge(b.id, white)
    gid = games.accept(w.id, "B", black)
    play(games, w.id, gid, MoveRecord(1, "e2e4", 0, "1228", 0))
    games.resign(b.id, gid, white)
    return gid


@pytest.fixture
def own(own_db: tuple[str, Database]) -> Iterator[tuple[Accounts, Games, ServerProcess]]:
    url, database = own_db
    accounts, games = Accounts(database), Games(database)
    for name in ("ana", "bob", "carla"):
        accounts.add_user(name, PASSWORD)
    srv = start_server(url)
    yield accounts, games, srv
    srv.stop()


# -- game ids ------------------------------------------------------------------------------


@pytest.fixture
def services(own_db: tuple[str, Database]) -> tuple[Accounts, Games]:
    """The services on a database of the test's own, with players ana and bob."""
    _url, database = own_db
    accounts = Accounts(database)
    for name in ("ana", "bob"):
        accounts.add_user(name, PASSWORD)
    return accounts, Games(database)


def test_a_purged_games_id_is_never_given_again(services):
    accounts, games = services
    first = finished_game(accounts, games, "ana", "bob")
    second = finished_game(accounts, games, "ana", "bob")
    assert GameAdmin(games.store).purge_finished() == [first, second]
    third = finished_game(accounts, games, "ana", "bob")
    assert third > second


def test_purge_filters_and_dry_run(services):
    accounts, games = services
    gid = finished_game(accounts, games, "ana", "bob")
    assert GameAdmin(games.store).purge_finished(finished_before=0) == []  # finished after 1970
    assert GameAdmin(games.store).purge_finished(dry_run=True) == [gid]
    assert GameAdmin(games.store).purge_finished(dry_run=True) == [gid]  # a dry run removes nothing
    assert GameAdmin(games.store).purge_finished(finished_before=2**40) == [gid]
    assert GameAdmin(games.store).purge_finished() == []


# -- purge through BAJA ------------------------------------------------------------------


def test_purge_reaches_both_players_through_baja(own):
    accounts, games, srv = own
    ana = logged_in(srv, "ana")
    bob = logged_in(srv, "bob")
    carla = logged_in(srv, "carla")
    fecha_ana, before = baja(ana)
    assert before == []
    gid = finished_game(accounts, games, "ana", "bob")
    pid = f"P{gid:07d}"
    assert ana.cmd(f"STAT:{pid}").code == 206

    assert GameAdmin(games.store).purge_finished() == [gid]
    assert baja(ana, fecha_ana)[1] == [f"P:{pid}"]
    fecha_bob, seen = baja(bob)
    assert seen == [f"P:{pid}"]
    assert baja(carla)[1] == []  # not her game
    # The game is gone for every other command.
    assert ana.cmd(f"STAT:{pid}").code == 830
    assert ana.cmd(f"SPAR:{pid}:0").code == 830
    ppen = ana.cmd("PPEN:0")
    assert pid not in ppen.text
    # A fecha after the purge's second shows it no more (within it, it may come twice).
    later = bob.cmd(f"BAJA:{int(fecha_bob) + 1}")
    assert later.code == 201, later
    for conn in (ana, bob, carla):
        conn.close()


# -- challenges through BAJA ---------------------------------------------------------


def test_declined_and_withdrawn_challenges_reach_both_players(login, new_user):
    bob_name, carla_name = new_user("bob"), new_user("carla")
    bob, carla = login(bob_name), login(carla_name)
    fb, _ = baja(bob)
    fc, _ = baja(carla)

    assert bob.cmd(f"JUEG:{carla_name}").code == 200
    assert carla.cmd(f"DECL:{bob_name}").code == 213  # carla declines
    fb, seen = baja(bob, fb)
    assert seen == [f"R:{carla_name}"]
    fc, seen = baja(carla, fc)
    assert seen == [f"R:{bob_name}"]

    assert bob.cmd(f"JUEG:{carla_name}").code == 200
    assert bob.cmd(f"DECL:{carla_name}").code == 213  # bob withdraws
    # Within the second of the fecha sent, an earlier removal may come again.
    assert set(baja(carla, fc)[1]) == {f"R:{bob_name}"}
    assert set(baja(bob, fb)[1]) == {f"R:{carla_name}"}


def test_an_accepted_challenge_is_not_a_removal(login, new_user):
    ana_name, bob_name = new_user("ana"), new_user("bob")
    ana, bob = login(ana_name), login(bob_name)
    fecha, _ = baja(ana)
    assert ana.cmd(f"JUEG:{bob_name}").code == 200
    assert bob.cmd(f"ACEP:N:{ana_name}").code == 202
    assert baja(ana, fecha)[1] == []


def test_a_leavers_challenges_reach_the_other_player(login, new_user):
    leaver, stays, third = new_user("lv"), new_user("st"), new_user("th")
    lv, st, th = login(leaver), login(stays), login(third)
    fs, _ = baja(st)
    ft, _ = baja(th)
    assert lv.cmd(f"JUEG:{stays}").code == 200  # made by the leaver
    assert th.cmd(f"JUEG:{leaver}").code == 200  # received by the leaver
    assert lv.cmd(f"UNSU:{leaver}:{PASSWORD}").code == 104
    assert baja(st, fs)[1] == [f"R:{leaver}"]
    assert baja(th, ft)[1] == [f"R:{leaver}"]


def test_baja_is_multi_part_with_the_fecha_on_every_part(login, new_user, accounts):
    me = new_user("many")
    conn = login(me)
    fecha, _ = baja(conn)
    others = [unique_name(f"o{i}") + "x" * 8 for i in range(300)]
    for name in others:
        accounts.add_user(name[:32], PASSWORD)
        conn.cmd(f"JUEG:{name[:32]}")
        conn.cmd(f"DECL:{name[:32]}")
    parts = conn.cmd_all(f"BAJA:{fecha}")
    assert len(parts) > 1
    for i, part in enumerate(parts):
        assert part.code == 215
        assert part.more == (i < len(parts) - 1)
        assert len(part.text.split(",")[0]) == 11
    _, records = baja(conn, fecha)
    assert records == [f"R:{name[:32]}" for name in others]


def test_baja_needs_a_login_and_a_fecha(server, login, new_user):
    with server.connect() as conn:
        assert conn.cmd("BAJA:0").code == 805
    conn = login(new_user())
    assert conn.cmd("BAJA").code == 801
    assert conn.cmd("BAJA:x").code == 802


# -- SOLI: the whole present state of a user's challenges ----------------------------


def soli(conn: Conn) -> list[str]:
    parts = conn.cmd_all("SOLI")
    assert all(p.code == 216 for p in parts), parts
    text = ",".join(p.text for p in parts if p.text)
    return text.split(",") if text else []


def test_soli_lists_open_challenges_both_ways(login, new_user):
    me, a, b = new_user("me"), new_user("a"), new_user("b")
    mine, ca, cb = login(me), login(a), login(b)
    assert soli(mine) == []
    assert mine.cmd(f"JUEG:{a}").code == 200
    assert cb.cmd(f"JUEG:{me}").code == 200
    assert soli(mine) == [f"E:{a}", f"R:{b}"]
    assert soli(ca) == [f"R:{me}"]
    assert ca.cmd(f"DECL:{me}").code == 213  # declined: gone from both lists
    assert soli(mine) == [f"R:{b}"]
    assert soli(ca) == []
    assert mine.cmd(f"ACEP:B:{b}").code == 202  # accepted: a game, no challenge
    assert soli(mine) == []
    assert cb.cmd("SOLI:").code == 216  # a trailing ':' is ignored
    assert cb.cmd("SOLI:x").code == 802  # SOLI takes only 1 (time controls)
    assert cb.cmd("SOLI:1:x").code == 801
