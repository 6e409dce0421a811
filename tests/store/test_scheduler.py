"""The scheduler's side of clocks on the store under test (SQLite, or PostgreSQL with
``AJEDREZ_TEST_DATABASE_URL``): ``Timekeeping.flag_due`` ends every game whose deadline
has come, each exactly once, also when two server processes (two ``Database`` objects on
one URL) run it at the same moment, and skips a game another transaction holds;
``next_deadline`` finds the earliest running deadline by its index.

Each test has a database of its own (``own_db``), so other tests' games never count, and
a ``FakeClock``: time passes only when the test moves it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field

import pytest
from sqlalchemy import create_engine, insert, select, text

from ajedrez.domain.clocks import ClockRules
from ajedrez.domain.errors import Refusal
from ajedrez.domain.games import Games
from ajedrez.domain.timekeeping import Timekeeping
from ajedrez.domain.views import MoveRecord
from ajedrez.store.db import Database
from ajedrez.store.models import Game, User
from ajedrez.store.moves import Moves
from ajedrez.store.statements import NEXT_DEADLINE
from ajedrez.store.urls import sqlite_file
from tests.support.clock import DAY_MS, HOUR_MS, MINUTE_MS, SECOND_MS, START_MS, FakeClock
from tests.support.common import unique_name
from tests.support.store import insert_users
from tests.support.together import run_together

S = START_MS
E2E4 = MoveRecord(1, "e2e4", 0, "1228", 0)
E7E5 = MoveRecord(2, "e7e5", 0, "5236", 0)
G1F3 = MoveRecord(3, "g1f3", 0, "0621", 0)
STATUS_ACTIVE, STATUS_FINISHED = 0, 2
WINNER_BLACK = 2
JOIN_SECONDS = 60  # a bound on a thread that must not wait at all; never reached


@dataclass
class Store:
    """One server process's view of the store: its Games, Moves and clock."""

    db: Database
    clock: FakeClock = field(default_factory=FakeClock)
    rules: ClockRules = field(default_factory=ClockRules)

    def __post_init__(self) -> None:
        self.games = Games(self.db, self.clock, self.rules)
        self.moves = Moves.of(self.db, self.clock, self.rules)

    @property
    def time(self) -> Timekeeping:
        return self.games.time

    def users(self, count: int, prefix: str = "s") -> list[tuple[str, int]]:
        """``count`` new accounts: (name, id) each."""
        names = [unique_name(prefix) for _ in range(count)]
        insert_users(self.db, names, "not a hash: nobody logs in")
        with self.db.engine.connect() as c:
            ids = dict(c.execute(select(User.name, User.id).where(User.name.in_(names))).all())
        return [(n, ids[n]) for n in names]

    def games_against(self, control: str, count: int) -> tuple[int, list[tuple[int, int]]]:
        """``count`` games started now with ``control``: one new player plays white in
        all of them, against a new opponent each. (white id, [(game id, black id)])."""
        (hub, hub_id), *others = self.users(count + 1)
        started = []
        for name, user_id in others:
            self.games.challenge(user_id, hub, control)
            started.append((self.games.accept(hub_id, "B", name), user_id))
        return hub_id, started

    def play(self, moves: list[tuple[int, int, MoveRecord]]) -> None:
        """(player, game, move) each, stored in one batch at the clock's time."""
        jobs = [self.moves.job(player, game, record) for player, game, record in moves]
        assert self.db.write_jobs(jobs) == [None] * len(jobs)

    def two_moves_each(self, white_id: int, started: list[tuple[int, int]]) -> None:
        """1. e4 e5 in every game, a second apart: both sides have moved."""
        self.play([(white_id, game, E2E4) for game, _black in started])
        self.clock.advance(SECOND_MS)
        self.play([(black, game, E7E5) for game, black in started])

    def statuses(self, game_ids: list[int]) -> dict[int, tuple[int, int, str | None]]:
        """(status, winner, end reason) of each game."""
        with self.db.engine.connect() as c:
            rows = c.execute(
                select(Game.id, Game.status, Game.winner, Game.end_reason).where(
                    Game.id.in_(game_ids)
                )
            ).all()
        return {r.id: (r.status, r.winner, r.end_reason) for r in rows}

    def wins(self, user_ids: list[int]) -> dict[int, int]:
        with self.db.engine.connect() as c:
            rows = c.execute(select(User.id, User.wins).where(User.id.in_(user_ids))).all()
        return {r.id: r.wins for r in rows}


@pytest.fixture
def store(own_db) -> Store:
    _url, database = own_db
    return Store(database)


def drain(time: Timekeeping, limit: int) -> list[tuple[int, str]]:
    """Passes of ``limit`` games until one ends none: what they ended, in order."""
    ended: list[tuple[int, str]] = []
    while batch := time.flag_due(limit):
        assert len(batch) <= limit
        ended += batch
    return ended


# -- many games due at once -------------------------------------------------------------------


def test_many_games_due_at_once_are_each_ended_once(store):
    white, due = store.games_against("10m", 40)
    store.two_moves_each(white, due)  # white's clocks run from S + 1 s, with 10 minutes
    _hub, later = store.games_against("1d", 5)  # these run until a day later
    deadline = S + SECOND_MS + 10 * MINUTE_MS
    due_ids = [game for game, _black in due]

    store.clock.now = deadline - 1
    assert store.time.flag_due() == []
    assert store.time.next_deadline() == deadline
    store.clock.now = deadline
    ended = store.time.flag_due()
    assert sorted(ended) == sorted((game, "timeout") for game in due_ids)
    assert store.time.flag_due() == []  # nothing twice
    statuses = store.statuses(due_ids + [game for game, _black in later])
    assert {statuses[g] for g in due_ids} == {(STATUS_FINISHED, WINNER_BLACK, "timeout")}
    assert {statuses[g][0] for g, _black in later} == {STATUS_ACTIVE}
    blacks = [black for _game, black in due]
    assert store.wins([white, *blacks]) == {white: 0, **dict.fromkeys(blacks, 1)}
    assert store.time.next_deadline() == S + SECOND_MS + DAY_MS  # the 1d games' (started then)


def test_passes_of_a_limited_batch_end_every_due_game_once(store):
    white, due = store.games_against("30s-move", 23)
    store.two_moves_each(white, due)
    store.clock.advance(30 * SECOND_MS)
    ended = []
    for expected in (10, 10, 3, 0):
        batch = store.time.flag_due(limit=10)
        assert len(batch) == expected
        ended += batch
    assert Counter(game for game, _reason in ended) == Counter(game for game, _black in due)
    assert sum(store.wins([black for _game, black in due]).values()) == 23


def test_earliest_deadlines_first(store):
    _white, first = store.games_against("10m", 3)
    store.clock.advance(MINUTE_MS)
    _other, second = store.games_against("10m", 3)
    store.clock.now = S + 30 * MINUTE_MS  # all six are due: white never moved in any
    batch = store.time.flag_due(limit=3)
    assert sorted(batch) == sorted((game, "aborted") for game, _black in first)
    assert sorted(store.time.flag_due(limit=3)) == sorted(
        (game, "aborted") for game, _black in second
    )


def test_moves_at_the_deadline_end_their_games_in_their_own_transaction(store):
    """A move at or after the deadline ends the game on time, committed with the batch
    it came in, and is refused 833; one a millisecond before is played and saves it."""
    white, due = store.games_against("10m", 4)
    store.two_moves_each(white, due)
    (saved, b1), (late, b2), (stale, b3), (resent, b4) = due
    deadline = S + SECOND_MS + 10 * MINUTE_MS  # of every white clock

    store.clock.now = deadline - 1
    store.play([(white, saved, G1F3)])
    store.clock.now = deadline
    jobs = [
        store.moves.job(white, late, G1F3),
        store.moves.job(b3, stale, MoveRecord(2, "d7d5", 0, "5135", 0)),  # not the stored e5
        store.moves.job(b4, resent, E7E5),  # the exact move stored: answered as stored
    ]
    results = store.db.write_jobs(jobs)
    assert [type(r).__name__ for r in results] == ["Failure", "Failure", "NoneType"]
    assert [(r.kind, r.reason) for r in results[:2]] == [
        (Refusal.GAME_OVER, f"your time ran out: P{late:07d} is finished (timeout)"),
        (Refusal.GAME_OVER, f"your opponent's time ran out: P{stale:07d} is finished (timeout)"),
    ]
    over = (STATUS_FINISHED, WINNER_BLACK, "timeout")
    assert store.statuses([saved, late, stale, resent]) == {
        saved: (STATUS_ACTIVE, 0, None),
        late: over,
        stale: over,
        resent: (STATUS_ACTIVE, 0, None),
    }
    assert store.time.flag_due() == [(resent, "timeout")]  # the one no move ended
    assert store.wins([white, b1, b2, b3, b4]) == {white: 0, b1: 0, b2: 1, b3: 1, b4: 1}
    # black's in the game saved: black's bank is 9:59 (its first move took a second)
    assert store.time.next_deadline() == deadline - 1 + 10 * MINUTE_MS - SECOND_MS


def test_a_late_move_run_alone_still_ends_its_game(store):
    """A move that runs on its own (here a game's second move in one batch, and a move in a
    transaction of its own, as after a fault in its batch) is refused by being returned,
    not raised, so the end on time it wrote is kept."""
    white, due = store.games_against("10m", 2)
    store.two_moves_each(white, due)
    (first, b1), (second, b2) = due
    store.clock.now = S + SECOND_MS + 10 * MINUTE_MS  # white's deadline in both
    again = store.moves.job(white, first, MoveRecord(3, "d2d4", 0, "1127", 0))
    results = store.db.write_jobs([store.moves.job(white, first, G1F3), again])
    assert [getattr(r, "kind", r) for r in results] == [Refusal.GAME_OVER, Refusal.GAME_OVER]
    with store.db.writing() as tx:
        refused = store.moves.job(white, second, G1F3)(tx)
    assert refused is not None and refused.kind is Refusal.GAME_OVER
    over = (STATUS_FINISHED, WINNER_BLACK, "timeout")
    assert store.statuses([first, second]) == {first: over, second: over}
    assert store.wins([b1, b2]) == {b1: 1, b2: 1}


# -- two server processes ---------------------------------------------------------------------


@pytest.mark.parametrize("round_", range(3))
def test_two_processes_racing_end_every_due_game_exactly_once(own_db, round_):
    url, database = own_db
    clock = FakeClock()
    one = Store(database, clock)
    two = Store(Database(url), clock)  # another engine on the same URL: another process
    try:
        white, due = one.games_against("10m", 60)
        one.two_moves_each(white, due)
        clock.now = S + SECOND_MS + 10 * MINUTE_MS  # every white clock has run out

        drained = run_together(
            [lambda: drain(one.time, limit=4), lambda: drain(two.time, limit=4)], JOIN_SECONDS
        )
        ended = Counter(game for each in drained for game, _reason in each)
        game_ids = [game for game, _black in due]
        assert ended == Counter(game_ids)  # every game once, between the two
        assert one.time.flag_due() == [] and two.time.flag_due() == []
        statuses = one.statuses(game_ids)
        assert Counter(statuses.values()) == {(STATUS_FINISHED, WINNER_BLACK, "timeout"): 60}
        blacks = [black for _game, black in due]
        assert one.wins([white, *blacks]) == {white: 0, **dict.fromkeys(blacks, 1)}
    finally:
        two.db.dispose()


# -- a game another transaction holds ------------------------------------------------------------


def test_a_game_held_by_another_transaction_is_skipped_then_ended_once(own_db, store):
    url, _database = own_db
    white, due = store.games_against("10m", 5)
    store.two_moves_each(white, due)
    store.clock.advance(10 * MINUTE_MS)
    held, _black = due[2]
    others = sorted(game for game, _black in due if game != held)

    passes: list[list[tuple[int, str]]] = []
    errors: list[BaseException] = []

    def scheduler() -> None:
        try:
            passes.append(store.time.flag_due())
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    thread = threading.Thread(target=scheduler)
    if store.db.serializes_writes:
        # SQLite: writers take turns. Another writer holds the write lock with a change to
        # the game in hand; the pass runs after it commits, and ends the game once.
        path = sqlite_file(url)
        assert path is not None
        locker = sqlite3.connect(path, isolation_level=None)
        try:
            locker.execute("BEGIN IMMEDIATE")
            locker.execute("UPDATE games SET changed_at = changed_at + 1 WHERE id = ?", (held,))
            thread.start()
            locker.execute("COMMIT")
        finally:
            locker.close()
        thread.join(JOIN_SECONDS)
        assert not thread.is_alive()
        assert errors == []
        assert sorted(passes[0]) == [(g, "timeout") for g in sorted([*others, held])]
    else:
        # PostgreSQL: the row is locked; the pass must skip it, not wait for it.
        engine = create_engine(url)
        try:
            with engine.connect() as locker:
                locker.execute(text("SELECT id FROM games WHERE id = :g FOR UPDATE"), {"g": held})
                thread.start()
                thread.join(JOIN_SECONDS)
                waited = thread.is_alive()
                locker.rollback()  # releases the row (and a waiting pass, if the test fails)
        finally:
            engine.dispose()
        thread.join(JOIN_SECONDS)
        assert not waited, "flag_due waited for a locked game"
        assert errors == []
        assert sorted(passes[0]) == [(g, "timeout") for g in others]
        assert store.statuses([held])[held][0] == STATUS_ACTIVE
        assert store.time.flag_due() == [(held, "timeout")]  # a later pass ends it
    assert store.time.flag_due() == []
    statuses = store.statuses([game for game, _black in due])
    assert set(statuses.values()) == {(STATUS_FINISHED, WINNER_BLACK, "timeout")}
    blacks = [black for _game, black in due]
    assert store.wins([white, *blacks]) == {white: 0, **dict.fromkeys(blacks, 1)}


# -- the next deadline ----------------------------------------------------------------------------


def test_next_deadline_is_the_earliest_running_one(store):
    assert store.time.next_deadline() is None  # no game at all
    store.games_against("none", 2)
    assert store.time.next_deadline() is None  # games without a clock

    white, ((soon, _b1), (ended, _b2)) = store.games_against("10m", 2)
    assert store.time.next_deadline() == S + 10 * MINUTE_MS
    store.games.resign(white, ended, _opponent_name(store, ended))
    assert store.time.next_deadline() == S + 10 * MINUTE_MS  # the other still runs
    store.clock.advance(HOUR_MS)
    _w2, ((three_days, _b3),) = store.games_against("3d", 1)
    store.clock.advance(HOUR_MS)
    _w3, ((one_day, _b4),) = store.games_against("1d", 1)
    assert store.time.next_deadline() == S + 10 * MINUTE_MS  # past, and not yet ended

    assert store.time.flag_due() == [(soon, "aborted")]
    assert store.time.next_deadline() == S + 2 * HOUR_MS + DAY_MS  # the 1d game's

    store.games.resign(white_of(store, one_day), one_day, _opponent_name(store, one_day))
    assert store.time.next_deadline() == S + HOUR_MS + 3 * DAY_MS  # the 3d game's
    store.clock.now = S + HOUR_MS + 3 * DAY_MS
    assert store.time.flag_due() == [(three_days, "aborted")]
    assert store.time.next_deadline() is None  # only finished games and no clocks left


def test_next_deadline_follows_a_leave(store):
    (name, user_id), (other, other_id) = store.users(2)
    store.games.challenge(other_id, name, "3d")
    store.games.accept(user_id, "B", other)
    assert store.time.next_deadline() == S + 3 * DAY_MS
    store.time.start_leave(user_id, 10)  # white's clock waits for the leave's end
    assert store.time.next_deadline() == S + 13 * DAY_MS
    store.clock.advance(DAY_MS)
    store.time.end_leave(user_id)
    assert store.time.next_deadline() == S + 4 * DAY_MS


def white_of(store: Store, game_id: int) -> int:
    with store.db.engine.connect() as c:
        return int(c.execute(select(Game.white_id).where(Game.id == game_id)).scalar_one())


def _opponent_name(store: Store, game_id: int) -> str:
    """The black player's name (white resigns, naming its opponent)."""
    with store.db.engine.connect() as c:
        return str(
            c.execute(
                select(User.name).join(Game, Game.black_id == User.id).where(Game.id == game_id)
            ).scalar_one()
        )


# -- the index ---------------------------------------------------------------------------------


def _fill(store: Store, finished: int, running: int) -> None:
    """Many finished games (no deadline) and some running ones, as a store in use has."""
    players = store.users(running + 1, "q")
    (_a, a), *others = players
    base = {
        "tc_initial_ms": None,
        "tc_increment_ms": None,
        "tc_cap_ms": None,
        "white_ms": None,
        "black_ms": None,
        "clock_since_ms": None,
        "deadline_ms": None,
        "end_reason": None,
        "fen": "8/8/8/8/8/8/8/8 w - - 0 1",
        "created_at": 1,
        "changed_at": 1,
        "next_ply": 1,
        "req_white": 0,
        "req_black": 0,
        "base_ply": 0,
    }
    b = others[0][1]
    rows = [
        {
            **base,
            "white_id": a,
            "black_id": b,
            "user_lo": min(a, b),
            "user_hi": max(a, b),
            "status": STATUS_FINISHED,
            "winner": 3,
            "end_reason": "agreement",
        }
        for _ in range(finished)
    ]
    rows += [
        {
            **base,
            "white_id": a,
            "black_id": other,
            "user_lo": min(a, other),
            "user_hi": max(a, other),
            "status": STATUS_ACTIVE,
            "winner": 0,
            "tc_initial_ms": DAY_MS,
            "tc_increment_ms": DAY_MS,
            "tc_cap_ms": DAY_MS,
            "white_ms": DAY_MS,
            "black_ms": DAY_MS,
            "clock_since_ms": S + i,
            "deadline_ms": S + DAY_MS + i,
        }
        for i, (_name, other) in enumerate(others)
    ]
    with store.db.engine.begin() as c:
        c.execute(insert(Game), rows)
        c.exec_driver_sql("ANALYZE")


def test_the_next_deadline_query_uses_its_index(store):
    _fill(store, finished=3000, running=40)
    assert store.time.next_deadline() == S + DAY_MS
    engine = store.db.engine
    sql = str(NEXT_DEADLINE.compile(engine, compile_kwargs={"literal_binds": True}))
    with engine.connect() as c:
        if engine.dialect.name == "sqlite":
            plan = "\n".join(str(row[-1]) for row in c.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}"))
            assert "INDEX ix_games_deadline" in plan, plan
            assert "TEMP B-TREE" not in plan, plan  # no sort: the index gives the order
        else:
            plan = "\n".join(str(row[0]) for row in c.exec_driver_sql(f"EXPLAIN {sql}"))
            assert "using ix_games_deadline" in plan, plan
            assert "Seq Scan" not in plan and "Sort" not in plan, plan


# -- clock warnings (AVISO_RELOJ) ---------------------------------------------------------------


def stored_events(db: Database, kind: str) -> list[tuple[int | None, dict[str, object]]]:
    """(recipient, fields) of the stored events of ``kind``, in order."""
    with db.engine.connect() as c:
        rows = c.execute(
            text("SELECT user_a, data FROM events WHERE kind = :k ORDER BY id"), {"k": kind}
        ).all()
    return [(r.user_a, json.loads(r.data)) for r in rows]


def test_clock_warnings_go_once_each_to_the_player_to_move(store):
    white, [(game, black)] = store.games_against("3d", 1)
    name = {white: None, black: None}
    with store.db.engine.connect() as c:
        for uid in name:
            name[uid] = c.scalar(select(User.name).where(User.id == uid))
    deadline = S + 3 * DAY_MS
    assert store.time.next_warning() == deadline - DAY_MS

    store.clock.now = deadline - DAY_MS - 1
    assert store.time.warn_due() == []
    store.clock.now = deadline - DAY_MS
    assert store.time.warn_due() == [(game, name[white])]
    assert store.time.warn_due() == []  # once
    assert stored_events(store.db, "AVISO_RELOJ") == [
        (white, {"partida": game, "usuario": name[white], "restante": DAY_MS, "limite": deadline})
    ]
    tenth = deadline - 3 * DAY_MS // 10
    assert store.time.next_warning() == tenth
    store.clock.now = tenth + 5 * SECOND_MS  # the scheduler was late: the time left is told
    assert store.time.warn_due() == [(game, name[white])]
    assert store.time.next_warning() is None  # nothing left this turn
    assert stored_events(store.db, "AVISO_RELOJ")[-1] == (
        white,
        {
            "partida": game,
            "usuario": name[white],
            "restante": 3 * DAY_MS // 10 - 5 * SECOND_MS,
            "limite": deadline,
        },
    )

    store.play([(white, game, E2E4)])  # black's turn: a day before its own deadline
    moved = store.clock.now
    assert store.time.next_warning() == moved + 2 * DAY_MS
    store.clock.now = moved + 2 * DAY_MS
    assert store.time.warn_due() == [(game, name[black])]
    assert stored_events(store.db, "AVISO_RELOJ")[-1][0] == black


def test_a_game_that_ends_is_not_warned(store):
    white, [(game, black), (other, _black)] = store.games_against("10m", 2)
    store.clock.now = S + 8 * MINUTE_MS
    store.games.resign(black, game, _name(store.db, white))
    assert store.time.next_warning() == S + 9 * MINUTE_MS  # the other game's
    store.clock.now = S + 9 * MINUTE_MS
    assert [g for g, _player in store.time.warn_due()] == [other]
    store.clock.now = S + 10 * MINUTE_MS
    assert [g for g, _reason in store.time.flag_due()] == [other]
    assert store.time.next_warning() is None


def _name(db: Database, user_id: int) -> str:
    with db.engine.connect() as c:
        return str(c.scalar(select(User.name).where(User.id == user_id)))
