"""Sync by fecha: only what changed travels; a fresh machine rebuilds everything; read
commands work with no server."""

from __future__ import annotations

import re

from ajedrez.client import Client
from ajedrez.client.cache import Cache, cache_path
from ajedrez.client.sync import sync_all
from tests.client.conftest import start_game
from tests.support.common import PASSWORD
from tests.support.server import start_server


def _spar_lines(stderr: str) -> list[str]:
    return re.findall(r"> (SPAR:\S+)", stderr)


def test_incremental_sync_fetches_only_new_plies(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    for i, san in enumerate(["e4", "e5", "Nf3", "Nc6"]):
        (a if i % 2 == 0 else b)("move", gid, san)

    laptop = machine(ana, name="ana-laptop")
    first = laptop("sync", "-v")
    assert "4 new moves" in first.out
    assert _spar_lines(first.err) == [f"SPAR:{gid}:0"]
    assert re.search(r"> PPEN:00000000000\b", first.err)

    for i, san in enumerate(["Bb5", "a6", "Ba4"]):
        (a if i % 2 == 0 else b)("move", gid, san)
    second = laptop("sync", "-v")
    assert f"3 new moves ({gid}: 3)" in second.out
    # The new plies, and the last two held again (still the game's: no takeback).
    assert _spar_lines(second.err) == [f"SPAR:{gid}:2"]
    # The fechas sent are the ones the server answered last time, not 0.
    answered = re.findall(r"< 2(?:0[0134]|15) (\d{11})", first.err)
    sent = re.findall(r"> (?:JAUT|BAJA|TRAN|PPEN):(\d{11})", second.err)
    assert sent == answered[:4] and all(int(f) > 0 for f in sent)

    third = laptop("sync", "-v")
    # PPEN may list a game again (its fecha's second): nothing new, the last two read again.
    assert "0 new moves" in third.out
    assert _spar_lines(third.err) in ([], [f"SPAR:{gid}:5"])

    # Both machines hold the same moves.
    def moves(text: str) -> str:
        return text.split("Movida")[1].split("\n\n")[0]

    assert moves(laptop("show", gid).out) == moves(a("show", gid, "--sync").out)


def test_library_sync_counts_what_it_fetched(server, machine, new_user, tmp_path):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    a("move", gid, "d4")
    b("move", gid, "d5")
    cache = Cache(cache_path(tmp_path / "lib", server.host, server.port, ana))
    with Client(server.host, server.port) as c:
        c.login(ana, PASSWORD)
        report = sync_all(c, cache)
        assert report.new_moves == {gid: 2} and c.plies_fetched == 2
        assert c.sent["SPAR"] == 1 and c.sent["STAT"] >= 1
        assert cache.fecha("PPEN") > 0 and cache.fecha("JAUT") > 0 and cache.fecha("TRAN") > 0
    a("move", gid, "c4")
    with Client(server.host, server.port) as c:
        c.login(ana, PASSWORD)
        report = sync_all(c, cache)
        # The new ply, and the last two held read again.
        assert report.new_moves == {gid: 1} and c.plies_fetched == 3
    assert [m.san for m in cache.moves(gid)] == ["d4", "d5", "c4"]
    cache.close()


def test_challenges_are_synced_and_answered(machine, new_user):
    ana, bob, carl = new_user("ana"), new_user("bob"), new_user("carl")
    a, b, c = machine(ana), machine(bob), machine(carl)
    b("challenge", ana)
    c("challenge", ana)
    out = a("sync").out
    assert f"Challenges to you: {bob} (new), {carl} (new)." in out
    listed = a("challenges").out
    assert bob in listed and carl in listed
    sent = b("challenges").out
    assert "No challenges to you." in sent and f"Challenges you sent:\n  {ana}" in sent

    a("decline", carl)
    assert carl not in a("challenges").out
    started = a("accept", bob, "--color", "N").out
    assert "you play black" in started
    gid = started.split("Game ", 1)[1].split(" ", 1)[0]
    assert "No challenges to you." in a("challenges").out
    # A challenge that was withdrawn meanwhile: the server says so, the cache forgets it.
    c("challenge", ana)
    a("sync")
    c("decline", ana)  # carl withdraws
    refused = a.fail("accept", carl, "--color", "B", rc=1)
    assert "no open challenge" in refused.err
    assert carl not in a("challenges").out

    games = b("games", "--sync").out
    assert gid in games and ana in games and "white" in games and "you" in games
    assert ana not in b("challenges").out  # accepted: the game replaced the challenge
    players = a("players").out
    assert f"game {gid}" in players and "you" in players


def test_read_commands_work_offline_after_the_server_stops(
    database_url, new_user, tmp_path, machine
):
    srv = start_server(database_url)
    try:
        ana, bob = new_user("ana"), new_user("bob")
        a, b = machine(ana, srv=srv), machine(bob, srv=srv)
        gid = start_game(a, b)
        a("move", gid, "e4")
        b("move", gid, "e5")
        a("sync")
    finally:
        assert srv.stop() == 0

    shown = a("show", gid).out
    assert "♙" in shown and "Last move: 1... e5 (e7e5)" in shown
    assert "data from sync" in shown.splitlines()[-1]
    assert gid in a("games").out
    assert "active, your turn" in a("status", gid).out
    assert "1. e4 e5" in a("export", gid).out
    assert a("ranking").out and a("players").out and a("challenges").out

    # With --sync it says it cannot reach the server, and shows the cached data anyway.
    refreshed = a("show", gid, "--sync")
    assert "cannot reach the server" in refreshed.err and "showing the cached data" in refreshed.err
    assert "Last move: 1... e5" in refreshed.out

    # Commands that need the server say so, in one line, with their own exit status.
    for args in (("sync",), ("move", gid, "Nf3"), ("challenge", bob)):
        failed = a.fail(*args, rc=3)
        assert "cannot reach the server" in failed.err and "offline" in failed.err


def test_full_sync_rebuilds(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    a("move", gid, "e4")
    a("sync")
    out = a("sync", "--full").out
    assert "1 new move " in out
    assert "Last move: 1. e4" in a("show", gid).out
    # A fresh machine can go straight to a game by the opponent's name with --sync.
    laptop = machine(ana, name="ana-laptop")
    assert "Last move: 1. e4 (e2e4) by you" in laptop("show", bob, "--sync").out
