"""What the local copy answers by itself: a finished game refused offline, the age of the
data (the last successful sync), and a PGN export identical to the server's; plus the
version and the result notation a script reads."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import time
from importlib import metadata

from ajedrez.client.cache import cache_path
from tests.client.conftest import Machine, start_game
from tests.support.common import ROOT
from tests.support.server import start_server

FOOLS_MATE = ["f3", "e5", "g4", "Qh4#"]


def _cache_db(m: Machine) -> sqlite3.Connection:
    host, port = m.address.rsplit(":", 1)
    return sqlite3.connect(cache_path(m.data_dir, host, int(port), m.user))


def test_finished_game_is_refused_from_the_local_copy_while_the_server_is_down(
    database_url, new_user, machine
):
    srv = start_server(database_url)
    try:
        ana, bob = new_user("ana"), new_user("bob")
        a, b = machine(ana, srv=srv), machine(bob, srv=srv)
        gid = start_game(a, b)
        for i, san in enumerate(FOOLS_MATE):
            (a if i % 2 == 0 else b)("move", gid, san)
        a("sync")
        served = a("export", gid, "--from-server").out
    finally:
        assert srv.stop() == 0

    for args in (("move", gid, "Kf2"), ("draw", "offer", gid), ("resign", gid, "--yes")):
        over = a.fail(*args, rc=1)
        assert f"{gid} is over: {bob} (black) won: checkmate" in over.err, over
    # The export needs no server and is the server's text, to the byte.
    assert a("export", gid).out == served


def test_a_missing_game_is_named_once(machine, new_user):
    a = machine(new_user("ana"))
    err = a.fail("move", "P9999999", "e4", rc=1).err
    assert err.count("P9999999") == 1 and "830" in err, err


def test_exports_from_every_machine_equal_the_servers_pgn(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    a("move", gid, "e4")
    b("move", gid, "e5")
    a("sync")

    # An active game: the start day, no end.
    served = a("export", gid, "--from-server").out
    assert '[Date "' in served and "????" not in served and "EndDate" not in served
    assert a("export", gid).out == served
    assert b("export", gid).out == served

    a("draw", "offer", gid)
    b("draw", "accept", gid)
    a("sync")
    served = a("export", gid, "--from-server").out
    assert "{ agreement } 1/2-1/2" in served and '[Termination "normal"]' in served
    assert a("export", gid).out == served
    assert b("export", gid).out == served
    laptop = machine(ana, name="ana-laptop")  # a fresh machine
    laptop("sync")
    assert laptop("export", gid).out == served

    # A local copy without the server's dates: the end and reason from the local data,
    # the start unknown; `export --sync` fetches them.
    db = _cache_db(laptop)
    with db:
        db.execute("DELETE FROM game_facts")
    db.close()
    guessed = laptop("export", gid).out
    assert '[Date "????.??.??"]' in guessed
    assert guessed.split("[Round", 1)[1] == served.split("[Round", 1)[1]
    assert laptop("export", gid, "--sync").out == served


def test_data_age_is_the_age_of_the_last_successful_sync(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    a("move", gid, "d4")
    # As after a sync in which this game did not change: the game was last fetched two
    # hours ago, the last successful sync was ten minutes ago.
    now = int(time.time())
    db = _cache_db(a)
    with db:
        db.execute("UPDATE games SET synced_at=? WHERE id=?", (now - 7200, gid))
        db.execute(
            "INSERT INTO meta VALUES ('last_sync', ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (str(now - 600),),
        )
    db.close()
    for args in (("show", gid), ("status", gid)):
        last = a(*args).out.rstrip("\n").splitlines()[-1]
        assert last.startswith("(data from sync 10 min ago;"), last
    assert "data from sync 10 min ago" in a("export", gid).err


def test_version_and_the_draw_result_as_pgn_writes_it(machine, new_user):
    out = subprocess.run(
        [sys.executable, "-m", "ajedrez.client.cli", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == f"ajedrez {metadata.version('ajedrez')}\n"

    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    a("draw", "offer", gid)
    agreed = b("draw", "accept", gid).out
    assert "1/2-1/2" in agreed and "½" not in agreed


def test_the_local_copy_is_readable_by_its_owner_alone(machine, new_user):
    """Made under the usual umask (022), the cache's directory and file are the owner's
    only: they hold the player's games, chat and opponents."""
    a = machine(new_user("ana"))
    old = os.umask(0o022)
    try:
        a("sync")
    finally:
        os.umask(old)
    host, port = a.address.rsplit(":", 1)
    path = cache_path(a.data_dir, host, int(port), a.user)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
