"""Live play through the ``ajedrez`` command against a real server: ``watch`` (printing,
resuming after a kill, reconnecting, ``--exec``), ``observe``, ``chat``, seeks, hints;
and the library on a streaming connection."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import chess
import pytest

from ajedrez.client import WHITE, Client, EventRecord, NotAccepted, NotBlocked, StreamMark
from ajedrez.client.cache import SCHEMA_VERSION, Cache, cache_path
from ajedrez.client.chessboard import jgda_for
from ajedrez.domain.accounts import Accounts
from tests.client.conftest import Machine, start_game
from tests.support.common import PASSWORD, ROOT, wait_for
from tests.support.server import ServerProcess, start_server

WAIT = 30.0  # seconds a test waits for a line before it fails


def _interruptible() -> None:
    # The SIGINT a test sends stands for Ctrl-C at a terminal. Where the suite itself runs
    # with SIGINT ignored (a background job of a shell without job control), a child
    # inherits that and Python then leaves it ignored.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Running:
    """An ``ajedrez`` command left running (watch, observe), its output read as it
    comes."""

    def __init__(self, m: Machine, *args: str) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ajedrez.client.cli",
                *("--server", m.address, "--user", m.user, "--data-dir", str(m.data_dir)),
                *args,
            ],
            cwd=ROOT,
            env=m.env(m.password),
            preexec_fn=_interruptible,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.out: list[str] = []
        self.err: list[str] = []
        for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._drain, args=(stream, lines), daemon=True).start()

    @staticmethod
    def _drain(stream, lines: list[str]) -> None:  # type: ignore[no-untyped-def]
        for line in stream:
            lines.append(line.rstrip("\n"))

    def lines_with(self, *needles: str) -> list[str]:
        return [line for line in self.out if all(n in line for n in needles)]

    def wait_line(self, *needles: str, count: int = 1) -> str:
        """The ``count``-th line of standard output holding every one of ``needles``."""
        found = wait_for(lambda: len(self.lines_with(*needles)) >= count, timeout=WAIT)
        assert found, (needles, self.out, self.err)
        return self.lines_with(*needles)[count - 1]

    def wait_err(self, needle: str) -> str:
        assert wait_for(lambda: any(needle in e for e in self.err), timeout=WAIT), self.err
        return next(e for e in self.err if needle in e)

    def stop(self, sig: int = signal.SIGINT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(WAIT)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(WAIT)


def stored_cursor(m: Machine) -> int | None:
    host, port = m.address.rsplit(":", 1)
    path = cache_path(m.data_dir, host, int(port), m.user)
    if not path.exists():
        return None
    db = sqlite3.connect(path)
    try:
        row = db.execute("SELECT cursor FROM event_cursor").fetchone()
    except sqlite3.OperationalError:  # not created yet
        return None
    finally:
        db.close()
    return None if row is None else int(row[0])


# -- watch -------------------------------------------------------------------------------


def test_a_cache_of_schema_3_gains_the_event_cursor(tmp_path: Path):
    path = tmp_path / "v3.sqlite3"
    with Cache(path) as cache:  # as the client before events wrote it
        cache.db.execute("DROP TABLE event_cursor")
        cache.set_meta("schema", "3")
        cache.set_fecha("PPEN", 1794999999)
    with Cache(path) as cache:
        assert cache.get_meta("schema") == str(SCHEMA_VERSION) == "5"
        assert cache.fecha("PPEN") == 1794999999
        assert cache.event_cursor() is None
        with cache.transaction():
            cache.set_event_cursor(17)
            cache.set_event_cursor(23)
    with Cache(path) as again:
        assert again.event_cursor() == 23


def test_watch_prints_events_and_resumes_after_being_killed(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    watch = Running(a, "watch")
    try:
        watch.wait_line("Up to date", ana)
        first = stored_cursor(a)
        assert first is not None  # from now: a restart goes on from here

        gid = start_game(a, b)  # bob challenges, ana accepts playing white
        challenge = watch.wait_line("DESAFIO", bob)
        assert f"{bob} challenged you" in challenge and f"ajedrez accept {bob}" in challenge
        started = watch.wait_line("INICIO_PARTIDA", gid)
        assert f"{ana} (white) vs {bob} (black)" in started and "your move" in started
        a("move", gid, "e4")
        assert "you played 1. e4 (e2e4); " + f"{bob} to move" in watch.wait_line(
            "FIN_DE_TURNO", "e2e4"
        )
        b("move", gid, "e5")
        line = watch.wait_line("FIN_DE_TURNO", "e7e5")
        assert f"{gid}: {bob} played 1... e5 (e7e5); your move" in line, line
    finally:
        watch.kill()  # SIGKILL: no chance to tidy up

    # While nothing watches: one move each.
    a("move", gid, "Nf3")
    b("move", gid, "Nc6")
    again = Running(a, "watch")
    try:
        again.wait_line("Up to date")
        assert again.out.index(again.wait_line("g1f3")) < again.out.index(again.wait_line("b8c6"))
        # Resumed where it stopped: nothing older than the last event seen comes again
        # (that one may, had the kill come between printing it and storing its cursor).
        assert not again.lines_with("DESAFIO") and not again.lines_with("e2e4")
        assert "your move" in again.wait_line("b8c6")
        # Live again, and the local copy follows without a sync.
        b_moves = wait_for(lambda: "Nc6" in a("show", gid).out, timeout=WAIT)
        assert b_moves
        a("move", gid, "Bb5")
        again.wait_line("f1b5", "you played 3. Bb5")
        b("draw", "offer", gid)
        assert f"ajedrez draw accept {gid}" in again.wait_line("TABLAS", bob)
        a("draw", "accept", gid)
        assert "is over: draw: agreement" in again.wait_line("FINALIZACION", gid)
        assert stored_cursor(a) is not None and stored_cursor(a) > first  # type: ignore[operator]
        assert wait_for(lambda: "finished" in a("status", gid).out, timeout=WAIT)
    finally:
        assert again.stop(signal.SIGINT) == 0
    assert not [e for e in again.err if "Traceback" in e], again.err


def test_watch_from_start_and_a_clean_stop(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    b("challenge", ana, "--time", "3d")
    b("decline", ana)  # withdrawn
    watch = Running(a, "watch", "--from-start")
    try:
        made = watch.wait_line("DESAFIO ", bob)
        assert "3d (3 d a move)" in made
        assert f"{bob} withdrew their challenge to you" in watch.wait_line("DESAFIO_RETIRADO")
        watch.wait_line("Up to date")
        assert watch.out.index(made) < watch.out.index(watch.wait_line("Up to date"))
    finally:
        assert watch.stop(signal.SIGTERM) == 0
    # Stopped cleanly, the cursor kept: the next watch starts after those events.
    again = Running(a, "watch")
    try:
        again.wait_line("Up to date")
        assert not again.lines_with("DESAFIO")
    finally:
        assert again.stop(signal.SIGINT) == 0


def test_exec_gets_each_event_in_environment_variables_and_never_the_password(
    machine, new_user, tmp_path: Path
):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    log = tmp_path / "events.txt"
    cmd = f"env | grep AJEDREZ_ | sort >> '{log}'; echo ---- >> '{log}'"
    watch = Running(a, "watch", "--exec", cmd)
    try:
        watch.wait_line("Up to date")
        a("move", gid, "e4")
        a("chat", gid, "hello: with a colon")
        watch.wait_line("CHAT", "hello: with a colon")
        assert wait_for(lambda: log.exists() and log.read_text().count("----") >= 2, WAIT)
    finally:
        assert watch.stop() == 0
    blocks = []
    for block in log.read_text().split("----\n"):
        if block.strip():
            blocks.append(dict(line.split("=", 1) for line in block.strip().splitlines()))
    moved, said = blocks[:2]
    assert moved["AJEDREZ_EVENT"] == "FIN_DE_TURNO"
    assert moved["AJEDREZ_PARTIDA"] == gid and moved["AJEDREZ_JUGADA_N"] == "1"
    assert moved["AJEDREZ_JUGADA"] == "e2e4" and moved["AJEDREZ_SAN"] == "e4"
    assert moved["AJEDREZ_PROMOCION"] == "0" and moved["AJEDREZ_TURNO"] == bob
    assert moved["AJEDREZ_FEN"] == "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    assert moved["AJEDREZ_CURSOR"].isdigit() and len(moved["AJEDREZ_AT_MS"]) == 13
    assert "you played 1. e4" in moved["AJEDREZ_SUMMARY"]
    assert moved["AJEDREZ_USER"] == ana and moved["AJEDREZ_SERVER"] == a.address
    assert said["AJEDREZ_EVENT"] == "CHAT" and said["AJEDREZ_TEXTO"] == "hello: with a colon"
    assert said["AJEDREZ_USUARIO"] == ana and "AJEDREZ_FEN" not in said
    assert int(said["AJEDREZ_CURSOR"]) > int(moved["AJEDREZ_CURSOR"])
    for block in blocks:
        assert "AJEDREZ_PASSWORD" not in block
        assert PASSWORD not in "".join(block.values())


def test_a_failing_exec_is_reported_and_watching_goes_on(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    watch = Running(a, "watch", "--exec", "exit 3")
    try:
        watch.wait_line("Up to date")
        b("challenge", ana)
        watch.wait_line("DESAFIO ", bob)
        assert "exited with status 3" in watch.wait_err("--exec")
        b("decline", ana)
        watch.wait_line("DESAFIO_RETIRADO", bob)
    finally:
        assert watch.stop() == 0


def test_watch_reconnects_when_the_server_comes_back(database_url, machine, new_user):
    srv = start_server(database_url)
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana, srv=srv), machine(bob, srv=srv)
    gid = start_game(a, b)
    watch = Running(a, "watch")
    back: ServerProcess | None = None
    try:
        watch.wait_line("Up to date")
        assert srv.stop() == 0
        watch.wait_err("connecting again in")
        back = start_server(database_url, "--port", str(srv.port))
        watch.wait_err("connected again")
        a("move", gid, "d4")
        watch.wait_line("FIN_DE_TURNO", "d2d4")
        assert watch.proc.poll() is None
    finally:
        assert watch.stop() == 0
        if back is not None:
            back.stop()


# -- observe, observers, chat ------------------------------------------------------------


def test_observe_draws_the_board_after_each_move_and_shows_whispers(machine, new_user):
    ana, bob, carl = new_user("ana"), new_user("bob"), new_user("carl")
    a, b, c = machine(ana), machine(bob), machine(carl)
    gid = start_game(a, b)
    a("move", gid, "e4")
    watching = Running(c, "observe", gid)
    try:
        watching.wait_line(f"Observing {gid}: {ana} (white) vs {bob} (black)")
        watching.wait_line("Last move: 1. e4 (e2e4)")
        assert f"{carl}" in a("observers", gid).out
        b("move", gid, "e5")
        watching.wait_line(f"{bob} played 1... e5 (e7e5)")
        board = "\n".join(watching.out)
        assert "[♟]" in board  # the last move's squares in brackets
        c("chat", gid, "nice", "opening")
        watching.wait_line(f"{carl} whispers: nice opening")
        a("chat", gid, "thanks")  # the players' channel: observers never see it
        b("resign", gid, "--yes")
        watching.wait_line(f"{gid} is over")
        assert watching.proc.wait(WAIT) == 0  # observing ends with the game
        assert not watching.lines_with("thanks")
    finally:
        watching.stop()

    # After the game the players read the observers' channel too.
    chat = a("chat", gid).out
    assert f"players    {ana}: thanks" in chat and f"observers  {carl}: nice opening" in chat
    exported = a("export", gid, "--chat").out
    assert f"{ana}: thanks" in exported and f"{carl} (whisper): nice opening" in exported


def test_observe_stop_and_refusals(machine, new_user):
    ana, bob, carl = new_user("ana"), new_user("bob"), new_user("carl")
    a, b, c = machine(ana), machine(bob), machine(carl)
    gid = start_game(a, b)
    watching = Running(c, "observe", gid)
    try:
        watching.wait_line("No moves yet.")
    finally:
        assert watching.stop() == 0
    assert carl in a("observers", gid).out  # Ctrl-C stops watching, not observing
    again = Running(c, "observe", gid)
    try:
        again.wait_line("No moves yet.")
        assert c("observe", gid, "--stop").out.strip() == f"No longer observing {gid}."
        again.wait_line(f"No longer observing {gid}.")  # the running one ends with it
        assert again.proc.wait(WAIT) == 0
    finally:
        again.stop()
    assert a("observers", gid).out.strip() == f"Nobody observes {gid}."
    assert "846" in c.fail("observe", gid, "--stop", rc=1).err
    plays = a.fail("observe", gid, rc=1).err
    assert "you play in" in plays and "846" in plays
    assert "830" in c.fail("observe", "P9999999", rc=1).err


def test_chat_between_players(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    assert a("chat", gid).out.strip() == f"No messages in {gid}."
    assert (
        a("chat", gid, "good luck: have fun").out.strip() == f"Said in {gid}: good luck: have fun"
    )
    a("move", gid, "e4")
    b("chat", gid, "thank you")
    lines = a("chat", bob).out.splitlines()  # the game by the opponent's name
    assert len(lines) == 2
    assert lines[0].endswith(f"players    {ana}: good luck: have fun")
    assert lines[1].endswith(f"players    {bob}: thank you")
    assert "831" in machine(new_user("dora")).fail("chat", gid, "hi", rc=1).err
    assert a.fail("chat", gid, "", rc=2).err


# -- seeks and hints ---------------------------------------------------------------------


def test_block_unblock_and_blocked(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    assert a("blocked").out.strip() == "You block nobody."
    assert f"{bob} is blocked" in a("block", bob).out
    assert a("blocked").out.strip() == bob
    refused = b.fail("challenge", ana, rc=1).err
    assert "851" in refused and "block" not in refused
    assert a("unblock", bob).out.strip() == f"{bob} is no longer blocked."
    assert "you do not block" in a.fail("unblock", bob, rc=1).err
    assert "814" in a.fail("block", "nobody-of-that-name", rc=1).err


def test_seek_waits_pairs_and_withdraws(machine, new_user):
    ana, bob, carl = new_user("ana"), new_user("bob"), new_user("carl")
    a, b, c = machine(ana), machine(bob), machine(carl)
    # A live seek (an increment under a day) lasts while its owner is connected: the
    # seek command's own session ends with it, watch's goes on.
    watch = Running(a, "watch")
    try:
        watch.wait_line("Up to date")
        waiting = a("seek", "--time", "17h+13s").out
        assert "Seeking a game (17h+13s" in waiting and "ajedrez unseek" in waiting
        assert "keep `ajedrez watch` running" in waiting
        listed = b("seeks").out
        assert ana in listed and "17h+13s" in listed
        refused = a.fail("seek", "--time", "17h+13s", rc=1).err
        assert "848" in refused and "you already seek a game of 17h+13s" in refused
        assert a("unseek").out.strip() == "Your seeks are withdrawn."
        assert "no seek" in a.fail("unseek", "--time", "17h+13s", rc=1).err
        assert ana not in b("seeks").out
        slow = a("seek", "--time", "11d+1d").out  # correspondence: it waits for ana
        assert "Seeking a game (11d+1d" in slow and "keep `ajedrez watch`" not in slow
        assert a("unseek").out.strip() == "Your seeks are withdrawn."

        a("seek", "--time", "19h+7s", "--private")
        paired = b("seek", "--time", "19h+7s").out
        assert "Paired at once: game P" in paired and f"you play black against {ana}" in paired
        gid = paired.split("game ", 1)[1].split(" ", 1)[0]
        watch.wait_line("INICIO_PARTIDA", gid, "private", "your move")
        # The local copies know the game, each from its own side.
        assert wait_for(lambda: gid in a("games").out, timeout=WAIT)
        assert gid in b("games").out
    finally:
        assert watch.stop() == 0
    private = c.fail("observe", gid, rc=1).err  # to a stranger, as no game at all
    assert "830" in private and "private" not in private


def test_a_seek_of_any_correspondence_control(own_db, machine):
    """A server of its own: a waiting seek of another test would pair first."""
    url, database = own_db
    srv = start_server(url)
    try:
        accounts = Accounts(database)
        for name in ("ana", "bob"):
            accounts.add_user(name, PASSWORD)
        a, b = machine("ana", srv=srv), machine("bob", srv=srv)
        waiting = a("seek", "--time", "corr").out
        assert "Seeking a game (corr (any correspondence time control))" in waiting, waiting
        assert "keep `ajedrez watch`" not in waiting  # not a live seek
        assert "ana" in b("seeks").out
        paired = b("seek", "--time", "7d").out
        assert "Paired at once" in paired and "(7d (7 d a move))" in paired, paired
        assert "you play black against ana" in paired
        a("seek", "--time", "corr")
        assert a("unseek", "--time", "corr").out.strip() == "Seek for corr withdrawn."
    finally:
        srv.stop()


def test_hints(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)
    assert a("hint", gid, "g1").out.strip() == f"{gid}: the piece on g1 can move to f3, h3."
    assert "nothing on e5 can move" in a("hint", gid, "e5").out
    assert "nothing on e7 can move" in b("hint", gid, "E7").out  # not black's turn
    assert a.fail("hint", gid, "z9", rc=2).err


# -- the library on a streaming connection -----------------------------------------------


def test_the_library_gets_answers_and_events_on_one_connection(server, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a = Client(server.host, server.port, timeout=WAIT)
    b = Client(server.host, server.port, timeout=WAIT)
    try:
        a.login(ana, PASSWORD)
        b.login(bob, PASSWORD)
        start = a.even()
        caught_up = a.next_event(wait=WAIT)
        assert isinstance(caught_up, StreamMark) and caught_up.caught_up
        assert caught_up.cursor >= start
        b.juego(ana, "3d")
        gid = a.acep(WHITE, bob)
        board = chess.Board()
        for san in ("e4", "e5", "Nf3"):
            mover = a if board.turn == chess.WHITE else b
            j = jgda_for(board, board.parse_san(san))
            mover.jgda(gid, j.ply, j.jugada, j.posicion, j.promocion)
            board.push(j.move)
            # Commands on the streaming connection are answered while events arrive.
            assert a.stat(gid).next_ply == len(board.move_stack) + 1
        assert a.obsl(gid) == []
        kinds: list[str] = []
        while len(kinds) < 5:
            item = a.next_event(wait=WAIT)
            assert item is not None, kinds
            if isinstance(item, EventRecord):
                kinds.append(item.kind)
        assert kinds == ["DESAFIO", "INICIO_PARTIDA"] + ["FIN_DE_TURNO"] * 3
        # From a cursor: the same events again, then caught up.
        a.even(start)
        again = []
        while True:
            item = a.next_event(wait=WAIT)
            assert item is not None
            if isinstance(item, StreamMark) and item.caught_up:
                break
            if isinstance(item, EventRecord):
                again.append(item.kind)
        assert again[-5:] == kinds
    finally:
        a.quit()
        b.quit()


def test_the_library_reads_a_chat_log_of_several_parts(server, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a = Client(server.host, server.port, timeout=WAIT)
    b = Client(server.host, server.port, timeout=WAIT)
    try:
        a.login(ana, PASSWORD)
        b.login(bob, PASSWORD)
        b.juego(ana)
        gid = a.acep(WHITE, bob)
        said = [f"{i}: " + "x" * 480 for i in range(9)]  # more than one reply's 4,096 bytes
        for text in said:
            a.chat(gid, text)
        b.chat(gid, "ok: fine")
        assert len(a.request("CHLE", gid, "0").parts) > 1
        fecha, messages = b.chle(gid)
        assert [m.text for m in messages] == [*said, "ok: fine"]
        assert [m.user for m in messages] == [ana] * 9 + [bob]
        assert {m.channel for m in messages} == {"J"} and {m.ply for m in messages} == {0}
        # Since the fecha it answered: nothing new (those of that same second may come
        # again, as with TRAN).
        assert set(b.chle(gid, fecha).items) <= set(messages)
    finally:
        a.quit()
        b.quit()


def test_watch_says_how_a_mating_move_ended_the_game_not_whose_move_it_is(machine, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a, b = machine(ana), machine(bob)
    gid = start_game(a, b)  # ana white
    watch = Running(b, "watch")
    try:
        watch.wait_line("Up to date")
        for mover, san in ((a, "f3"), (b, "e5"), (a, "g4"), (b, "Qh4#")):
            mover("move", gid, san)
        line = watch.wait_line("FIN_DE_TURNO", "d8h4")
        assert line.endswith(
            f"{gid}: you played 2... Qh4# (d8h4); game over: you (black) won: checkmate"
        ), line
        assert "to move" not in line and "your move" not in line
        assert "you (black) won: checkmate" in watch.wait_line("FINALIZACION", gid)
    finally:
        assert watch.stop() == 0


def test_the_library_blocks_and_is_refused_by_a_block(server, new_user):
    ana, bob = new_user("ana"), new_user("bob")
    a = Client(server.host, server.port, timeout=WAIT)
    b = Client(server.host, server.port, timeout=WAIT)
    try:
        a.login(ana, PASSWORD)
        b.login(bob, PASSWORD)
        a.bloq(bob)
        assert a.blol() == [bob]
        with pytest.raises(NotAccepted) as refused:
            b.juego(ana)
        assert ana in refused.value.reason and "block" not in refused.value.reason
        a.blor(bob)
        assert a.blol() == []
        with pytest.raises(NotBlocked):
            a.blor(bob)
        b.juego(ana)
        a.decl(bob)
    finally:
        a.close()
        b.close()
