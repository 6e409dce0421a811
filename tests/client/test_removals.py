"""What goes away on the server reaches the client through the normal sync by fecha:
purged games stay in the player's archive, marked removed; declined and withdrawn
challenges leave both players' lists."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from sqlalchemy import text

from ajedrez.client.cache import Cache
from ajedrez.domain.accounts import Accounts
from ajedrez.domain.game_admin import GameAdmin
from ajedrez.domain.games import Games
from tests.client.conftest import start_game
from tests.support.common import PASSWORD
from tests.support.server import ServerProcess, start_server


@pytest.fixture
def own_server(own_db) -> Iterator[tuple[Accounts, Games, ServerProcess]]:
    url, database = own_db
    accounts = Accounts(database)
    for name in ("ana", "bob"):
        accounts.add_user(name, PASSWORD)
    srv = start_server(url)
    yield accounts, Games(database), srv
    srv.stop()


def test_a_purge_reaches_a_client_that_had_not_synced(own_server, machine):
    _accounts, games, srv = own_server
    a, b = machine("ana", srv=srv), machine("bob", srv=srv)
    gid = start_game(a, b)
    a("move", gid, "e4")
    b("move", gid, "e5")
    a("sync")  # ana's last sight: active, her turn
    b("resign", gid)
    assert len(GameAdmin(games.store).purge_finished()) == 1

    status = a("status", gid, "--sync").out
    assert "removed" in status and "your turn" not in status, status
    listing = a("games").out
    assert gid in listing and "removed from the server" in listing, listing
    # The normal sync already said so; a later one does not repeat it.
    assert "Removed from the server" not in a("sync").out

    # Bob syncs after the purge: his finished game is kept and marked.
    out = b("sync").out
    assert f"Removed from the server by its administrator: {gid}" in out, out
    assert "removed from the server" in b("games").out
    assert "1. e4 e5" in b("export", gid).out

    # A full sync keeps the player's archive.
    a("sync", "--full")
    assert gid in a("games").out
    assert "Movida" in a("show", gid).out or gid in a("show", gid).out

    # Playing in it says what happened, with no traceback.
    r = a.fail("move", gid, "Nf3")
    assert "over" in r.err or "removed" in r.err, r.err


def test_a_full_sync_marks_games_the_server_no_longer_lists(own_server, machine, tmp_path):
    _accounts, games, srv = own_server
    a, b = machine("ana", srv=srv), machine("bob", srv=srv)
    gid = start_game(a, b)
    a("move", gid, "e4")
    a("sync")
    # A game the server lost without a record (removed by hand): only a full sync can tell.
    with games.store.write() as tx:
        tx.conn.execute(text("DELETE FROM moves WHERE game_id = :g"), {"g": int(gid[1:])})
        tx.conn.execute(text("DELETE FROM games WHERE id = :g"), {"g": int(gid[1:])})
    a("sync")
    assert "removed" not in a("games").out
    out = a("sync", "--full").out
    assert gid in out and "Removed from the server" in out, out
    assert "removed from the server" in a("games").out


def test_a_declined_challenge_leaves_the_challengers_list(machine, new_user):
    bob, carla = new_user("bob"), new_user("carla")
    b, c = machine(bob), machine(carla)
    b("challenge", carla)
    assert carla in b("challenges").out
    c("sync")
    c("decline", bob)
    out = b("challenges", "--sync").out
    assert carla not in out, out
    assert "No challenges to you." in out


def test_a_withdrawn_challenge_leaves_the_challenged_players_list(machine, new_user):
    bob, carla = new_user("bob"), new_user("carla")
    b, c = machine(bob), machine(carla)
    b("challenge", carla)
    assert bob in c("challenges", "--sync").out
    b("decline", carla)  # withdraws it
    out = c("sync").out
    assert f"Challenges closed without a game (declined or withdrawn): {bob}." in out, out
    assert bob not in c("challenges").out


def test_challenges_sent_from_another_machine_are_listed(machine, new_user):
    bob, carla = new_user("bob"), new_user("carla")
    desk, laptop = machine(bob, name="desk"), machine(bob, name="laptop")
    desk("challenge", carla)
    out = laptop("challenges", "--sync").out
    assert "Challenges you sent:" in out and carla in out, out


def test_a_cache_of_schema_1_is_brought_up_to_date(tmp_path):
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema', '1');
        CREATE TABLE games (
            id TEXT PRIMARY KEY, white TEXT NOT NULL, black TEXT NOT NULL,
            color TEXT NOT NULL, status INTEGER NOT NULL, ganador INTEGER NOT NULL,
            solicitud_blancas INTEGER NOT NULL, solicitud_negras INTEGER NOT NULL,
            next_ply INTEGER NOT NULL, changed INTEGER NOT NULL, synced_at INTEGER NOT NULL
        );
        INSERT INTO games VALUES ('P0000001', 'ana', 'bob', 'B', 2, 1, 0, 0, 5, 10, 10);
        """
    )
    old.commit()
    old.close()
    with Cache(path) as cache:
        g = cache.game("P0000001")
        assert g is not None and not g.removed
        with cache.transaction():
            assert cache.mark_removed("P0000001", when=20)
            assert not cache.mark_removed("P0000001", when=30)  # not news twice
        old_game = cache.game("P0000001")
        assert old_game is not None and old_game.removed_at == 20
        assert (old_game.takeback, old_game.takeback_declined) == (None, None)
        assert cache.get_meta("schema") == "5"
