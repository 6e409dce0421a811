"""The ``ajedrez`` command: errors a person can act on, draws, resignation, claims, the
newcomer's path from subscription to a game, configuration, and the password's privacy."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from ajedrez.admin import cli as admin_cli
from ajedrez.client import app, cli
from ajedrez.client.cache import cache_path
from tests.client.conftest import free_port, start_game
from tests.support.common import PASSWORD, ROOT, unique_name
from tests.support.server import admin, start_server


def test_unreachable_wrong_password_unknown_user_no_password(machine, new_user, server):
    ana = new_user("ana")
    a = machine(ana)

    nowhere = a.fail("--server", f"127.0.0.1:{free_port()}", "sync", rc=3)
    assert "cannot reach the server" in nowhere.err and "connection refused" in nowhere.err

    wrong = a.fail("sync", password="not it", rc=4)
    assert f"wrong password for {ana}" in wrong.err and "815" in wrong.err

    ghost = machine("ghost-" + ana)
    unknown = ghost.fail("sync", rc=4)
    assert "no active user" in unknown.err and "administrator" in unknown.err

    # No password anywhere and no terminal to ask on: say how to give one.
    missing = a.fail("sync", password=None, rc=2)
    assert "AJEDREZ_PASSWORD" in missing.err and "--password-stdin" in missing.err
    assert a("sync", "--password-stdin", password=None, stdin=PASSWORD + "\n").rc == 0

    # Offline reads need a first sync; unknown games are named.
    fresh = machine(new_user("new"))
    assert "run `ajedrez sync` first" in fresh.fail("games", rc=1).err
    assert "P0000000" not in a.fail("show", "P9999999", rc=1).err
    assert "not in the local data" in a.fail("show", "P9999999", rc=1).err
    assert "invalid colour" in a.fail("accept", "x", "--color", "Z", rc=2).err


def test_illegal_move_not_your_turn_and_game_over(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)

    for typed, why in (
        ("Ke2", "no white king can move to e2"),
        ("e5", "no white pawn can move to e5"),
        ("e2e5", "the pawn on e2 cannot move to e5"),
        ("d7d5", "there is no white piece on d7"),
        ("hello", "is not a move"),
    ):
        err = a.fail("move", gid, typed, rc=1).err
        assert f"illegal move in {gid}" in err or "is not a move" in err, err
        assert why in err, err

    turn = b.fail("move", gid, "e5", rc=1).err
    assert f"not your turn in {gid}" in turn and f"{ana} (white) is to move" in turn

    a("move", gid, "f3")
    b("move", gid, "e5")
    a("move", gid, "g4")
    out = b("move", gid, "Qh4#").out
    assert f"{gid} is over: {bob} (black) won: checkmate" in out
    over = a.fail("move", gid, "Kf2", rc=1).err
    assert f"{gid} is over: {bob} (black) won: checkmate" in over
    assert "lost: checkmate" in a("games").out
    ranking = b("ranking", "--sync").out
    assert bob in ranking


def test_draw_offer_decline_accept(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    a("move", gid, "d4")

    assert "Draw offered to" in a("draw", "offer", gid).out
    assert f"{ana} offers a draw" in b("show", gid, "--sync").out
    assert "declined" in b("draw", "decline", gid).out
    b("move", gid, "d5")
    again = a.fail("draw", "offer", gid, rc=1).err
    assert "after your next move" in again, again
    a("move", gid, "c4")

    b("draw", "offer", gid)
    b("move", gid, "Nf6")  # bob's own move: his offer stands
    assert "Draw agreed" in a("draw", "accept", gid).out
    assert "draw (agreed)" in b("status", gid, "--sync").out
    assert "1/2-1/2" in b("export", gid).out


def test_takeback_and_a_copy_that_held_the_move_taken_back(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    for i, san in enumerate(["e4", "e5", "Nf3"]):
        (a if i % 2 == 0 else b)("move", gid, san)
    laptop = machine(bob, name="bob-laptop")
    assert "3 new moves" in laptop("sync").out

    answered = b.fail("takeback", "ask", gid, rc=1).err  # e5 was answered by Nf3
    assert "850" in answered and "not yours" in answered
    assert f"Asked {bob} to take back" in a("takeback", "ask", gid).out
    assert f"Takeback declined in {gid}" in b("takeback", "decline", gid).out
    a("takeback", "ask", gid)
    assert f"{ana}'s last move is undone; {ana} to move" in b("takeback", "accept", gid).out
    a("move", gid, "Nc3")  # ply 3 again: as many plies as the laptop holds, not the same

    def moves(text: str) -> str:
        return text.split("Movida")[1].split("\n\n")[0]

    held = moves(laptop("show", gid, "--sync").out)
    assert "Nc3" in held and "Nf3" not in held, held
    assert held == moves(b("show", gid, "--sync").out)


def test_resign_and_claim(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    nothing = a.fail("claim", gid, rc=1).err
    assert "no draw to claim" in nothing and "842" in nothing
    # Knights out and back twice: the starting position occurs a third time.
    for i, san in enumerate(["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1", "Ng8"]):
        (a if i % 2 == 0 else b)("move", gid, san)
    assert "threefold repetition, claimed" in b("claim", gid).out

    gid2 = start_game(b, a)  # a new game between the two, bob white
    b("move", gid2, "e4")
    assert f"You resigned {gid2}; {bob} wins." in a("resign", gid2, "--yes").out
    assert f"{gid2} is over" in b.fail("move", gid2, "d4", rc=1).err
    assert f"{ana} resigned" in b("show", gid2, "--sync").out


def test_newcomer_subscribes_is_approved_plays_and_leaves(server, machine, new_user):
    name = unique_name("newbie")
    me = machine(name)
    out = me("subscribe", "--comment", "Ana Newcomer").out
    assert "administrator must approve" in out
    assert "taken or already requested" in me.fail("subscribe", rc=1).err
    assert me.fail("sync", rc=4).rc == 4  # not approved yet

    listed = admin(server.database_url, "subs", "list")
    assert listed.returncode == 0 and name in listed.stdout
    assert admin(server.database_url, "subs", "approve", name).returncode == 0

    assert "Synced with" in me("sync").out
    rival = machine(new_user("rival"))
    me("challenge", rival.user)
    rival("sync")
    gid = rival("accept", name, "--color", "N").out.split("Game ", 1)[1].split(" ", 1)[0]
    me("move", gid, "e4")

    closed = me("unsubscribe", "--yes").out
    assert f"Account {name} closed" in closed
    assert me.fail("sync", rc=4).rc == 4
    assert "won: " in rival("status", gid, "--sync").out


def test_config_file_and_the_password_never_stored(machine, new_user):
    ana = new_user("ana")
    a = machine(ana)
    secret = "a rather unusual password 123"
    a.password = secret  # the account's real password stays PASSWORD: a wrong one is fine

    # Save server and user to the config file, then run with no options at all.
    cfg = a.home / "config" / "ajedrez" / "client.toml"
    a("config", "--save", options=True)
    text = cfg.read_text()
    assert f'server = "{a.address}"' in text and f'user = "{ana}"' in text
    shown = a("config", options=False).out
    assert f"server:      {a.address}" in shown and f"user:        {ana}" in shown
    assert a("sync", options=False, password=PASSWORD).rc == 0
    a.fail("sync", options=False, rc=4)  # the unusual one: wrong, refused
    a.fail("sync", "--password-stdin", options=False, password=None, stdin=secret + "\n", rc=4)

    # No user anywhere: say where to put one.
    cfg.unlink()
    assert "no user" in a.fail("games", options=False, rc=2).err

    for path in a.home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert secret.encode() not in data, path
            assert PASSWORD.encode() not in data, path


def test_client_imports_no_server_code():
    code = (
        "import sys, ajedrez.client, ajedrez.client.protocol, ajedrez.client.errors, "
        "ajedrez.client.cache, ajedrez.client.sync, ajedrez.client.chessboard, "
        "ajedrez.client.config, ajedrez.client.cli\n"
        "bad = [m for m in sys.modules if m == 'sqlalchemy' or m.startswith('sqlalchemy.') or "
        "m.split('.')[:2] in (['ajedrez', n] for n in ('server', 'service', 'storage', "
        "'session', 'wire', 'values', 'commands', 'errors', 'passwords'))]\n"
        "print(bad)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_help_lists_every_subcommand():
    out = subprocess.run(
        [sys.executable, "-m", "ajedrez.client.cli", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for command in [
        "subscribe",
        "unsubscribe",
        "sync",
        "games",
        "show",
        "move",
        "challenge",
        "challenges",
        "accept",
        "decline",
        "draw",
        "resign",
        "claim",
        "ranking",
        "status",
        "players",
        "export",
    ]:
        assert command in out, command


def test_games_list_puts_my_turn_first(machine, new_user):
    ana, bob, carl = new_user("ana"), new_user("bob"), new_user("carl")
    a, b, c = machine(ana), machine(bob), machine(carl)
    waiting = start_game(c, a)  # carl white: carl's turn
    mine = start_game(a, b)  # ana white: ana's turn
    a("sync")

    def order(*args: str) -> list[str]:
        lines = a("games", *args).out.splitlines()
        assert lines[0].split()[:4] == ["GAME", "OPPONENT", "YOU", "TURN"]
        return [line.split()[0] for line in lines[1:] if line.startswith("P")]

    assert order() == [mine, waiting]
    assert order("--sort", "id") == sorted([mine, waiting])
    rows = {line.split()[0]: line for line in a("games").out.splitlines()}
    assert rows[mine].split()[1:4] == [bob, "white", "you"]
    assert rows[waiting].split()[1:4] == [carl, "black", carl]


def test_docs_describe_every_subcommand():
    from ajedrez.client.cli import build_parser

    docs = (ROOT / "docs" / "client.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in sub.choices:  # type: ignore[union-attr]
        assert f"`ajedrez {name}" in docs, name


def test_ctrl_c_is_status_1_as_for_ajedrez_admin(monkeypatch, tmp_path):
    def interrupted(_app: app.App) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_config", interrupted)
    err = io.StringIO()
    status = cli.main(
        ["--data-dir", str(tmp_path), "config"], env={}, stdout=io.StringIO(), stderr=err
    )
    assert (status, err.getvalue()) == (1, "ajedrez: interrupted\n")


def test_the_two_commands_give_the_same_status_to_the_same_case():
    # refused, bad usage, what the command works on cannot be reached (docs/client.md)
    assert (app.EXIT_FAILED, app.EXIT_USAGE, app.EXIT_UNREACHABLE) == (
        admin_cli.EXIT_REFUSED,
        admin_cli.EXIT_USAGE,
        admin_cli.EXIT_DATABASE,
    )


def test_with_open_signup_subscribe_says_the_account_is_ready(database_url, machine):
    """The same SUBS reply either way; the client tells which by asking for the user."""
    srv = start_server(database_url, "--open-signup")
    try:
        name = unique_name("open")
        me = machine(name, srv=srv)
        out = me("subscribe", "--comment", "Ana Newcomer").out
        assert f"Account {name} created at" in out and "you can log in" in out, out
        assert "administrator" not in out
        assert "Synced with" in me("sync").out
    finally:
        assert srv.stop() == 0


def test_help_says_challenges_lists_those_sent_from_any_machine():
    for args in (["--help"], ["challenges", "--help"]):
        out = subprocess.run(
            [str(Path(sys.executable).parent / "ajedrez"), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        said = " ".join(out.split())  # as argparse wraps it
        assert "open challenges to you and those you sent, from any machine" in said, out
        assert "from here" not in said


def test_challenges_on_a_machine_that_never_synced_syncs_first(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    b("challenge", ana, "--time", "3d")
    fresh = a("challenges")
    assert "Challenges to you:" in fresh.out and bob in fresh.out, fresh
    assert "3d (3 d a move)" in fresh.out and "data from sync just now" in fresh.out, fresh
    # Synced now: the next one reads the local data, as every read command does.
    again = a("challenges", "-v")
    assert bob in again.out and again.err == "", again  # -v: no command sent
    # And with no server, there is nothing to show: it says so, as sync does.
    other = machine(new_user("carl"), srv=None)
    other.address = f"127.0.0.1:{free_port()}"
    assert "cannot reach the server" in other.fail("challenges", rc=3).err


def test_a_failed_first_login_leaves_no_local_data_and_a_later_one_keeps_it(machine, new_user):
    ana = new_user("ana")
    a = machine(ana)
    host, port = a.address.rsplit(":", 1)
    data = cache_path(a.data_dir, host, int(port), ana)
    a.fail("sync", password="not it", rc=4)
    a.fail("challenges", password="not it", rc=4)
    assert not data.exists() and not data.parent.exists()
    ghost = machine("ghost-" + ana)
    ghost.fail("sync", rc=4)
    assert list(ghost.data_dir.rglob("*")) == []
    # Once a login worked the data is the user's: a later wrong password keeps it.
    a("sync")
    assert data.exists()
    a.fail("sync", password="not it", rc=4)
    assert data.exists() and ana in a("players").out
