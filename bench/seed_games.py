"""Bulk-seed a database with many games and their moves, for the scale benchmark.

    .venv/bin/python -m bench.seed_games --database-url sqlite:////tmp/big.sqlite3 \\
        --games 1000000 --meta bench/out/big.seed.json

Flow:

1. **Schema**: ``ajedrez.store.migrate.upgrade`` brings the (empty) database to head,
   the only way the schema is ever created. A database that already holds users or games
   is refused.
2. **Templates**: ``--templates`` (2,000) distinct random games played with python-chess
   (random legal moves, lengths uniform in ``--min-plies``..``--max-plies``, 10..70, mean
   40). Per ply: jugada, posicion, promocion and SAN exactly as ``ajedrez.domain.games``
   stores them; per template: the final FEN, ``base_ply``/``base_fen`` (the position after
   the last irreversible move in python-chess's sense, as the server computes them) and
   the outcome when the rules ended the game. Every seeded game is one template's moves,
   so the data is consistent: the server accepts the next legal move of any active game.
3. **Users**: ``--users`` (20,000) bulk users ``u00000``... and ``--probe-users`` (20)
   ``probe_00000``..., all with the password ``bench-password`` (one shared argon2 hash,
   as ``bench/seed.py``). Ids are explicit: bulk users 1..U, probe users after them.
4. **Probe games** (last ids, the same in every database whatever ``--games``): probe
   user *i* plays *i±1 .. i±5* (mod 20), so each has exactly 10 games, 4 of them active
   (offsets 1 and 2), the others finished by resignation or agreement; every probe game
   is 36..44 plies long, created 2-4 days ago and changed within the last day. They come
   from their own random generator, so the 1k and 1M databases hold the same probe data.
5. **Bulk games** (ids 1..N, between bulk users only): ~90% finished (by the rules when
   the template ended so, else resignation or agreement), ~10% active with a pair that
   has no other active game (the partial unique index), created over the last year, one
   move every 1 to 120 minutes, all ended at least a day ago. Winners' ``users.wins`` are
   credited.
6. **Moves**: the templates and a (game, template, first stamp, step) link per game go
   into two temporary tables; each chunk of games is expanded into ``moves`` by one
   ``INSERT ... SELECT`` inside the database (no Python per move). A move's
   ``created_at`` is ``c0 + ply * step``, the game's ``changed_at`` is that of its last
   ply (or later), and every user was admitted before any game.
7. ``ANALYZE`` (PostgreSQL: ``VACUUM (ANALYZE)``, so hint bits and the visibility map
   are set as in a long-lived database), then the sizes.

SQLite goes through the ``sqlite3`` module: ``journal_mode=OFF``, ``synchronous=OFF`` and
a large cache only while seeding (a crash leaves a broken file: seed a fresh one), WAL and
``synchronous=FULL`` restored after. PostgreSQL goes through psycopg 3: ``COPY FROM
STDIN`` for users, games and the staging tables, ``session_replication_role = replica``
(superuser only; skips the per-row foreign-key triggers, the data is consistent by
construction), and the ``users``/``games`` id sequences set past the explicit ids.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import chess
from sqlalchemy import make_url

from ajedrez.domain.passwords import hash_password
from ajedrez.domain.rules import AUTOMATIC_ENDINGS
from ajedrez.protocol.records import (
    REQ_ACCEPT,
    REQ_NONE,
    REQ_OFFER,
    REQ_RESIGN,
    STATUS_ACTIVE,
    STATUS_FINISHED,
    WINNER_BLACK,
    WINNER_DRAW,
    WINNER_NONE,
    WINNER_WHITE,
)
from ajedrez.store.db import Database
from ajedrez.store.migrate import upgrade
from bench.seed import PASSWORD, user_names

DAY = 86_400
YEAR = 365 * DAY
BULK_PREFIX = "u"
PROBE_PREFIX = "probe_"
PROBE_GAMES_PER_USER = 10  # offsets 1..5 either way
PROBE_ACTIVE_OFFSETS = 2  # offsets 1 and 2: 4 active games per probe user
PROBE_MIN_PLIES, PROBE_MAX_PLIES = 36, 44

USER_COLUMNS = (
    "id",
    "name",
    "password_hash",
    "comment",
    "active",
    "admitted_at",
    "changed_at",
    "wins",
)
GAME_COLUMNS = (
    "id",
    "white_id",
    "black_id",
    "user_lo",
    "user_hi",
    "status",
    "winner",
    "req_white",
    "req_black",
    "next_ply",
    "fen",
    "base_ply",
    "base_fen",
    "end_reason",
    "created_at",
    "changed_at",
    "finished_at",
)
# One move of a template: ply, jugada, posicion, promocion, san.
TemplateMove = tuple[int, str, str, int, str]
GameRow = tuple[Any, ...]
Link = tuple[int, int, int, int]  # game id, template id, first stamp c0, step


@dataclass(frozen=True)
class Template:
    moves: list[TemplateMove]
    fen: str
    base_ply: int
    base_fen: str | None
    outcome: chess.Outcome | None

    @property
    def plies(self) -> int:
        return len(self.moves)


def play_template(rng: random.Random, plies: int) -> Template:
    """A random legal game of at most ``plies`` plies, recorded as the server stores it."""
    board = chess.Board()
    moves: list[TemplateMove] = []
    base_ply, base_fen = 0, None
    outcome = None
    for ply in range(1, plies + 1):
        move = rng.choice(list(board.legal_moves))
        san = board.san(move)
        irreversible = board.is_irreversible(move)
        board.push(move)
        jugada = chess.square_name(move.from_square) + chess.square_name(move.to_square)
        posicion = f"{move.from_square:02d}{move.to_square:02d}"
        moves.append((ply, jugada, posicion, move.promotion or 0, san))
        if irreversible:
            base_ply, base_fen = ply, board.fen()
        outcome = board.outcome(claim_draw=False)
        if outcome is not None:
            break
    return Template(moves, board.fen(), base_ply, base_fen, outcome)


def make_templates(
    rng: random.Random, count: int, lo: int, hi: int, *, open_only: bool = False
) -> list[Template]:
    """``count`` distinct templates; ``open_only``: none that the rules ended."""
    out: list[Template] = []
    seen: set[tuple[str, ...]] = set()
    while len(out) < count:
        t = play_template(rng, rng.randint(lo, hi))
        key = tuple(m[1] + str(m[3]) for m in t.moves)
        if key in seen or (open_only and t.outcome is not None):
            continue
        seen.add(key)
        out.append(t)
    return out


# -- games -------------------------------------------------------------------------------


def ending(
    rng: random.Random, t: Template
) -> tuple[int, int, int, str]:  # winner, req_white, req_black, end_reason
    """How a finished game ended: by the rules if its template did, else resignation or
    agreement, with the solicitudes the server leaves behind."""
    if t.outcome is not None:
        w = t.outcome.winner
        winner = WINNER_DRAW if w is None else (WINNER_WHITE if w else WINNER_BLACK)
        return winner, REQ_NONE, REQ_NONE, AUTOMATIC_ENDINGS[t.outcome.termination]
    white_acts = rng.random() < 0.5
    if rng.random() < 0.7:  # the resigner's solicitud is 3, the opponent wins
        if white_acts:
            return WINNER_BLACK, REQ_RESIGN, REQ_NONE, "resignation"
        return WINNER_WHITE, REQ_NONE, REQ_RESIGN, "resignation"
    # agreement: the offerer keeps 1, the answerer 2
    if white_acts:
        return WINNER_DRAW, REQ_OFFER, REQ_ACCEPT, "agreement"
    return WINNER_DRAW, REQ_ACCEPT, REQ_OFFER, "agreement"


def game_row(
    gid: int,
    white: int,
    black: int,
    t: Template,
    active: bool,
    created: int,
    changed: int,
    rng: random.Random,
) -> GameRow:
    lo, hi = sorted((white, black))
    if active:
        status, winner, req_w, req_b, reason, finished = (
            STATUS_ACTIVE,
            WINNER_NONE,
            REQ_NONE,
            REQ_NONE,
            None,
            None,
        )
    else:
        winner, req_w, req_b, reason = ending(rng, t)
        status, finished = STATUS_FINISHED, changed
    return (
        gid,
        white,
        black,
        lo,
        hi,
        status,
        winner,
        req_w,
        req_b,
        t.plies + 1,
        t.fen,
        t.base_ply,
        t.base_fen,
        reason,
        created,
        changed,
        finished,
    )


@dataclass
class Plan:
    """Everything the games depend on, decided before anything is written."""

    now: int
    users: int
    probe_users: int
    games: int
    active_share: float
    templates: list[Template]  # the pool, then one per probe game
    pool: int  # templates[:pool] are the bulk pool
    open_ids: list[int]  # pool templates the rules did not end (active games use these)
    seed: int

    @property
    def probe_first_id(self) -> int:
        return self.users + 1

    @property
    def probe_game_count(self) -> int:
        return self.probe_users * PROBE_GAMES_PER_USER // 2


def make_plan(args: argparse.Namespace, now: int) -> Plan:
    start = time.perf_counter()
    pool = make_templates(random.Random(args.seed), args.templates, args.min_plies, args.max_plies)
    probe_count = args.probe_users * PROBE_GAMES_PER_USER // 2
    probe = make_templates(
        random.Random(args.seed + 1_000_003),
        probe_count,
        PROBE_MIN_PLIES,
        PROBE_MAX_PLIES,
        open_only=True,
    )
    open_ids = [i for i, t in enumerate(pool) if t.outcome is None]
    plies = [t.plies for t in pool]
    ends = Counter(AUTOMATIC_ENDINGS[t.outcome.termination] for t in pool if t.outcome)
    log(
        f"{len(pool)} templates (+{len(probe)} probe) in {time.perf_counter() - start:.1f} s: "
        f"mean {sum(plies) / len(plies):.1f} plies, {len(open_ids)} open, ended {dict(ends)}"
    )
    return Plan(
        now=now,
        users=args.users,
        probe_users=args.probe_users,
        games=args.games,
        active_share=args.active_share,
        templates=pool + probe,
        pool=len(pool),
        open_ids=open_ids,
        seed=args.seed,
    )


def bulk_games(
    plan: Plan, first: int, last: int, rng: random.Random, active_pairs: set[tuple[int, int]]
) -> tuple[list[GameRow], list[Link]]:
    """Bulk games ``first..last`` (ids), between bulk users 1..U."""
    rows: list[GameRow] = []
    links: list[Link] = []
    latest_end = plan.now - DAY
    for gid in range(first, last + 1):
        active = rng.random() < plan.active_share
        tid = rng.choice(plan.open_ids) if active else rng.randrange(plan.pool)
        t = plan.templates[tid]
        while True:
            white, black = rng.sample(range(1, plan.users + 1), 2)
            pair = (white, black) if white < black else (black, white)
            if not active or pair not in active_pairs:
                break
        if active:
            active_pairs.add(pair)
        created = plan.now - YEAR + rng.randrange(YEAR - 2 * DAY)
        step = min(rng.randint(60, 7200), max(1, (latest_end - created) // t.plies))
        changed = created + t.plies * step
        rows.append(game_row(gid, white, black, t, active, created, changed, rng))
        links.append((gid, tid, created, step))
    return rows, links


def probe_games(plan: Plan, first_gid: int) -> tuple[list[GameRow], list[Link]]:
    """The probe users' games: the same in every database (their own generator)."""
    rng = random.Random(plan.seed + 2_000_003)
    rows: list[GameRow] = []
    links: list[Link] = []
    n = plan.probe_users
    gid = first_gid
    tid = plan.pool
    for i in range(n):
        for off in range(1, PROBE_GAMES_PER_USER // 2 + 1):
            a = plan.probe_first_id + i
            b = plan.probe_first_id + (i + off) % n
            white, black = (a, b) if off % 2 else (b, a)
            t = plan.templates[tid]
            created = plan.now - 2 * DAY - rng.randrange(2 * DAY)
            target = plan.now - rng.randrange(DAY)
            step = (target - created) // t.plies
            changed = created + t.plies * step
            active = off <= PROBE_ACTIVE_OFFSETS
            rows.append(game_row(gid, white, black, t, active, created, changed, rng))
            links.append((gid, tid, created, step))
            gid += 1
            tid += 1
    return rows, links


def template_rows(templates: Sequence[Template]) -> Iterator[tuple[int, int, str, str, int, str]]:
    for tid, t in enumerate(templates):
        for ply, jugada, posicion, promocion, san in t.moves:
            yield (tid, ply, jugada, posicion, promocion, san)


def user_rows(plan: Plan, password_hash: str) -> list[tuple[Any, ...]]:
    admitted = plan.now - YEAR - 30 * DAY  # before every game
    names = user_names(BULK_PREFIX, plan.users) + user_names(PROBE_PREFIX, plan.probe_users)
    return [
        (i, name, password_hash, "", True, admitted, admitted, 0) for i, name in enumerate(names, 1)
    ]


def credit_wins(wins: Counter[int], rows: list[GameRow]) -> None:
    for r in rows:
        if r[5] == STATUS_FINISHED and r[6] in (WINNER_WHITE, WINNER_BLACK):
            wins[r[1] if r[6] == WINNER_WHITE else r[2]] += 1


# -- sinks -------------------------------------------------------------------------------

EXPAND_SELECT = (
    "SELECT g.game_id, t.ply, t.jugada, 0, t.posicion, t.promocion, t.san, "
    "g.c0 + t.ply * g.step "
    "FROM seed_links g JOIN seed_template_moves t ON t.template_id = g.template_id "
    "WHERE g.game_id BETWEEN {lo} AND {hi} ORDER BY g.game_id, t.ply"
)
MOVE_COLUMNS = "game_id, ply, jugada, reverso, posicion, promocion, san, created_at"


class Sink(Protocol):
    def check_empty(self) -> None: ...
    def begin(self) -> None: ...
    def users(self, rows: list[tuple[Any, ...]]) -> None: ...
    def templates(self, rows: Iterator[tuple[int, int, str, str, int, str]]) -> None: ...
    def games(self, rows: list[GameRow], links: list[Link]) -> None: ...
    def expand_moves(self, lo: int, hi: int) -> int: ...
    def commit(self) -> None: ...
    def wins(self, wins: Counter[int]) -> None: ...
    def finish(self, analyze: bool) -> dict[str, float]: ...
    def size(self) -> dict[str, int]: ...
    def close(self) -> None: ...


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


class SqliteSink:
    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.conn = sqlite3.connect(path, isolation_level=None)
        self.cur = self.conn.cursor()

    def check_empty(self) -> None:
        _refuse_if_seeded(self.cur.execute("SELECT count(*) FROM users").fetchone()[0])
        _refuse_if_seeded(self.cur.execute("SELECT count(*) FROM games").fetchone()[0])

    def begin(self) -> None:
        for pragma in (
            "PRAGMA journal_mode = OFF",
            "PRAGMA synchronous = OFF",
            "PRAGMA cache_size = -1048576",  # 1 GiB
            "PRAGMA temp_store = MEMORY",
            "PRAGMA foreign_keys = OFF",
        ):
            self.cur.execute(pragma).fetchall()
        self.cur.execute(
            "CREATE TEMP TABLE seed_template_moves (template_id INTEGER, ply INTEGER, "
            "jugada TEXT, posicion TEXT, promocion INTEGER, san TEXT, "
            "PRIMARY KEY (template_id, ply)) WITHOUT ROWID"
        )
        self.cur.execute(
            "CREATE TEMP TABLE seed_links (game_id INTEGER PRIMARY KEY, template_id INTEGER, "
            "c0 INTEGER, step INTEGER)"
        )
        self.cur.execute("BEGIN")

    def users(self, rows: list[tuple[Any, ...]]) -> None:
        self.cur.executemany(
            f"INSERT INTO users ({', '.join(USER_COLUMNS)}) "
            f"VALUES ({_placeholders(len(USER_COLUMNS))})",
            rows,
        )

    def templates(self, rows: Iterator[tuple[int, int, str, str, int, str]]) -> None:
        self.cur.executemany("INSERT INTO seed_template_moves VALUES (?, ?, ?, ?, ?, ?)", rows)

    def games(self, rows: list[GameRow], links: list[Link]) -> None:
        self.cur.executemany(
            f"INSERT INTO games ({', '.join(GAME_COLUMNS)}) "
            f"VALUES ({_placeholders(len(GAME_COLUMNS))})",
            rows,
        )
        self.cur.executemany("INSERT INTO seed_links VALUES (?, ?, ?, ?)", links)

    def expand_moves(self, lo: int, hi: int) -> int:
        self.cur.execute(
            f"INSERT INTO moves ({MOVE_COLUMNS}) " + EXPAND_SELECT.format(lo=int(lo), hi=int(hi))
        )
        return self.cur.rowcount

    def commit(self) -> None:
        self.cur.execute("COMMIT")
        self.cur.execute("BEGIN")

    def wins(self, wins: Counter[int]) -> None:
        self.cur.executemany(
            "UPDATE users SET wins = ? WHERE id = ?", [(n, uid) for uid, n in wins.items()]
        )

    def finish(self, analyze: bool) -> dict[str, float]:
        self.cur.execute("COMMIT")
        self.cur.execute("DROP TABLE seed_links")
        self.cur.execute("DROP TABLE seed_template_moves")
        timings: dict[str, float] = {}
        if analyze:
            start = time.perf_counter()
            self.cur.execute("ANALYZE")
            timings["analyze_s"] = time.perf_counter() - start
        # Back to what the server expects; journal_mode is stored in the file.
        for pragma in (
            "PRAGMA journal_mode = WAL",
            "PRAGMA synchronous = FULL",
        ):
            self.cur.execute(pragma).fetchall()
        return timings

    def size(self) -> dict[str, int]:
        out = {"file_bytes": self.path.stat().st_size}
        for table in ("games", "moves"):
            out[f"{table}_rows"] = self.cur.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0]
        return out

    def close(self) -> None:
        self.conn.close()


class PostgresSink:
    def __init__(self, dsn: str) -> None:
        import psycopg

        self.psycopg = psycopg
        self.conn = psycopg.connect(dsn)
        self.cur = self.conn.cursor()

    def check_empty(self) -> None:
        _refuse_if_seeded(self._one("SELECT count(*) FROM users"))
        _refuse_if_seeded(self._one("SELECT count(*) FROM games"))

    def _one(self, sql: str) -> Any:
        row = self.cur.execute(sql).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return row[0]

    def begin(self) -> None:
        try:
            self.cur.execute("SET session_replication_role = replica")
        except self.psycopg.errors.InsufficientPrivilege:
            self.conn.rollback()
            log("not a superuser: foreign-key triggers stay on (slower)")
        self.cur.execute("SET synchronous_commit = off")
        self.cur.execute(
            "CREATE TEMP TABLE seed_template_moves (template_id integer, ply integer, "
            "jugada text, posicion text, promocion smallint, san text, "
            "PRIMARY KEY (template_id, ply))"
        )
        self.cur.execute(
            "CREATE TEMP TABLE seed_links (game_id integer PRIMARY KEY, template_id integer, "
            "c0 bigint, step bigint)"
        )

    def _copy(self, table: str, columns: Sequence[str], rows: Any) -> None:
        with self.cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:  # type: ignore[arg-type]
            for row in rows:
                copy.write_row(row)

    def users(self, rows: list[tuple[Any, ...]]) -> None:
        self._copy("users", USER_COLUMNS, rows)

    def templates(self, rows: Iterator[tuple[int, int, str, str, int, str]]) -> None:
        cols = ("template_id", "ply", "jugada", "posicion", "promocion", "san")
        self._copy("seed_template_moves", cols, rows)
        self.cur.execute("ANALYZE seed_template_moves")

    def games(self, rows: list[GameRow], links: list[Link]) -> None:
        self._copy("games", GAME_COLUMNS, rows)
        self._copy("seed_links", ("game_id", "template_id", "c0", "step"), links)

    def expand_moves(self, lo: int, hi: int) -> int:
        self.cur.execute(
            f"INSERT INTO moves ({MOVE_COLUMNS}) " + EXPAND_SELECT.format(lo=int(lo), hi=int(hi))  # type: ignore[arg-type]
        )
        return self.cur.rowcount

    def commit(self) -> None:
        self.conn.commit()

    def wins(self, wins: Counter[int]) -> None:
        self.cur.executemany(
            "UPDATE users SET wins = %s WHERE id = %s", [(n, uid) for uid, n in wins.items()]
        )

    def finish(self, analyze: bool) -> dict[str, float]:
        for table in ("users", "games"):
            self.cur.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # type: ignore[arg-type]
                f"(SELECT max(id) FROM {table}))"
            )
        self.cur.execute("DROP TABLE seed_links")
        self.cur.execute("DROP TABLE seed_template_moves")
        self.cur.execute("RESET session_replication_role")
        self.conn.commit()
        timings: dict[str, float] = {}
        if analyze:
            start = time.perf_counter()
            self.conn.autocommit = True
            self.cur.execute("VACUUM (ANALYZE)")
            self.conn.autocommit = False
            timings["analyze_s"] = time.perf_counter() - start
        return timings

    def size(self) -> dict[str, int]:
        out: dict[str, int] = {
            "database_bytes": self._one("SELECT pg_database_size(current_database())")
        }
        for table in ("games", "moves"):
            out[f"{table}_bytes"] = self._one(f"SELECT pg_total_relation_size('{table}')")
            out[f"{table}_rows"] = self._one(f"SELECT count(*) FROM {table}")
        return out

    def close(self) -> None:
        self.conn.close()


def _refuse_if_seeded(count: int) -> None:
    if count:
        raise SystemExit("the database already holds users or games: seed a fresh one")


def open_sink(database_url: str) -> Sink:
    url = make_url(database_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        if not url.database or url.database == ":memory:":
            raise SystemExit("SQLite needs a file")
        return SqliteSink(url.database)
    if backend == "postgresql":
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return PostgresSink(dsn)
    raise SystemExit(f"unsupported database {backend}")


# -- the run -----------------------------------------------------------------------------


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def seed(args: argparse.Namespace) -> dict[str, Any]:
    now = int(time.time())
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    db = Database(args.database_url)
    try:
        upgrade(db)
    finally:
        db.dispose()
    timings["migrate_s"] = time.perf_counter() - t0

    start = time.perf_counter()
    plan = make_plan(args, now)
    timings["templates_s"] = time.perf_counter() - start

    sink = open_sink(args.database_url)
    try:
        sink.check_empty()
        sink.begin()
        start = time.perf_counter()
        sink.users(user_rows(plan, hash_password(PASSWORD)))
        sink.templates(template_rows(plan.templates))
        sink.commit()
        timings["users_templates_s"] = time.perf_counter() - start

        start = time.perf_counter()
        rng = random.Random(args.seed + 3_000_017)
        active_pairs: set[tuple[int, int]] = set()
        wins: Counter[int] = Counter()
        moves = 0
        games_s = moves_s = 0.0
        first = 1
        while first <= plan.games:
            last = min(plan.games, first + args.chunk - 1)
            t1 = time.perf_counter()
            rows, links = bulk_games(plan, first, last, rng, active_pairs)
            credit_wins(wins, rows)
            sink.games(rows, links)
            t2 = time.perf_counter()
            moves += sink.expand_moves(first, last)
            sink.commit()
            t3 = time.perf_counter()
            games_s += t2 - t1
            moves_s += t3 - t2
            elapsed = t3 - start
            log(
                f"games {last:,}/{plan.games:,}, moves {moves:,}: {elapsed:.0f} s "
                f"({moves / elapsed:,.0f} moves/s)"
            )
            first = last + 1
        probe_first = plan.games + 1
        rows, links = probe_games(plan, probe_first)
        credit_wins(wins, rows)
        sink.games(rows, links)
        moves += sink.expand_moves(probe_first, probe_first + len(rows) - 1)
        sink.wins(wins)
        sink.commit()
        timings["games_s"] = games_s
        timings["games_and_moves_s"] = time.perf_counter() - start
        timings["moves_insert_s"] = moves_s
        timings.update(sink.finish(not args.no_analyze))
        timings["total_s"] = time.perf_counter() - t0
        size = sink.size()
    finally:
        sink.close()

    url = make_url(args.database_url)
    probe = [
        {
            "id": r[0],
            "white": r[1],
            "black": r[2],
            "status": r[5],
            "plies": r[9] - 1,
            "changed_at": r[15],
        }
        for r in rows
    ]
    return {
        "database_url": url.render_as_string(hide_password=True),
        "seeded_at": now,
        "seed": args.seed,
        "games": plan.games + len(rows),
        "bulk_games": plan.games,
        "bulk_active_games": len(active_pairs),
        "moves": moves,
        "users": plan.users,
        "templates": plan.pool,
        "probe": {
            "prefix": PROBE_PREFIX,
            "users": user_names(PROBE_PREFIX, plan.probe_users),
            "first_user_id": plan.probe_first_id,
            "password": PASSWORD,
            "games": probe,
        },
        "timings_s": {k: round(v, 2) for k, v in timings.items()},
        "size": size,
        "analyzed": not args.no_analyze,
        "command": " ".join(["python", "-m", "bench.seed_games", *sys.argv[1:]]),
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench.seed_games", description=__doc__.split("\n")[0]
    )
    p.add_argument("--database-url", required=True, help="an empty (or new SQLite) database")
    p.add_argument("--games", type=int, required=True, help="bulk games (the probe's come on top)")
    p.add_argument("--users", type=int, default=20_000, help="bulk users (20000)")
    p.add_argument("--probe-users", type=int, default=20, help="probe users, > 10 (20)")
    p.add_argument("--templates", type=int, default=2_000, help="distinct random games (2000)")
    p.add_argument("--min-plies", type=int, default=10, help="shortest template (10)")
    p.add_argument("--max-plies", type=int, default=70, help="longest template (70)")
    p.add_argument("--active-share", type=float, default=0.10, help="active bulk games (0.10)")
    p.add_argument("--chunk", type=int, default=50_000, help="games per transaction (50000)")
    p.add_argument("--seed", type=int, default=1, help="random seed (1)")
    p.add_argument("--no-analyze", action="store_true", help="skip ANALYZE at the end")
    p.add_argument(
        "--meta",
        type=Path,
        help="write the summary (probe users, games) as JSON (say bench/out/NAME.seed.json)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.probe_users <= PROBE_GAMES_PER_USER:
        raise SystemExit(f"--probe-users must exceed {PROBE_GAMES_PER_USER}")
    if args.users < 2:
        raise SystemExit("--users must be at least 2")
    meta = seed(args)
    t = meta["timings_s"]
    log(
        f"seeded {meta['games']:,} games, {meta['moves']:,} moves, {meta['users']:,}+"
        f"{len(meta['probe']['users'])} users in {t['total_s']:.0f} s; size {meta['size']}"
    )
    text = json.dumps(meta, indent=2) + "\n"
    if args.meta:
        args.meta.parent.mkdir(parents=True, exist_ok=True)
        args.meta.write_text(text)
        log(f"wrote {args.meta}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
