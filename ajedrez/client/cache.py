"""The local cache: one SQLite file per (server, user), the seed's USUARIOS.DAT, usuario.prt,
P#######.PEN and usuario.trn in one place.

It holds the players (JAUT), the open challenges received and sent with their time
controls (SOLI), the user's games (PPEN + STAT) with their moves (SPAR), including those
the server purged (BAJA), each game's clock (RELJ) with the offset from the local clock
to the server's, the ranking (SRNK), the fecha the server last answered for each of TRAN,
JAUT, PPEN and BAJA, and when the last sync happened; per game also its start and end
days and end reason as the server's PGN (PGNX) gave them; and the cursor of the event
stream (EVEN) that ``ajedrez watch`` resumes from. It never holds a password.

A file written by an older client is brought up to date when it is opened, its data kept:
new tables are created, new columns added empty (unknown), and the next sync fills them.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from ajedrez.client.clocks import StoredClock
from ajedrez.domain.export import GameFacts
from ajedrez.espol.records import (
    ClockStatus,
    GameStatus,
    MoveRecord,
    OpenChallenge,
    RankEntry,
    color_of_ply,
)

SCHEMA_VERSION = 5
FECHA_KINDS = ("TRAN", "JAUT", "PPEN", "BAJA")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS fechas (kind TEXT PRIMARY KEY, fecha INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS players (name TEXT PRIMARY KEY, seen_at INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS challenges (
    name TEXT NOT NULL,
    direction TEXT NOT NULL CHECK (direction IN ('in', 'out')),
    seen_at INTEGER NOT NULL,
    control TEXT,
    PRIMARY KEY (name, direction)
);
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    white TEXT NOT NULL,
    black TEXT NOT NULL,
    color TEXT NOT NULL,
    status INTEGER NOT NULL,
    ganador INTEGER NOT NULL,
    solicitud_blancas INTEGER NOT NULL,
    solicitud_negras INTEGER NOT NULL,
    next_ply INTEGER NOT NULL,
    changed INTEGER NOT NULL,
    synced_at INTEGER NOT NULL,
    removed_at INTEGER,
    takeback TEXT,
    takeback_declined INTEGER
);
CREATE TABLE IF NOT EXISTS moves (
    game TEXT NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    ply INTEGER NOT NULL,
    jugada TEXT NOT NULL,
    reverso INTEGER NOT NULL,
    posicion TEXT NOT NULL,
    promocion INTEGER NOT NULL,
    san TEXT NOT NULL,
    at INTEGER,
    clock_ms INTEGER,
    PRIMARY KEY (game, ply)
);
CREATE TABLE IF NOT EXISTS ranking (
    pos INTEGER PRIMARY KEY, name TEXT NOT NULL, wins INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS game_facts (
    game TEXT PRIMARY KEY REFERENCES games(id) ON DELETE CASCADE,
    started INTEGER,
    ended INTEGER,
    end_reason TEXT
);
CREATE TABLE IF NOT EXISTS clocks (
    game TEXT PRIMARY KEY REFERENCES games(id) ON DELETE CASCADE,
    now_ms INTEGER NOT NULL,
    control TEXT NOT NULL,
    white_ms INTEGER NOT NULL,
    black_ms INTEGER NOT NULL,
    waiting TEXT NOT NULL,
    deadline_ms INTEGER NOT NULL,
    white_leave_until_ms INTEGER NOT NULL,
    black_leave_until_ms INTEGER NOT NULL,
    end_reason TEXT NOT NULL,
    offset_ms INTEGER NOT NULL,
    grace_until_ms INTEGER
);
CREATE TABLE IF NOT EXISTS event_cursor (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    cursor INTEGER NOT NULL,
    stored_at INTEGER NOT NULL
);
"""

# The columns added to a table after its first version, with the schema version that
# added each: CREATE TABLE IF NOT EXISTS leaves an older file's table as it was.
_ADDED_COLUMNS = (
    (2, "games", "removed_at", "INTEGER"),
    (3, "challenges", "control", "TEXT"),  # NULL: not known (never synced with SOLI:1)
    (3, "moves", "clock_ms", "INTEGER"),  # NULL: not known (no clock, or not yet read)
    (5, "games", "takeback", "TEXT"),  # the colour asking a takeback; NULL: nobody
    (5, "games", "takeback_declined", "INTEGER"),  # the ply whose takeback was declined
    (5, "clocks", "grace_until_ms", "INTEGER"),  # RELJ:1's start-up grace; NULL: not known
)


@dataclass(frozen=True)
class CachedGame:
    id: str
    white: str
    black: str
    color: str
    status: int
    ganador: int
    solicitud_blancas: int
    solicitud_negras: int
    next_ply: int
    changed: int
    synced_at: int
    # When this client learnt that the server no longer has the game (purged by the
    # administrator); the game stays here, in the player's own archive.
    removed_at: int | None = None
    takeback: str | None = None  # the colour asking a takeback now (STAT:<partida>:1)
    # The ply of this player's move whose takeback the opponent declined, as a sync saw
    # it: worth saying while that move is the game's last.
    takeback_declined: int | None = None

    @property
    def declined_takeback(self) -> bool:
        return self.takeback_declined is not None and self.takeback_declined == self.next_ply - 1

    @property
    def removed(self) -> bool:
        return self.removed_at is not None

    @property
    def status_record(self) -> GameStatus:
        return GameStatus(
            self.id,
            self.white,
            self.black,
            self.changed,
            self.status,
            self.ganador,
            self.solicitud_blancas,
            self.solicitud_negras,
            self.color,
            self.next_ply,
            self.takeback,
        )

    @property
    def opponent(self) -> str:
        return self.status_record.opponent

    @property
    def me(self) -> str:
        return self.status_record.me


@dataclass(frozen=True)
class CachedMove:
    ply: int
    jugada: str
    reverso: int
    posicion: str
    promocion: int
    san: str
    at: int | None
    # The mover's bank after the move, as the server's PGN gave it ([%clk]).
    clock_ms: int | None = None

    @property
    def color(self) -> str:
        return color_of_ply(self.ply)


def cache_path(data_dir: Path, host: str, port: int, user: str) -> Path:
    """``DATA_DIR/<host>_<port>/<user>.sqlite3``: one cache per server and user."""
    safe_host = "".join(c if c.isalnum() or c in ".-" else "_" for c in host)
    return data_dir / f"{safe_host}_{port}" / f"{user}.sqlite3"


class Cache:
    def __init__(self, path: Path) -> None:
        self.path = path
        # The player's games, chat and opponents are theirs alone: the directory and the
        # file are made for the owner only, before SQLite opens the file (its -wal and
        # -shm take the file's mode).
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA foreign_keys = ON")
        self.db.execute("PRAGMA journal_mode = WAL")
        with self.transaction():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self.db.execute(statement)
            for _version, table, column, kind in _ADDED_COLUMNS:
                columns = {r["name"] for r in self.db.execute(f"PRAGMA table_info({table})")}
                if column not in columns:
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            written = self.get_meta("schema")
            # A file a newer client wrote keeps its number: that client may rely on more.
            if written is None or int(written) < SCHEMA_VERSION:
                self.set_meta("schema", str(SCHEMA_VERSION))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # -- meta and fechas -----------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, value),
        )

    def fecha(self, kind: str) -> int:
        assert kind in FECHA_KINDS
        row = self.db.execute("SELECT fecha FROM fechas WHERE kind=?", (kind,)).fetchone()
        return 0 if row is None else int(row["fecha"])

    def set_fecha(self, kind: str, fecha: int) -> None:
        assert kind in FECHA_KINDS
        self.db.execute(
            "INSERT INTO fechas VALUES (?, ?) ON CONFLICT(kind) DO UPDATE SET fecha=excluded.fecha",
            (kind, fecha),
        )

    def fechas(self) -> dict[str, int]:
        return {kind: self.fecha(kind) for kind in FECHA_KINDS}

    @property
    def last_sync(self) -> int | None:
        value = self.get_meta("last_sync")
        return None if value is None else int(value)

    def mark_synced(self, when: int | None = None) -> None:
        self.set_meta("last_sync", str(int(time.time()) if when is None else when))

    def reset(self) -> None:
        """Forget the fechas and the lists a full sync rebuilds. Games and their moves
        stay: the server reports every game it still has, and the full sync marks the
        others removed instead of losing a player's finished games."""
        with self.transaction() as db:
            for table in ("fechas", "players", "ranking"):
                db.execute(f"DELETE FROM {table}")
            db.execute("DELETE FROM challenges WHERE direction='in'")
            db.execute("DELETE FROM meta WHERE key='last_sync'")

    # -- players -------------------------------------------------------------------

    def add_players(self, names: list[str], replace: bool = False) -> int:
        """Store players; returns how many were new. ``replace`` drops the others."""
        now = int(time.time())
        before = set(self.players())
        if replace:
            self.db.execute("DELETE FROM players")
        self.db.executemany(
            "INSERT INTO players VALUES (?, ?) ON CONFLICT(name) DO NOTHING",
            [(n, now) for n in names],
        )
        return len(set(names) - before)

    def players(self) -> list[str]:
        return [r["name"] for r in self.db.execute("SELECT name FROM players ORDER BY name")]

    # -- challenges ----------------------------------------------------------------

    def add_challenges(
        self,
        names: list[str],
        direction: str,
        replace: bool = False,
        control: str | None = None,
    ) -> list[str]:
        """Store challenges (with their time control, None when not known); returns the
        names that were new."""
        now = int(time.time())
        before = {n for n, d in self.challenges() if d == direction}
        if replace:
            self.db.execute("DELETE FROM challenges WHERE direction=?", (direction,))
        self.db.executemany(
            "INSERT INTO challenges (name, direction, seen_at, control) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(name, direction) DO UPDATE SET control=excluded.control",
            [(n, direction, now, control) for n in names],
        )
        return [n for n in dict.fromkeys(names) if n not in before]

    def remove_challenges(self, name: str, direction: str | None = None) -> None:
        if direction is None:
            self.db.execute("DELETE FROM challenges WHERE name=?", (name,))
        else:
            self.db.execute(
                "DELETE FROM challenges WHERE name=? AND direction=?", (name, direction)
            )

    def replace_challenges(self, challenges: list[OpenChallenge]) -> None:
        """The server's whole list of open challenges (SOLI) replaces the local one, each
        with the time control it carries (None without SOLI:1); names already held keep
        the time they were first seen."""
        now = int(time.time())
        wanted = {(c.user, "in" if c.received else "out"): c.control for c in challenges}
        for name, direction in set(self.challenges()) - set(wanted):
            self.remove_challenges(name, direction)
        self.db.executemany(
            "INSERT INTO challenges (name, direction, seen_at, control) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(name, direction) DO UPDATE SET control=excluded.control",
            [(n, d, now, control) for (n, d), control in sorted(wanted.items())],
        )

    def challenges(self) -> list[tuple[str, str]]:
        """(name, 'in' | 'out'), oldest first."""
        rows = self.db.execute("SELECT name, direction FROM challenges ORDER BY seen_at, name")
        return [(r["name"], r["direction"]) for r in rows]

    def challenge_names(self, direction: str) -> list[str]:
        """The users of the challenges received ('in') or sent ('out'), oldest first."""
        return [name for name, way in self.challenges() if way == direction]

    def challenge_controls(self, direction: str) -> dict[str, str | None]:
        """user -> time control of the challenges received ('in') or sent ('out'), oldest
        first; None where the control is not known."""
        rows = self.db.execute(
            "SELECT name, control FROM challenges WHERE direction=? ORDER BY seen_at, name",
            (direction,),
        )
        return {r["name"]: r["control"] for r in rows}

    # -- games and moves -----------------------------------------------------------

    def store_status(self, st: GameStatus) -> None:
        now = int(time.time())
        self.db.execute(
            """INSERT INTO games (id, white, black, color, status, ganador, solicitud_blancas,
               solicitud_negras, next_ply, changed, synced_at, takeback)
               VALUES (?,?,?,?,?,?,?,?,?,?,?,?)
               ON CONFLICT(id) DO UPDATE SET white=excluded.white, black=excluded.black,
               color=excluded.color, status=excluded.status, ganador=excluded.ganador,
               solicitud_blancas=excluded.solicitud_blancas,
               solicitud_negras=excluded.solicitud_negras, next_ply=excluded.next_ply,
               changed=excluded.changed, synced_at=excluded.synced_at, removed_at=NULL,
               takeback=excluded.takeback""",
            (
                st.game,
                st.white,
                st.black,
                st.color,
                st.status,
                st.ganador,
                st.solicitud_blancas,
                st.solicitud_negras,
                st.next_ply,
                st.fecha,
                now,
                st.takeback,
            ),
        )

    def note_takeback_declined(self, gid: str, ply: int) -> None:
        self.db.execute("UPDATE games SET takeback_declined=? WHERE id=?", (ply, gid))

    def mark_removed(self, gid: str, when: int | None = None) -> bool:
        """Note that the server no longer has ``gid``; True if that is news."""
        done = self.db.execute(
            "UPDATE games SET removed_at=? WHERE id=? AND removed_at IS NULL",
            (int(time.time()) if when is None else when, gid),
        )
        return done.rowcount > 0

    def game(self, gid: str) -> CachedGame | None:
        row = self.db.execute("SELECT * FROM games WHERE id=?", (gid,)).fetchone()
        return None if row is None else CachedGame(**dict(row))

    def games(self) -> list[CachedGame]:
        return [CachedGame(**dict(r)) for r in self.db.execute("SELECT * FROM games ORDER BY id")]

    def moves(self, gid: str) -> list[CachedMove]:
        rows = self.db.execute(
            "SELECT ply, jugada, reverso, posicion, promocion, san, at, clock_ms FROM moves "
            "WHERE game=? ORDER BY ply",
            (gid,),
        )
        return [CachedMove(**dict(r)) for r in rows]

    def add_moves(self, gid: str, moves: list[tuple[MoveRecord, str, int | None]]) -> None:
        """Append (record, SAN, time) triples; plies already stored are left alone."""
        self.db.executemany(
            "INSERT INTO moves (game, ply, jugada, reverso, posicion, promocion, san, at) "
            "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(game, ply) DO NOTHING",
            [
                (gid, m.ply, m.jugada, m.reverso, m.posicion, m.promocion, san, at)
                for m, san, at in moves
            ],
        )

    def store_move_clocks(self, gid: str, clocks: dict[int, int]) -> None:
        """Each move's bank after it (ply -> ms), for the moves held."""
        self.db.executemany(
            "UPDATE moves SET clock_ms=? WHERE game=? AND ply=?",
            [(ms, gid, ply) for ply, ms in clocks.items()],
        )

    def drop_moves(self, gid: str) -> None:
        self.db.execute("DELETE FROM moves WHERE game=?", (gid,))

    def store_facts(self, gid: str, facts: GameFacts) -> None:
        """The game's start and end days and end reason, as the server's PGN gave them."""
        self.db.execute(
            "INSERT INTO game_facts VALUES (?, ?, ?, ?) ON CONFLICT(game) DO UPDATE SET "
            "started=excluded.started, ended=excluded.ended, end_reason=excluded.end_reason",
            (gid, facts.started, facts.ended, facts.end_reason),
        )

    def facts(self, gid: str) -> GameFacts | None:
        row = self.db.execute(
            "SELECT started, ended, end_reason FROM game_facts WHERE game=?", (gid,)
        ).fetchone()
        return None if row is None else GameFacts(**dict(row))

    # -- clocks --------------------------------------------------------------------

    def store_clock(self, status: ClockStatus, offset_ms: int) -> None:
        """A RELJ record, with the server's ``ahora`` minus the local clock when asked."""
        self.db.execute(
            "INSERT OR REPLACE INTO clocks (game, now_ms, control, white_ms, black_ms, "
            "waiting, deadline_ms, white_leave_until_ms, black_leave_until_ms, end_reason, "
            "offset_ms, grace_until_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                status.game,
                status.now_ms,
                status.control,
                status.white_ms,
                status.black_ms,
                status.waiting,
                status.deadline_ms,
                status.white_leave_until_ms,
                status.black_leave_until_ms,
                status.end_reason,
                offset_ms,
                status.grace_until_ms,
            ),
        )

    def clock(self, gid: str) -> StoredClock | None:
        row = self.db.execute("SELECT * FROM clocks WHERE game=?", (gid,)).fetchone()
        return None if row is None else _stored_clock(row)

    def clocks(self) -> dict[str, StoredClock]:
        return {r["game"]: _stored_clock(r) for r in self.db.execute("SELECT * FROM clocks")}

    def end_reason(self, gid: str) -> str | None:
        """How the game ended as RELJ said it; None while unknown or still going on."""
        row = self.db.execute("SELECT end_reason FROM clocks WHERE game=?", (gid,)).fetchone()
        return str(row["end_reason"]) if row is not None and row["end_reason"] else None

    # -- the event stream ------------------------------------------------------------

    def event_cursor(self) -> int | None:
        """The cursor of the last event handled (EVEN); None before the first stream."""
        row = self.db.execute("SELECT cursor FROM event_cursor WHERE id=1").fetchone()
        return None if row is None else int(row["cursor"])

    def set_event_cursor(self, cursor: int) -> None:
        self.db.execute(
            "INSERT INTO event_cursor VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE SET "
            "cursor=excluded.cursor, stored_at=excluded.stored_at",
            (cursor, int(time.time())),
        )

    # -- ranking -------------------------------------------------------------------

    def store_ranking(self, entries: list[RankEntry]) -> None:
        self.db.execute("DELETE FROM ranking")
        self.db.executemany(
            "INSERT INTO ranking VALUES (?, ?, ?)",
            [(i, e.user, e.wins) for i, e in enumerate(entries, 1)],
        )
        self.set_meta("ranking_at", str(int(time.time())))

    def ranking(self) -> list[RankEntry]:
        rows = self.db.execute("SELECT name, wins FROM ranking ORDER BY pos")
        return [RankEntry(r["name"], r["wins"]) for r in rows]


def _stored_clock(row: sqlite3.Row) -> StoredClock:
    status = ClockStatus(
        row["game"],
        row["now_ms"],
        row["control"],
        row["white_ms"],
        row["black_ms"],
        row["waiting"],
        row["deadline_ms"],
        row["white_leave_until_ms"],
        row["black_leave_until_ms"],
        row["end_reason"],
        row["grace_until_ms"] or 0,
    )
    return StoredClock(status, row["offset_ms"])
