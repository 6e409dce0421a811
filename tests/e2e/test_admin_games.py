"""ajedrez-admin's games commands: list, export, purge and extend (contract section 5). games purge
only ever runs on a private database: on the shared one it would remove finished games
other tests are looking at.
"""

from __future__ import annotations

import getpass
import time

import pytest
from sqlalchemy import func, select, update

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games
from ajedrez.domain.views import MoveRecord
from ajedrez.store import audit
from ajedrez.store.db import Database
from ajedrez.store.models import Game, Move
from tests.support.admin import (
    answered,
    assert_error,
    assert_ok,
    pid,
)
from tests.support.common import PASSWORD
from tests.support.moves import play, status

# -- games ---------------------------------------------------------------------------------


def test_games_list_on_shared_database(cli, db):  # db: the shared database exists
    r = cli("games", "list")
    assert_ok(r)
    assert r.out.splitlines()[0].split()[:3] == ["GAME", "WHITE", "BLACK"]


def test_games_list_and_purge(cli, private_db):
    url, database = private_db
    accounts, games = Accounts(database), Games(database)
    for name in ("ana", "bea", "carla"):
        accounts.add_user(name, PASSWORD)
    ana, bea, carla = (accounts.login(n, PASSWORD) for n in ("ana", "bea", "carla"))
    games.challenge(ana.id, "bea")
    finished = games.accept(bea.id, "B", "ana")  # bea white, ana black
    play(games, bea.id, finished, MoveRecord(1, "e2e4", 0, "1228", 0))
    play(games, ana.id, finished, MoveRecord(2, "e7e5", 0, "5236", 0))
    games.resign(bea.id, finished, "ana")  # black wins
    games.challenge(carla.id, "ana")
    active = games.accept(ana.id, "N", "carla")  # carla white, ana black

    r = cli("games", "list", url=url)
    assert_ok(r)
    rows = {line.split()[0]: line.split() for line in r.out.splitlines()[1:]}
    assert set(rows) == {f"P{finished:07d}", f"P{active:07d}"}
    f = rows[f"P{finished:07d}"]
    assert f[1:6] == ["bea", "ana", "finished", "0-1", "2"]
    a = rows[f"P{active:07d}"]
    assert a[1:6] == ["carla", "ana", "active", "*", "0"]

    r = cli("games", "purge", url=url)  # not on a terminal: no question
    assert_ok(r)
    assert r.out == "1 finished game removed\n"
    rows = [line.split()[0] for line in cli("games", "list", url=url).out.splitlines()[1:]]
    assert rows == [f"P{active:07d}"]
    with database.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(Move)) == 0
    assert status(games, ana.id, active).status == 0
    assert cli("games", "purge", url=url).out == "no finished games removed\n"


DAY = 86400


def purge_setup(database: Database) -> tuple[int, int, int]:
    """Two finished games, 40 and 2 days ago, and an active one: (old, recent, active)."""
    accounts, games = Accounts(database), Games(database)
    for name in ("ana", "bea", "carla", "dora"):
        accounts.add_user(name, PASSWORD)
    ana, bea, carla, dora = (accounts.login(n, PASSWORD) for n in ("ana", "bea", "carla", "dora"))

    def finished(opponent, days_ago: int) -> int:
        games.challenge(ana.id, opponent.name)
        gid = games.accept(opponent.id, "B", "ana")
        games.resign(opponent.id, gid, "ana")
        with database.engine.begin() as conn:
            conn.execute(
                update(Game)
                .where(Game.id == gid)
                .values(finished_at=int(time.time()) - days_ago * DAY)
            )
        return gid

    old, recent = finished(bea, 40), finished(carla, 2)
    games.challenge(dora.id, "ana")
    return old, recent, games.accept(ana.id, "N", "dora")


def game_ids(cli, url: str) -> list[str]:
    r = cli("games", "list", url=url)
    assert_ok(r)
    return [line.split()[0] for line in r.out.splitlines()[1:]]


def test_games_purge_dry_run(cli, private_db):
    url, database = private_db
    old, recent, active = purge_setup(database)
    everything = game_ids(cli, url)
    assert everything == [pid(old), pid(recent), pid(active)]

    r = cli("games", "purge", "--dry-run", url=url)
    assert_ok(r)
    lines = r.out.splitlines()
    assert lines[0] == "would remove 2 finished games"
    assert lines[1].split()[:3] == ["GAME", "WHITE", "BLACK"]
    assert [line.split()[:5] for line in lines[2:]] == [
        [pid(old), "bea", "ana", "finished", "0-1"],
        [pid(recent), "carla", "ana", "finished", "0-1"],
    ]
    r = cli("games", "purge", "--dry-run", "--older-than", "30d", url=url)
    assert_ok(r)
    lines = r.out.splitlines()
    assert lines[0].startswith("would remove 1 finished game (finished before ")
    assert [line.split()[0] for line in lines[2:]] == [pid(old)]
    r = cli("games", "purge", "--dry-run", "--older-than", "60d", url=url)
    assert_ok(r)
    assert r.out.startswith("would remove no finished games (finished before ")
    assert len(r.out.splitlines()) == 1
    # On a terminal too, a dry run asks nothing and removes nothing.
    assert_ok(cli("games", "purge", "--dry-run", url=url, tty=True))
    assert game_ids(cli, url) == everything


def test_games_purge_older_than(cli, private_db):
    url, database = private_db
    _, recent, active = purge_setup(database)
    r = cli("games", "purge", "--older-than", "30d", url=url)
    assert_ok(r)
    assert r.out.startswith("1 finished game removed (finished before ")
    assert game_ids(cli, url) == [pid(recent), pid(active)]
    r = cli("games", "purge", "--older-than", "72h", url=url)
    assert_ok(r)
    assert r.out.startswith("no finished games removed")
    r = cli("games", "purge", "--older-than", "2820m", url=url)  # 47 hours
    assert_ok(r)
    assert r.out.startswith("1 finished game removed")
    assert game_ids(cli, url) == [pid(active)]


@pytest.mark.parametrize(
    "value", ["30", "d", "=-1d", "1w", "1.5d", "1234567d", "30 d", "\uff13\uff10d", "=30D"]
)
def test_games_purge_bad_duration(cli, private_db, value):
    url, database = private_db
    purge_setup(database)
    option = f"--older-than{value}" if value.startswith("=") else "--older-than"
    args = (option,) if value.startswith("=") else (option, value)
    assert_error(cli("games", "purge", *args, url=url), 2, "duration")
    assert len(game_ids(cli, url)) == 3


def test_games_purge_on_a_terminal_asks(cli, private_db):
    url, database = private_db
    active = purge_setup(database)[2]
    for answer in ("n\n", ""):
        r = cli("games", "purge", url=url, tty=True, stdin=answer)
        assert "remove 2 finished games and their moves? [y/N]" in r.err
        assert_error(answered(r), 1, "not confirmed")
        assert len(game_ids(cli, url)) == 3
    r = cli("games", "purge", "--older-than", "30d", url=url, tty=True, stdin="y\n")
    assert r.status == 0, r
    assert "remove 1 finished game (finished before " in r.err
    assert r.out.startswith("1 finished game removed")
    r = cli("games", "purge", "--yes", url=url, tty=True)
    assert_ok(r)  # nothing asked
    assert r.out == "1 finished game removed\n"
    r = cli("games", "purge", url=url, tty=True)
    assert_ok(r)  # nothing to remove, nothing to ask
    assert r.out == "no finished games removed\n"
    assert game_ids(cli, url) == [pid(active)]


def test_games_purge_is_audited(cli, private_db):
    url, database = private_db
    old, recent, _ = purge_setup(database)
    assert_ok(cli("games", "purge", "--dry-run", url=url))
    assert audit.entries(database) == []  # a dry run changes nothing
    assert_ok(cli("games", "purge", url=url))
    [entry] = audit.entries(database)
    assert (entry.actor, entry.action) == (getpass.getuser(), "games purge")
    assert pid(old) in entry.detail and pid(recent) in entry.detail
    r = cli("audit", url=url)
    assert_ok(r)
    assert r.out.splitlines()[-1].split()[2:5] == [getpass.getuser(), "games", "purge"]


# -- games chat ----------------------------------------------------------------------------


def a_game(database: Database, control: str | None = None) -> tuple[Games, list[int], int]:
    """ana (black) and bea (white) play a game, with the time control ``control``; carla
    exists. (Games, their ids, game)."""
    accounts, games = Accounts(database), Games(database)
    for name in ("ana", "bea", "carla"):
        accounts.add_user(name, PASSWORD)
    users = [accounts.login(n, PASSWORD).id for n in ("ana", "bea", "carla")]
    games.challenge(users[0], "bea", control)
    return games, users, games.accept(users[1], "B", "ana")


def test_games_chat_prints_both_channels_and_is_audited(cli, private_db):
    url, database = private_db
    games, (ana, bea, carla), game = a_game(database)
    play(games, bea, game, MoveRecord(1, "e2e4", 0, "1228", 0))
    games.live.observe(carla, game)
    games.live.say(ana, game, "buena suerte: ¡a jugar!")
    games.live.say(carla, game, "e4, \u202eclassic")

    r = cli("games", "chat", pid(game), url=url)
    assert_ok(r)
    lines = r.out.splitlines()
    assert lines[0].split() == ["WHEN", "(UTC)", "CH", "PLY", "WHO", "TEXT"]
    assert lines[1].split()[2:] == ["J", "1", "ana", "buena", "suerte:", "¡a", "jugar!"]
    # Stored text cannot reorder the listing: the override shows as an escape.
    assert lines[2].split()[2:] == ["O", "1", "carla", "e4,", "\\u202eclassic"]
    entries = audit.entries(database, None)
    assert (entries[-1].action, entries[-1].target) == ("games chat", pid(game))
    assert entries[-1].actor == getpass.getuser()

    r = cli("games", "chat", "P9999999", url=url)
    assert_error(r, 1, "P9999999")


def test_games_chat_of_a_game_without_messages(cli, private_db):
    url, database = private_db
    _games, _users, game = a_game(database)
    r = cli("games", "chat", str(game), url=url)
    assert_ok(r)
    assert r.out.strip() == "no messages"


# -- games extend --------------------------------------------------------------------------


def test_games_extend_on_a_terminal_asks(cli, private_db):
    url, database = private_db
    _games, _users, game = a_game(database, "1d")

    def deadline() -> int:
        with database.engine.connect() as conn:
            return conn.scalar(select(Game.deadline_ms).where(Game.id == game))

    first = deadline()
    for answer in ("n\n", ""):
        r = cli("games", "extend", pid(game), "2h", url=url, tty=True, stdin=answer)
        assert f"give 2h to the running clock of {pid(game)}? [y/N]" in r.err
        assert_error(answered(r), 1, "not confirmed")
        assert deadline() == first
    r = cli("games", "extend", pid(game), "2h", url=url, tty=True, stdin="y\n")
    assert r.status == 0, r
    assert r.out == "1 game extended by 2h\n"
    assert deadline() == first + 2 * 3600 * 1000
    r = cli("games", "extend", "--all", "30m", "--yes", url=url, tty=True)
    assert_ok(r)  # nothing asked
    assert r.out == "1 game extended by 30m\n"
    assert deadline() == first + 150 * 60 * 1000
    assert [e.action for e in audit.entries(database)] == ["games extend"] * 2
