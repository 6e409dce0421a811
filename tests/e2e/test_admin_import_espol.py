"""ajedrez-admin import espol: the sample 1995 data set (tests/data/espol1995) brought into
a database of the test's own, on the store under test: what is imported and what is
reported, a rerun that imports nothing (nor what players did away with since: a record of
every row imported says so; without it, the rows there and the purges), the imported accounts
playing on a real server, the passwords found nowhere in clear, a dry run, what is not an
ESPOL directory, numbers and names taken already, and a large data set imported in batches
with progress and completed after a failure midway.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import column, delete, func, inspect, select, table

from ajedrez.domain.accounts import Accounts
from ajedrez.domain.games import Games
from ajedrez.store import audit, imported
from ajedrez.store.db import Database
from ajedrez.store.models import Game, GameRequest, ImportedRow, Move, Subscription, User
from tests.support.admin import Result, assert_error, assert_ok, in_process, listed, pid
from tests.support.common import PASSWORD, ROOT
from tests.support.espol import Conn
from tests.support.espol_data import (
    SAMPLE,
    SAMPLE_REFUSED_PASSWORDS,
    SAMPLE_REFUSED_REQUEST_PASSWORDS,
    SAMPLE_REQUESTS,
    SAMPLE_USERS,
    write_large,
)
from tests.support.hardening import sqlite_path
from tests.support.server import ServerProcess, start_server

SAMPLE_PASSWORDS = [
    *(u.password for u in SAMPLE_USERS),
    *SAMPLE_REFUSED_PASSWORDS,
    *(p for p, _ in SAMPLE_REQUESTS.values()),
    *SAMPLE_REFUSED_REQUEST_PASSWORDS,
]
IMPORTED_GAMES = [1, 2, 3, 4, 5, 6, 7, 8, 13, 14, 15, 16, 18]
SUMMARY = [
    "users: 10 imported, 0 already imported, 7 skipped",
    "subscription requests: 2 imported, 0 already imported, 4 skipped",
    "games: 13 imported, 0 already imported, 6 skipped (3 not replaying, 1 finished on import)",
    "challenges: 3 imported, 0 already imported, 7 skipped",
    "next game number: P0000021",
]
RERUN_SUMMARY = [
    "users: 0 imported, 10 already imported, 7 skipped",
    "subscription requests: 0 imported, 2 already imported, 4 skipped",
    "games: 0 imported, 13 already imported, 6 skipped (3 not replaying, 1 finished on import)",
    "challenges: 0 imported, 3 already imported, 7 skipped",
    "next game number: P0000021",
]


@pytest.fixture
def store(own_db: tuple[str, Database]) -> tuple[str, Database]:
    return own_db


@pytest.fixture
def run(
    store: tuple[str, Database],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Callable[..., Result]:
    """ajedrez-admin on the test's own database."""
    return in_process(store[0], monkeypatch, capsys)


def counts(db: Database) -> dict[str, int]:
    with db.engine.connect() as conn:
        return {
            m.__tablename__: conn.scalar(select(func.count()).select_from(m)) or 0
            for m in (User, Subscription, Game, Move, GameRequest)
        }


def section(out: str, title: str) -> list[str]:
    """The indented lines under ``title`` in the report."""
    lines = out.splitlines()
    if title not in lines:
        return []
    found = []
    for line in lines[lines.index(title) + 1 :]:
        if not line.startswith("  "):
            break
        found.append(line.strip())
    return found


# -- the sample ----------------------------------------------------------------------------


def test_the_sample_is_imported_and_reported(run, store):
    _, db = store
    r = run("import", "espol", str(SAMPLE))
    assert_ok(r)  # bad lines are reported, and the status is still 0
    out = r.out.splitlines()
    assert out[0] == f"ESPOL data: {SAMPLE / 'server.cfg'}"
    assert out[-5:] == SUMMARY
    assert section(r.out, "games that do not replay (imported up to their last legal move):") == [
        "P0000006: does not replay: solicitudes/P0000006.PEN:5: ply 5: illegal move f1h3: "
        "the bishop on f1 cannot move there; 4 of 6 moves imported",
        "P0000013: does not replay: solicitudes/P0000013.PEN:3: ply 3: posicion 1228 does "
        "not match g1f3: expected 0621; 2 of 3 moves imported",
        "P0000018: does not replay: solicitudes/P0000018.PEN:3: #jugada '00000x' is not 1-6 "
        "digits; 2 of 4 moves imported",
    ]
    assert section(r.out, "games finished on import:") == [
        "P0000005: active, but checkmate: finished on import, 0-1"
    ]
    assert section(r.out, "other changes made on import:") == [
        "autorizados/usuarios:8: user 'gonzalo': comment: characters a comment may not hold "
        "replaced or dropped",
        "P0000015: recorded result 1-0, but the position is checkmate: imported as 0-1",
    ]
    problems = section(r.out, "not imported:")
    assert len(problems) == 25
    for expected in (
        "autorizados/usuarios:7: invalid user name 'josé': 1-32 characters of A-Z a-z 0-9 _ . -",
        "autorizados/usuarios:9: 7 fields where 5 are expected (user:password:comentario:"
        "fecha:#ganadas) (a ':' in a password or comment?)",
        "autorizados/usuarios:16: empty password",
        "autorizados/subscripcion:3: request for 'ana': the name is an account's",
        "partidas/est_partida:9: P0000009: no solicitudes/P0000009.PEN: skipped",
        "partidas/est_partida:10: P0000010: 'zoe' is not a user imported from usuarios: skipped",
        "partidas/est_partida:11: est_prt 'X' is not one of 0, 2",
        "partidas/est_partida:18: P0000017: 'hilda' and 'ivan' have another active game "
        "(P0000016); this server allows one at a time: skipped",
        "solicitudes/P0000020.PEN: no line in est_partida: not imported",
        "solicitudes/ana:2: 'julia' and 'ana' have an active game: challenge skipped",
        "solicitudes/carlos:2: 'fantasma' is not a user imported from usuarios: skipped",
        "solicitudes/zoe: 'zoe' is not a user imported from usuarios: 1 challenge to them skipped",
    ):
        assert expected in problems, expected

    # Accounts: comment, admission date and wins as the old server had them.
    users = run("users", "list")
    for u in SAMPLE_USERS:
        row = listed(users, u.name)
        assert row is not None, u.name
        wins = u.wins + (1 if u.name == "fabiola" else 0)  # P0000005 ended on import
        assert row[1:5] == ["active", *_admitted(u.fecha), str(wins)], row
        line = next(x for x in users.out.splitlines() if x.split()[0] == u.name)
        assert line.endswith(f"  {u.comment}"), line
    assert listed(users, "josé") is None and listed(users, "Bruno") is None
    subs = run("subs", "list")
    assert [line.split()[0] for line in subs.out.splitlines()[1:]] == ["olga", "pedro"]
    assert "Olga Benítez, olga@espol.edu.ec" in subs.out

    # Games: numbers, players, results and the moves that replay.
    games = {line.split()[0]: line.split() for line in run("games", "list").out.splitlines()[1:]}
    assert list(games) == [pid(g) for g in IMPORTED_GAMES]
    assert games["P0000001"][1:6] == ["ana", "bruno", "finished", "1-0", "24"]
    assert games["P0000002"][1:6] == ["carlos", "diana", "finished", "1/2-1/2", "24"]
    assert games["P0000003"][1:6] == ["bruno", "carlos", "active", "*", "16"]
    assert games["P0000005"][1:6] == ["ernesto", "fabiola", "finished", "0-1", "4"]
    assert games["P0000006"][1:6] == ["gonzalo", "hilda", "active", "*", "4"]
    assert games["P0000014"][1:6] == ["ana", "julia", "active", "*", "0"]
    assert games["P0000015"][1:6] == ["fabiola", "gonzalo", "finished", "0-1", "4"]
    assert " ".join(games["P0000001"][10:]) == "resignation"
    assert " ".join(games["P0000015"][10:]) == "checkmate"
    pgn = run("games", "export", "P0000003").out
    assert "3. exd6 e6 4. dxc7 Be7 5. cxd8=Q+ Bxd8 6. Nf3 O-O" in pgn and "8. O-O e5 *" in pgn
    assert '[Date "1995.05.14"]' in pgn
    with db.engine.connect() as conn:
        g4 = conn.execute(select(Game).where(Game.id == 4)).one()
        assert (g4.req_white, g4.req_black, g4.created_at) == (1, 0, 800542400)
        assert conn.scalar(select(func.count()).select_from(GameRequest)) == 3
    with db.reading() as tx:
        challenges = imported.challenges_among(tx, ["ana", "carlos", "ernesto"])
    assert sorted(challenges.values()) == [
        ("diana", "ernesto"),
        ("hilda", "carlos"),
        ("ivan", "ana"),
    ]

    # Every game is one this server could have written.
    check = run("db", "check")
    assert check.status == 0, check
    assert "games: 13 replayed (109 moves)" in check.out and check.out.endswith("ok\n")

    # The audit trail: the import, and a note for each game changed on import.
    trail = [e for e in audit.entries(db) if e.action == "import espol"]
    assert [e.target for e in trail[:-1]] == [pid(g) for g in (5, 6, 13, 15, 18)]
    assert trail[-1].target == str(SAMPLE)[-64:]
    assert trail[-1].detail.startswith("users 10 imported, 0 already imported, 7 skipped;")


def _admitted(fecha: int) -> list[str]:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(fecha, UTC).strftime("%Y-%m-%d %H:%M").split()


def test_a_rerun_imports_nothing_twice(run, store):
    _, db = store
    first = run("import", "espol", str(SAMPLE))
    assert_ok(first)
    before = counts(db)
    trail = len(audit.entries(db))
    r = run("import", "espol", str(SAMPLE / "server.cfg"))  # the file itself will do too
    assert_ok(r)
    assert r.out.splitlines()[-5:] == RERUN_SUMMARY
    # The same report but for the counts: every bad line with the same reason (those
    # decided against the rows the first run wrote too), and the games changed on import.
    assert r.out.splitlines()[:-5] == first.out.splitlines()[:-5]
    problems = section(r.out, "not imported:")
    assert len(problems) == 25
    assert (
        "partidas/est_partida:18: P0000017: 'hilda' and 'ivan' have another active game "
        "(P0000016); this server allows one at a time: skipped"
    ) in problems
    assert "solicitudes/ivan:1: 'ivan' challenged 'ana' already (solicitudes/ana:1): skipped" in (
        problems
    )
    assert section(r.out, "games finished on import:") == [
        "P0000005: active, but checkmate: finished on import, 0-1"
    ]
    assert (
        counts(db)
        == before
        == {
            "users": 10,
            "subscriptions": 2,
            "games": 13,
            "moves": 24 + 24 + 16 + 10 + 4 + 4 + 10 + 7 + 2 + 0 + 4 + 2 + 2,
            "game_requests": 3,
        }
    )
    assert len(audit.entries(db)) == trail  # nothing changed, nothing recorded
    with db.engine.connect() as conn:
        assert conn.scalar(select(User.wins).where(User.name == "fabiola")) == 3  # once


def test_a_moves_file_corrected_after_its_game_was_imported_is_reported(run, store, tmp_path):
    _, db = store
    data = tmp_path / "espol1995"
    shutil.copytree(SAMPLE, data)
    assert_ok(run("import", "espol", str(data)))
    pen = data / "solicitudes" / "P0000006.PEN"
    pen.write_text(pen.read_text().replace("000005:f1h3:0:0523:0", "000005:f1c4:0:0526:0"))
    r = run("import", "espol", str(data))
    assert_ok(r)
    assert (
        "solicitudes/P0000006.PEN: P0000006 was imported before and differs from this file "
        "from ply 5: not imported again"
    ) in section(r.out, "not imported:")
    assert not any(
        line.startswith("P0000006")
        for line in section(
            r.out, "games that do not replay (imported up to their last legal move):"
        )
    )
    with db.engine.connect() as conn:
        assert conn.scalar(select(func.count()).where(Move.game_id == 6)) == 4


PURGED = [1, 2, 3, 5, 7, 8, 15]  # the finished games, and P0000003 resigned here


def test_games_purged_since_they_were_imported_are_not_imported_again(run, store):
    _, db = store
    assert_ok(run("import", "espol", str(SAMPLE)))
    pw = {u.name: u.password for u in SAMPLE_USERS}
    bruno = Accounts(db).login("bruno", pw["bruno"])
    Games(db).resign(bruno.id, 3, "carlos")  # imported active, finished here
    purge = run("games", "purge", "--yes")
    assert_ok(purge)
    assert "7 finished games removed" in purge.out
    # A player of purged games whose account is closed since: the purge stays known.
    assert_ok(run("users", "remove", "fabiola", "--yes"))
    before, trail, users = counts(db), len(audit.entries(db)), run("users", "list").out
    r = run("import", "espol", str(SAMPLE))
    assert_ok(r)
    assert r.out.splitlines()[-3] == (
        "games: 0 imported, 13 already imported, 6 skipped (3 not replaying, 0 finished on import)"
    )
    problems = section(r.out, "not imported:")
    purged = [p for p in problems if "purged" in p]
    assert purged == [
        f"partidas/est_partida:{line}: {pid(g)}: purged since it was imported: not imported again"
        for line, g in ((1, 1), (2, 2), (3, 3), (5, 5), (7, 7), (8, 8), (16, 15))
    ]
    assert len(problems) == 25 + len(PURGED)
    # Nothing of the purged games in the rest of the report: they are not here.
    assert section(r.out, "games finished on import:") == []
    assert not any("P0000015" in line for line in section(r.out, "other changes made on import:"))
    assert counts(db) == before and before["games"] == 13 - len(PURGED)
    assert len(audit.entries(db)) == trail  # nothing written
    assert run("users", "list").out == users  # no win credited again
    with db.engine.connect() as conn:
        assert conn.scalar(select(User.wins).where(User.name == "fabiola")) == 3


def test_a_purge_between_the_read_and_the_write_is_seen_by_the_write(run, store, monkeypatch):
    _, db = store
    assert_ok(run("import", "espol", str(SAMPLE)))
    assert_ok(run("games", "purge", "--yes"))
    real = imported.games_purged
    calls = [0]

    def late(tx, game_ids):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return {} if calls[0] == 1 else real(tx, game_ids)  # the read sees no purge yet

    monkeypatch.setattr(imported, "games_purged", late)
    before = counts(db)
    r = run("import", "espol", str(SAMPLE))
    assert_ok(r)
    assert r.out.splitlines()[-3].startswith("games: 0 imported, 13 already imported")
    assert (
        "partidas/est_partida:5: P0000005: purged since it was imported: not imported again"
    ) in section(r.out, "not imported:")
    assert counts(db) == before


def test_a_game_this_server_numbered_and_purged_is_not_a_1995_one(run, store):
    _, db = store
    accounts, games = Accounts(db), Games(db)
    for name in ("zed", "yan"):
        accounts.add_user(name, PASSWORD, "")
    zed, yan = accounts.login("zed", PASSWORD), accounts.login("yan", PASSWORD)
    games.challenge(zed.id, "yan")
    assert games.accept(yan.id, "B", "zed") == 1
    games.resign(yan.id, 1, "zed")
    assert_ok(run("games", "purge", "--yes"))  # yan and zed are told P0000001 went away
    r = run("import", "espol", str(SAMPLE))
    assert_ok(r)
    assert r.out.splitlines()[-5:] == SUMMARY
    assert not any("purged" in line for line in r.out.splitlines())
    games_ = {line.split()[0]: line.split() for line in run("games", "list").out.splitlines()[1:]}
    assert games_["P0000001"][1:3] == ["ana", "bruno"]


def ledger(db: Database) -> list[tuple[str, str, str]]:
    with db.engine.connect() as conn:
        rows = conn.execute(select(ImportedRow.kind, ImportedRow.subject, ImportedRow.challenged))
        return sorted(tuple(r) for r in rows)


def test_every_row_imported_is_recorded_in_its_transaction(run, store):
    _, db = store
    assert_ok(run("import", "espol", str(SAMPLE)))
    assert ledger(db) == sorted(
        [("user", u.name, "") for u in SAMPLE_USERS]
        + [("request", name, "") for name in SAMPLE_REQUESTS]
        + [("game", pid(g), "") for g in IMPORTED_GAMES]
        + [("challenge", "diana", "ernesto"), ("challenge", "hilda", "carlos")]
        + [("challenge", "ivan", "ana")]
    )


def test_what_players_did_since_the_import_does_not_bring_rows_back(run, store):
    _, db = store
    first = run("import", "espol", str(SAMPLE))
    assert_ok(first)
    recorded = ledger(db)
    pw = {u.name: u.password for u in SAMPLE_USERS}
    accounts = Accounts(db)
    Games(db).decline(accounts.login("ana", pw["ana"]).id, "ivan")  # ivan's 1995 challenge
    # diana's 1995 challenge to ernesto closes with his account; his two games are lost.
    assert_ok(run("users", "remove", "ernesto", "--yes"))
    accounts.set_password("bruno", "bruno's new password")
    assert_ok(run("subs", "approve", "olga"))
    assert_ok(run("subs", "reject", "pedro"))
    assert_ok(run("games", "purge", "--yes"))
    assert_ok(run("db", "check"))  # the record names purged games and closed accounts
    before, trail, users = counts(db), len(audit.entries(db)), run("users", "list").out
    r = run("import", "espol", str(SAMPLE))
    assert_ok(r)
    assert r.out.splitlines()[-5:] == [
        "users: 0 imported, 10 already imported, 7 skipped",
        "subscription requests: 0 imported, 2 already imported, 4 skipped",
        "games: 0 imported, 13 already imported, 6 skipped (1 not replaying, 0 finished on import)",
        "challenges: 0 imported, 3 already imported, 7 skipped",
        "next game number: P0000021",
    ]
    problems = section(r.out, "not imported:")
    assert sorted(set(problems) - set(section(first.out, "not imported:"))) == sorted(
        [
            "autorizados/subscripcion:1: request for 'olga': approved since it was imported: "
            "not imported again",
            "autorizados/subscripcion:2: request for 'pedro': rejected since it was imported: "
            "not imported again",
            *(
                f"partidas/est_partida:{line}: {pid(g)}: purged since it was imported: "
                "not imported again"
                for line, g in (
                    (1, 1),
                    (2, 2),
                    (5, 5),
                    (7, 7),
                    (8, 8),
                    (14, 13),
                    (16, 15),
                    (19, 18),
                )
            ),
            "solicitudes/ana:1: challenge of 'ivan' to 'ana': closed since it was imported "
            "(answered, withdrawn, or a player left): not imported again",
            "solicitudes/ernesto:2: challenge of 'diana' to 'ernesto': closed since it was "
            "imported (answered, withdrawn, or a player left): not imported again",
        ]
    )
    assert counts(db) == before and before["game_requests"] == 1
    assert len(audit.entries(db)) == trail  # nothing written
    assert run("users", "list").out == users
    assert ledger(db) == recorded
    assert run("subs", "list").out == "no pending subscriptions\n"


def test_an_import_made_before_rows_were_recorded_reruns_by_what_is_there(run, store):
    """A database imported into before migration 0009 has no record of what was
    imported: equal rows, and the purges of games, tell a rerun what is there already;
    a challenge to or from a closed account is not imported."""
    _, db = store
    first = run("import", "espol", str(SAMPLE))
    assert_ok(first)
    with db.engine.begin() as conn:
        conn.execute(delete(ImportedRow))
    trail = len(audit.entries(db))
    r = run("import", "espol", str(SAMPLE))
    assert_ok(r)
    assert r.out.splitlines() == first.out.splitlines()[:-5] + RERUN_SUMMARY
    assert len(audit.entries(db)) == trail and ledger(db) == []

    assert_ok(run("users", "remove", "ernesto", "--yes"))
    assert_ok(run("games", "purge", "--yes"))
    before, trail = counts(db), len(audit.entries(db))
    r = run("import", "espol", str(SAMPLE))
    assert_ok(r)
    lines = r.out.splitlines()
    assert lines[-3].startswith("games: 0 imported, 13 already imported, 6 skipped")
    assert lines[-2] == "challenges: 0 imported, 2 already imported, 8 skipped"
    problems = section(r.out, "not imported:")
    assert (
        "solicitudes/ernesto:2: the account of 'ernesto' is closed: challenge skipped" in problems
    )
    assert (
        "partidas/est_partida:19: P0000018: purged since it was imported: not imported again"
    ) in problems
    assert counts(db) == before
    assert len(audit.entries(db)) == trail and ledger(db) == []


def test_a_dry_run_writes_nothing(run, store):
    _, db = store
    before = counts(db)
    r = run("import", "espol", str(SAMPLE), "--dry-run")
    assert_ok(r)
    assert r.out.splitlines()[1] == (
        "dry run: nothing is written; the counts are what an import would do"
    )
    assert r.out.splitlines()[-5:] == [
        line.replace(" imported,", " to import,", 1) for line in SUMMARY
    ]
    assert counts(db) == before
    assert audit.entries(db) == []
    assert_ok(run("import", "espol", str(SAMPLE)))  # and the import does what it said
    assert counts(db)["games"] == 13


# -- on a server ---------------------------------------------------------------------------


@pytest.fixture
def imported_server(run, store) -> Iterator[tuple[ServerProcess, Result]]:
    url, _ = store
    r = run("import", "espol", str(SAMPLE))
    assert_ok(r)
    srv = start_server(url)
    yield srv, r
    srv.stop()


def login(srv: ServerProcess, name: str, password: str, opened: list[Conn]) -> Conn:
    conn = srv.connect()
    opened.append(conn)
    assert conn.cmd(f"USER:{name}").code == 101
    r = conn.cmd(f"PASS:{password}")
    assert r.kind == "S", r
    return conn


def test_imported_users_play_on(imported_server):
    srv, _ = imported_server
    pw = {u.name: u.password for u in SAMPLE_USERS}
    opened: list[Conn] = []
    try:
        ana, bruno, carlos, ivan = (
            login(srv, n, pw[n], opened) for n in ("ana", "bruno", "carlos", "ivan")
        )
        # An active game goes on where the old server left it: castled, a pawn on e5.
        r = bruno.cmd("STAT:P0000003")
        assert r.text.split(":")[4:] == ["0", "0", "0", "0", "B", "17"], r
        assert bruno.cmd("JGDA:P0000003:17:d2d4:0:1127:0").code == 208
        assert carlos.cmd("JGDA:P0000003:18:e5d4:1:3627:0").code == 208
        # The draw diana offered in 1995 waits for ana's answer.
        r = ana.cmd("STAT:P0000004")
        assert r.text.split(":")[6:8] == ["1", "0"], r
        assert ana.cmd("RTBL:P0000004:N:diana").code == 210
        # ivan's challenge to ana, accepted: the first game after the old sequence.
        r = ana.cmd("TRAN:0")
        assert "ivan" in r.text.split(","), r
        r = ana.cmd("ACEP:N:ivan")
        assert (r.code, r.text) == (202, "P0000021"), r
        r = ivan.cmd("SRNK")
        assert r.text.startswith("ana:12,gonzalo:9,bruno:7,diana:5,ivan:4"), r
    finally:
        for conn in opened:
            conn.close()
    # Accounts that were not imported do not exist; a wrong password is refused.
    with srv.connect() as c:
        assert c.cmd("USER:Bruno").code == 814
    with srv.connect() as c:
        assert c.cmd("USER:julia").code == 101
        assert c.cmd(f"PASS:{pw['ana']}").kind == "F"


def test_no_password_in_clear_anywhere(imported_server, run, store):
    srv, first = imported_server
    url, db = store
    second = run("import", "espol", str(SAMPLE))
    pw = {u.name: u.password for u in SAMPLE_USERS}
    opened: list[Conn] = []
    try:
        for name in ("julia", "gonzalo"):  # the UTF-8 line and the cleaned comment
            login(srv, name, pw[name], opened)
    finally:
        for conn in opened:
            conn.close()
    approved = run("subs", "approve", "olga")
    assert_ok(approved)
    login(srv, "olga", SAMPLE_REQUESTS["olga"][0], opened)
    opened[-1].close()
    srv.stop()
    texts = {
        "import output": first.out + first.err + second.out + second.err,
        "server log": srv.log_text(),
        "audit trail": " ".join(f"{e.target} {e.detail}" for e in audit.entries(db)),
        "database": _all_cells(db),
    }
    path = sqlite_path(url)
    if path is not None:
        texts["database files"] = "".join(
            Path(path + s).read_bytes().decode("latin-1")
            for s in ("", "-wal")
            if Path(path + s).exists()
        )
    found = [
        f"{p!r} in {where}" for p in SAMPLE_PASSWORDS for where, text in texts.items() if p in text
    ]
    assert not found, found
    # The scans do see what is there.
    assert "Iván Núñez" in texts["database"] and "olga" in texts["server log"]
    with db.engine.connect() as conn:
        hashes = conn.scalars(select(User.password_hash)).all()
    assert len(hashes) == 11 and all(h.startswith("$argon2id$") for h in hashes)


def _all_cells(db: Database) -> str:
    insp = inspect(db.engine)
    out = []
    with db.engine.connect() as conn:
        for name in insp.get_table_names():
            t = table(name, *(column(c["name"]) for c in insp.get_columns(name)))
            out += [" ".join(map(str, row)) for row in conn.execute(select(t))]
    return "\n".join(out)


# -- what is there already -----------------------------------------------------------------


def test_numbers_and_names_taken_are_reported_and_skipped(run, store):
    _, db = store
    accounts, games = Accounts(db), Games(db)
    for name in ("diana", "zed", "yan"):  # a diana who is not the 1995 one
        accounts.add_user(name, PASSWORD, "another diana" if name == "diana" else "")
    zed, yan = accounts.login("zed", PASSWORD), accounts.login("yan", PASSWORD)
    games.challenge(zed.id, "yan")
    assert games.accept(yan.id, "B", "zed") == 1  # the store's game 1 is not 1995's
    r = run("import", "espol", str(SAMPLE))
    assert_ok(r)
    problems = section(r.out, "not imported:")
    assert (
        "autorizados/usuarios:4: user 'diana': the name is taken by an account not imported "
        "from these files: skipped, with their games and challenges"
    ) in problems
    assert (
        "partidas/est_partida:1: P0000001: the number is another game's in the store "
        "(yan - zed): skipped"
    ) in problems
    assert (
        "partidas/est_partida:4: P0000004: 'diana' is not a user imported from usuarios: skipped"
        in problems
    )
    lines = r.out.splitlines()
    assert lines[-5] == "users: 9 imported, 0 already imported, 8 skipped"
    assert lines[-3].startswith("games: 10 imported, 0 already imported, 9 skipped")
    with db.engine.connect() as conn:
        assert conn.scalar(select(User.comment).where(User.name == "diana")) == "another diana"
        assert conn.scalar(select(Game.white_id).where(Game.id == 1)) == yan.id
    # diana's challenge to ernesto was not hers to make.
    assert "challenges: 2 imported" in lines[-2]


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (lambda d: d / "nothing-here", ["no such file or directory"]),
        (lambda d: d, ["is not an ESPOL data directory: it has no server.cfg"]),
        (
            lambda d: _write(d, "server.cfg", "autorizados:.\nsolicitudes:.\n"),
            ["is not an ESPOL server.cfg", "no est_partida directory"],
        ),
        (
            lambda d: _write(d, "server.cfg", "autorizados:a\nest_partida:.\nsolicitudes:.\n"),
            ["is not an ESPOL data directory: no usuarios file in"],
        ),
    ],
)
def test_not_an_espol_data_directory(run, store, tmp_path, setup, words):
    _, db = store
    before = counts(db)
    r = run("import", "espol", str(setup(tmp_path)))
    assert_error(r, 1, *words)
    assert r.out == ""
    assert counts(db) == before


def _write(directory: Path, name: str, text: str) -> Path:
    (directory / name).write_text(text)
    return directory


def test_absolute_directories_of_the_old_machine_are_found_here(run, tmp_path):
    (tmp_path / "datos").mkdir()
    (tmp_path / "datos" / "usuarios").write_bytes(
        (SAMPLE / "autorizados" / "usuarios").read_bytes()
    )
    _write(
        tmp_path,
        "Server.cfg",
        "autorizados:/usr/local/ajedrez/datos\nest_partida:/usr/local/ajedrez/partidas\n"
        "solicitudes:/usr/local/ajedrez/solicitudes\n",
    )
    r = run("import", "espol", str(tmp_path))
    assert_ok(r)
    assert "users: 10 imported" in r.out
    assert "est_partida: not found: no games imported" in r.out
    assert "server.eje: not found: new games continue after the highest game" in r.out


# -- a large data set ----------------------------------------------------------------------


def test_a_large_import_shows_progress_and_completes_after_a_failure(
    run, store, tmp_path, monkeypatch
):
    _, db = store
    accounts = write_large(tmp_path, users=30, games=700, seed=7)
    real = imported.add_games
    calls = [0]

    def failing(tx, games):  # type: ignore[no-untyped-def]
        real(tx, games)
        calls[0] += 1
        if calls[0] == 2:  # the second batch of games, written, then the machine fails
            raise RuntimeError("the machine went down")

    monkeypatch.setattr(imported, "add_games", failing)
    r = run("import", "espol", str(tmp_path))
    assert r.status == 3, r  # an unexpected failure: the database's status
    assert "import espol: games 200/700" in r.err
    assert counts(db)["games"] == 200  # the first batch, whole; nothing of the second
    assert len([k for k in ledger(db) if k[0] == "game"]) == 200  # recorded with its rows
    with db.engine.connect() as conn:
        assert conn.scalar(select(func.max(Move.game_id))) <= 200

    monkeypatch.setattr(imported, "add_games", real)
    r = run("import", "espol", str(tmp_path))
    assert r.status == 0, r
    assert r.err.splitlines() == [
        "import espol: games 200/700",
        "import espol: games 400/700",
        "import espol: games 600/700",
        "import espol: games 700/700",
    ]
    lines = r.out.splitlines()
    assert lines[-5] == "users: 0 imported, 30 already imported, 0 skipped"
    assert lines[-3].startswith("games: 500 imported, 200 already imported, 0 skipped")
    assert lines[-1] == "next game number: P0000706"  # server.eje's 705, then one more
    assert counts(db)["games"] == 700
    check = run("db", "check")
    assert check.status == 0 and check.out.endswith("ok\n"), check
    r = run("import", "espol", str(tmp_path))
    assert r.out.splitlines()[-3].startswith("games: 0 imported, 700 already imported")
    name, password = accounts[3]
    assert Accounts(db).login(name, password).name == name


# -- the documented example ---------------------------------------------------------------------

EXAMPLE = SAMPLE.parent / "espol1995-example"


def test_the_documented_example_is_each_file_the_docs_show(run, store):
    """docs/operations.md, "The 1995 files, field by field", shows every file of the
    example directory as it is; the directory imports whole, nothing reported, and its
    players play on from where the files left them."""
    docs = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    files = sorted(p for p in EXAMPLE.rglob("*") if p.is_file())
    assert len(files) == 9, files
    for path in files:
        assert f"```\n{path.read_text(encoding='utf-8')}```\n" in docs, path

    url, _ = store
    r = run("import", "espol", str(EXAMPLE))
    assert_ok(r)
    assert r.out.splitlines() == [
        f"ESPOL data: {EXAMPLE / 'server.cfg'}",
        "users: 3 imported, 0 already imported, 0 skipped",
        "subscription requests: 1 imported, 0 already imported, 0 skipped",
        "games: 3 imported, 0 already imported, 0 skipped (0 not replaying, 0 finished on import)",
        "challenges: 1 imported, 0 already imported, 0 skipped",
        "next game number: P0000004",
    ]
    assert listed(run("subs", "list"), "olga") is not None
    games = run("games", "list")
    assert listed(games, "P0000001")[1:6] == ["ana", "bruno", "finished", "1-0", "6"]
    assert listed(games, "P0000002")[1:6] == ["bruno", "carlos", "active", "*", "3"]
    srv = start_server(url)
    opened: list[Conn] = []
    try:
        ana = login(srv, "ana", "Reina-de-Ana.1995", opened)
        carlos = login(srv, "carlos", "Carlos/enroque/77", opened)
        # carlos (black in P0000002) moves on after 1. d4 d5 2. c4.
        assert carlos.cmd("JGDA:P0000002:4:e7e6:1:5244:0").code == 208
        # carlos's draw offer of 1995 in P0000003 waits for ana's answer.
        assert ana.cmd("STAT:P0000003").text.split(":")[6:8] == ["1", "0"]
        assert ana.cmd("RTBL:P0000003:N:carlos").code == 210
        # bruno's challenge to ana is open.
        assert "bruno" in ana.cmd("TRAN:0").text.split(",")
    finally:
        for conn in opened:
            conn.close()
        srv.stop()


# -- files that are not the old server's ---------------------------------------------------


def _example(tmp_path: Path) -> Path:
    """A copy of the example data directory, server.cfg naming its directories relatively."""
    d = tmp_path.resolve() / "datos"
    shutil.copytree(EXAMPLE, d)
    _write(
        d, "server.cfg", "autorizados:autorizados\nest_partida:partidas\nsolicitudes:solicitudes\n"
    )
    return d


def _outside(tmp_path: Path) -> Path:
    """A directory beside the data directory, with files an import would take."""
    out = tmp_path.resolve() / "elsewhere"
    shutil.copytree(EXAMPLE / "solicitudes", out)
    shutil.copy(EXAMPLE / "autorizados" / "usuarios", out)
    return out


@pytest.mark.parametrize(
    ("line", "link"),
    [
        ("solicitudes:/etc", None),  # /etc exists here: refused, not read
        ("solicitudes:../elsewhere", None),
        ("solicitudes:peticiones", "peticiones"),  # a link to a directory outside
        ("autorizados:/usr/local/ajedrez/cuentas", "cuentas"),  # moved, and a link
    ],
)
def test_a_directory_outside_the_data_directory_is_refused(run, store, tmp_path, line, link):
    _, db = store
    d = _example(tmp_path)
    out = _outside(tmp_path)
    if link is not None:
        (d / link).symlink_to(out, target_is_directory=True)
    key = line.partition(":")[0]
    cfg = (d / "server.cfg").read_text().splitlines()
    _write(d, "server.cfg", "".join((line if c.startswith(key) else c) + "\n" for c in cfg))
    before = counts(db)
    r = run("import", "espol", str(d))
    real = "/etc" if line.endswith("/etc") else str(out)
    assert_error(
        r, 1, f"server.cfg: {line} is {real}, outside the data directory {d}", "copy the old"
    )
    assert r.out == ""
    assert counts(db) == before


def test_a_file_linked_from_outside_the_data_directory_is_not_read(run, store, tmp_path):
    d = _example(tmp_path)
    out = _outside(tmp_path)
    # A challenge file and a moves file that are links to files outside.
    (d / "solicitudes" / "ana").unlink()
    (d / "solicitudes" / "ana").symlink_to(out / "ana")
    (d / "solicitudes" / "P0000002.PEN").unlink()
    (d / "solicitudes" / "P0000002.PEN").symlink_to(out / "P0000002.PEN")
    r = run("import", "espol", str(d))
    assert_ok(r)
    assert section(r.out, "not imported:") == [
        f"partidas/est_partida:2: P0000002: solicitudes/P0000002.PEN: a link to "
        f"{out / 'P0000002.PEN'}, outside the data directory {d}: not read: skipped",
        f"solicitudes/ana: a link to {out / 'ana'}, outside the data directory {d}: not read",
    ]
    assert "games: 2 imported" in r.out and "challenges: 0 imported" in r.out
    # usuarios itself a link: nothing is imported.
    (d / "autorizados" / "usuarios").unlink()
    (d / "autorizados" / "usuarios").symlink_to(out / "usuarios")
    r = run("import", "espol", str(d))
    assert_error(r, 1, f"autorizados/usuarios: a link to {out / 'usuarios'}, outside the data")


def _bytes_read() -> int:
    """What this process has read from files so far (Linux)."""
    io_text = Path("/proc/self/io").read_text()
    return int(next(x for x in io_text.splitlines() if x.startswith("rchar:")).split()[1])


HUGE = 256 * 1024 * 1024


@pytest.mark.parametrize("where", ["autorizados/usuarios", "solicitudes/ana"])
def test_a_huge_line_is_refused_without_reading_it_whole(run, store, tmp_path, where):
    """A file holding one line of 256 MB (a hole: no disk is used) is refused at its line
    having read a bounded part of it; the import goes on when the file is a challenge's."""
    _, db = store
    d = _example(tmp_path)
    with open(d / where, "ab") as f:
        f.truncate(f.tell() + HUGE)  # the last line: 256 MB of NUL bytes, no end
    lines = len((EXAMPLE / where).read_bytes().splitlines()) + 1
    before = counts(db)
    start = _bytes_read()
    r = run("import", "espol", str(d))
    read = _bytes_read() - start
    assert read < 16 * 1024 * 1024, read  # the line's first 64 KiB, the rest of the files
    refused = f"{where}:{lines}: a line longer than 65536 bytes (no 1995 ESPOL file has one)"
    if where == "autorizados/usuarios":
        assert_error(r, 1, f"{d}/{refused}: the file is not read")
        assert counts(db) == before
    else:
        assert_ok(r)
        assert f"  {refused}: the file is not read" in r.out.splitlines()
        assert "users: 3 imported" in r.out and "challenges: 0 imported" in r.out
