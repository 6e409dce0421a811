"""ajedrez-admin db backup and db restore, on the store under test, against real server
processes: a backup taken under a load of moves holds every move acknowledged before it
started; a restore is refused while a server uses the database, and for anything that is
not a whole backup, leaving the database as it was."""

from __future__ import annotations

import os
import random
import re
import stat
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import chess
import pytest
from sqlalchemy import inspect, make_url, text

from ajedrez.admin import backup as admin_backup
from ajedrez.domain.accounts import Accounts
from ajedrez.store import sqlite_backup
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from tests.support.admin import Result, assert_error, assert_ok, in_process, on_terminal
from tests.support.common import PASSWORD, unique_name, wait_for
from tests.support.databases import fresh_database, on_postgres
from tests.support.events import connect
from tests.support.hardening import log_in
from tests.support.play import challenge_and_accept, jgda, jugada, posicion, promocion
from tests.support.server import start_server

PAIRS = 3


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """ajedrez-admin in this process: run(url, *args, ...)."""
    cli = in_process("sqlite:///unused", monkeypatch, capsys)

    def go(url: str, *args: str, **kw: object) -> Result:
        return cli(*args, url=url, **kw)

    return go


@pytest.fixture
def source(tmp_path: Path) -> Iterator[str]:
    with fresh_database(tmp_path, "source") as url:
        yield url


@pytest.fixture
def target(tmp_path: Path) -> Iterator[str]:
    with fresh_database(tmp_path, "target") as url:
        yield url


def prepared(url: str, *names: str) -> None:
    """The schema at head, and these accounts."""
    db = Database(url)
    try:
        upgrade(db)
        accounts = Accounts(db)
        for name in names:
            accounts.add_user(name, PASSWORD)
    finally:
        db.dispose()


class Players(threading.Thread):
    """Two users playing random legal games, one after another, recording every move
    the server acknowledged (208) in ``acked``."""

    def __init__(
        self,
        host: str,
        port: int,
        white: str,
        black: str,
        seed: int,
        acked: list[tuple[int, int, str, int, str, int]],
        lock: threading.Lock,
        stop: threading.Event,
    ) -> None:
        super().__init__(daemon=True, name=f"players-{white}")
        self.address = (host, port)
        self.white, self.black = white, black
        self.rng = random.Random(seed)
        self.acked, self.lock, self.stop = acked, lock, stop
        self.error: str | None = None

    def run(self) -> None:
        try:
            w = log_in(*self.address, self.white, PASSWORD)
            b = log_in(*self.address, self.black, PASSWORD)
            with w, b:
                while not self.stop.is_set():
                    self.game(challenge_and_accept(self.white, w, self.black, b).pid, w, b)
        except BaseException:
            self.error = traceback.format_exc()

    def game(self, pid: str, w, b) -> None:  # type: ignore[no-untyped-def]
        board = chess.Board()
        while not self.stop.is_set() and board.outcome(claim_draw=False) is None:
            move = self.rng.choice(sorted(board.legal_moves, key=chess.Move.uci))
            ply = board.ply() + 1
            r = (w if board.turn == chess.WHITE else b).cmd(jgda(pid, ply, move))
            assert r.code == 208, (pid, ply, move, r)
            board.push(move)
            row = (int(pid[1:]), ply, jugada(move), 0, posicion(move), promocion(move))
            with self.lock:
                self.acked.append(row)


def stored_moves(url: str) -> set[tuple[int, int, str, int, str, int]]:
    db = Database(url)
    try:
        with db.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT game_id, ply, jugada, reverso, posicion, promocion FROM moves")
            )
            return {tuple(r) for r in rows}  # type: ignore[misc]
    finally:
        db.dispose()


def test_a_backup_under_load_holds_every_move_acknowledged_before_it(
    run: Callable[..., Result],
    source: str,
    target: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = [unique_name("bk") for _ in range(2 * PAIRS)]
    prepared(source, *names)
    srv = start_server(source)
    acked: list[tuple[int, int, str, int, str, int]] = []
    lock, stop = threading.Lock(), threading.Event()
    players = [
        Players(srv.host, srv.port, names[2 * i], names[2 * i + 1], i, acked, lock, stop)
        for i in range(PAIRS)
    ]
    # A copy of a page at a time (SQLite), so that the copy spans many steps; and at the
    # first step the backup waits until the server has acknowledged more moves: they are
    # written while the backup holds its snapshot, and must not stop it.
    monkeypatch.setattr(sqlite_backup, "STEP_PAGES", 1)
    during: list[int] = []

    def progress() -> Callable[[str], None]:
        def step(_line: str) -> None:
            if not during:
                during.append(len(acked))
                assert wait_for(lambda: len(acked) >= during[0] + 20, 60), "no moves meanwhile"

        return step

    monkeypatch.setattr(admin_backup, "_progress", progress)
    file = tmp_path / "under-load.backup"
    try:
        for p in players:
            p.start()
        assert wait_for(lambda: len(acked) >= 50, 60), "the load did not start"
        with lock:
            before = list(acked)
        r = run(source, "db", "backup", str(file))
        with lock:
            ended = len(acked)
        # The server goes on after the backup, too.
        assert wait_for(lambda: len(acked) >= ended + 10, 60)
    finally:
        stop.set()
        for p in players:
            p.join(60)
        srv.stop()
    assert [p.error for p in players if p.error] == []
    assert_ok(r)
    assert r.out.startswith(f"backup written to {file}: "), r.out
    assert during, "the backup reported no step"
    assert [p.name for p in file.parent.iterdir() if "partial" in p.name] == []

    r = run(target, "db", "restore", str(file))
    assert_ok(r)
    assert r.out.splitlines()[-1] == "ok", r.out
    restored = stored_moves(target)
    missing = [m for m in before if m not in restored]
    assert not missing, f"{len(missing)} of {len(before)} moves missing: {missing[:5]}"
    # The copy is one moment: whatever it holds of a game is that game's first plies.
    for game_id in {m[0] for m in restored}:
        plies = sorted(m[1] for m in restored if m[0] == game_id)
        assert plies == list(range(1, len(plies) + 1)), (game_id, plies)
    r = run(target, "db", "check")
    assert_ok(r)
    assert r.out.splitlines()[-1] == "ok"
    assert_ok(run(source, "db", "check"))


def test_a_restore_is_refused_while_a_server_uses_the_database(
    run: Callable[..., Result], source: str, target: str, tmp_path: Path
) -> None:
    name = unique_name("br")
    prepared(source, name)
    file = tmp_path / "one-user.backup"
    assert_ok(run(source, "db", "backup", str(file)))
    prepared(target)
    srv = start_server(target)
    try:
        r = run(target, "db", "restore", str(file))
        assert_error(r, 1, "in use")
        if on_postgres():
            # Every session is named, the one listening for events too.
            assert "ajedrez-server" in r.err and "unnamed" not in r.err, r.err
        assert r.out == ""
    finally:
        srv.stop()
    r = run(target, "users", "list")
    assert name not in r.out  # untouched
    r = run(target, "db", "restore", str(file))
    assert_ok(r)
    assert name in run(target, "users", "list").out
    # The server starts on what was restored, without a warning about a lost log.
    srv = start_server(target)
    try:
        with log_in(srv.host, srv.port, name, PASSWORD):
            pass
    finally:
        srv.stop()
    assert "WARNING" not in srv.log_text(), srv.log_text()


def test_a_stream_resumed_after_restoring_an_older_backup_misses_no_new_event(
    run: Callable[..., Result], source: str, target: str, tmp_path: Path
) -> None:
    # The restored database numbers its next events from the backup's counter: the
    # cursor a client stored after the backup is ahead of it, and the events the
    # restored server writes next take numbers the client has seen already.
    ana, bob, cid = unique_name("ra"), unique_name("rb"), unique_name("rc")
    prepared(source, ana, bob, cid)
    file = tmp_path / "older.backup"
    srv = start_server(source)
    try:
        with connect(srv, ana) as a, connect(srv, bob) as b, connect(srv, cid) as c:
            a.subscribe()
            assert b.cmd(f"JUEG:{ana}").code == 200
            a.event()
            assert_ok(run(source, "db", "backup", str(file)))
            assert c.cmd(f"JUEG:{ana}").code == 200
            stored = a.event().cursor  # the cursor the client keeps
    finally:
        srv.stop()
    assert_ok(run(target, "db", "restore", str(file)))
    srv = start_server(target)
    try:
        with connect(srv, ana) as a, connect(srv, cid) as c:
            got = a.subscribe(stored)
            assert got.gap is not None and got.gap < stored, got
            assert got.events == [] and got.aldia == got.gap, got
            assert c.cmd(f"JUEG:{ana}").code == 200  # gone with the restore: made again
            e = a.event()
            assert e.kind == "DESAFIO" and e.fields[:2] == (cid, ana), e
            assert e.cursor <= stored  # a number the client had seen for another event
    finally:
        srv.stop()


def test_what_is_not_a_whole_backup_is_refused_and_changes_nothing(
    run: Callable[..., Result], source: str, target: str, tmp_path: Path
) -> None:
    prepared(source, unique_name("bs"))
    backup = tmp_path / "good.backup"
    assert_ok(run(source, "db", "backup", str(backup)))
    kept = unique_name("bk")
    prepared(target, kept)
    content = backup.read_bytes()
    bad = {
        "garbage": b"this is not a backup\n" * 100,
        "empty": b"",
        "truncated": content[: len(content) // 2],
    }
    for what, data in bad.items():
        file = tmp_path / what
        file.write_bytes(data)
        r = run(target, "db", "restore", str(file))
        assert_error(r, 1, str(file))
        assert "backup" in r.err, (what, r.err)
    assert_error(run(target, "db", "restore", str(tmp_path / "absent")), 1, "no backup file")
    # The other store's backup is no backup for this one.
    other = tmp_path / "other-store.backup"
    other.write_bytes(b"PGDMP" + bytes(2000) if not on_postgres() else b"SQLite format 3\0")
    assert_error(run(target, "db", "restore", str(other)), 1)
    r = run(target, "users", "list")
    assert kept in r.out
    assert_ok(run(target, "db", "check"))


def test_a_restore_asks_on_a_terminal(
    run: Callable[..., Result], source: str, target: str, tmp_path: Path
) -> None:
    prepared(source)
    file = tmp_path / "asked.backup"
    assert_ok(run(source, "db", "backup", str(file)))
    kept = unique_name("ba")
    prepared(target, kept)
    r = run(target, "db", "restore", str(file), tty=True, stdin="n\n")
    assert_error(
        Result(r.status, r.out, r.err.rsplit("[y/N] ", 1)[-1].lstrip("\n")), 1, "not confirmed"
    )
    assert "lost" in r.err  # the question says what is at stake
    assert kept in run(target, "users", "list").out
    r = run(target, "db", "restore", str(file), tty=True, stdin="y\n")
    assert r.status == 0, r
    assert kept not in run(target, "users", "list").out


def test_a_backup_never_replaces_a_file(
    run: Callable[..., Result], source: str, tmp_path: Path
) -> None:
    prepared(source)
    file = tmp_path / "exists.backup"
    file.write_text("keep me")
    r = run(source, "db", "backup", str(file))
    assert_error(r, 1, "already exists")
    assert file.read_text() == "keep me"
    assert_error(run(source, "db", "backup", str(tmp_path / "no" / "dir.backup")), 1, "directory")
    assert sorted(p.name for p in tmp_path.iterdir() if "backup" in p.name) == ["exists.backup"]


def test_paths_this_user_may_not_enter_are_named_not_blamed_on_the_database(
    run: Callable[..., Result],
    source: str,
    target: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A backup into, or a restore from, a directory the user may not enter (another
    user's home) is refused (1) naming the path: the database is not at fault (3). The
    tests may run as root, whom permissions do not stop: the refusal is the file
    system's, so it is made here."""
    prepared(source)
    prepared(target)
    closed = tmp_path / "closed"
    closed.mkdir()
    good = tmp_path / "good.backup"
    assert_ok(run(source, "db", "backup", str(good)))
    (closed / "there.backup").write_bytes(good.read_bytes())
    stat, path_open = Path.stat, Path.open

    def denied(path: Path) -> None:
        if path == closed or closed in path.parents:
            raise PermissionError(13, "Permission denied", str(path))

    def guarded_stat(self: Path, *a: Any, **kw: Any) -> Any:
        if self != closed:
            denied(self)
        return stat(self, *a, **kw)

    def guarded_open(self: Path, *a: Any, **kw: Any) -> Any:
        denied(self)
        return path_open(self, *a, **kw)

    with monkeypatch.context() as m:
        m.setattr(Path, "stat", guarded_stat)
        m.setattr(Path, "open", guarded_open)
        r = run(source, "db", "backup", str(closed / "new.backup"))
        assert_error(r, 1, f"cannot write in {closed}: Permission denied")
        r = run(target, "db", "restore", "--yes", str(closed / "there.backup"))
        assert_error(r, 1, f"cannot read {closed / 'there.backup'}: Permission denied")
    assert sorted(p.name for p in closed.iterdir()) == ["there.backup"]


def test_a_backup_is_readable_by_its_owner_alone(
    run: Callable[..., Result], source: str, tmp_path: Path
) -> None:
    prepared(source)
    file = tmp_path / "private.backup"
    assert_ok(run(source, "db", "backup", str(file)))
    assert file.stat().st_mode & 0o077 == 0


def test_a_restore_keeps_the_database_files_mode_and_owner(
    run: Callable[..., Result], source: str, target: str, tmp_path: Path
) -> None:
    """SQLite: the file put in the database's place has the old one's mode, and, as root,
    its owner (the server's user, who must still write it). PostgreSQL has no file: the
    restored tables are the database's own."""
    name = unique_name("bo")
    prepared(source, name)
    file = tmp_path / "owned.backup"
    assert_ok(run(source, "db", "backup", str(file)))
    prepared(target)
    if on_postgres():
        assert_ok(run(target, "db", "restore", str(file)))
        db = Database(target)
        try:
            assert {"alembic_version", "games", "users"} <= set(
                inspect(db.engine).get_table_names()
            )
        finally:
            db.dispose()
        assert name in run(target, "users", "list").out
        return
    path = Path(make_url(target).database or "")
    path.chmod(0o660)  # a restore writes its copy 0600 before it takes the old file's mode
    mine = path.stat()
    owner = (65534, 65534) if os.geteuid() == 0 else (mine.st_uid, mine.st_gid)
    os.chown(path, *owner)
    assert_ok(run(target, "db", "restore", str(file)))
    kept = path.stat()
    assert stat.S_IMODE(kept.st_mode) == 0o660
    assert (kept.st_uid, kept.st_gid) == owner
    assert name in run(target, "users", "list").out  # the backup's file, not the old one


def test_without_pg_dump(
    run: Callable[..., Result], source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL: the message gives the command to run elsewhere; SQLite needs no program."""
    prepared(source)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    file = tmp_path / "nodump.backup"
    r = run(source, "db", "backup", str(file))
    if not on_postgres():
        assert_ok(r)
        assert file.exists()
        return
    assert_error(r, 3, "pg_dump is not installed", "pg_dump --format=custom", str(file))
    assert not file.exists()
    assert "PGPASSWORD=..." in r.err
    file.write_bytes(b"PGDMP")
    r = run(source, "db", "restore", str(file))
    assert_error(r, 3, "is not installed", "pg_restore")


def test_progress_on_a_terminal(source: str, target: str, tmp_path: Path) -> None:
    prepared(source)
    file = tmp_path / "shown.backup"
    status, shown = on_terminal(source, "db", "backup", str(file))
    assert status == 0, shown
    assert ("pg_dump: " if on_postgres() else " pages") in shown, shown
    assert f"backup written to {file}" in shown
    prepared(target)
    status, shown = on_terminal(target, "db", "restore", str(file), answers=(("[y/N] ", "y"),))
    assert status == 0, shown
    assert ("pg_restore: " if on_postgres() else " pages") in shown, shown
    assert re.search(r"(^|\n)replace ", shown), shown  # the question starts its own line
    assert shown.rstrip("\n").endswith("ok"), shown


def test_help_lists_the_commands(run: Callable[..., Result]) -> None:
    r = run("sqlite:///unused", "db", "--help")
    assert r.status == 0
    for command in ("backup", "restore", "check"):
        assert command in r.out, r.out
