"""Moves and reads that the batch threads run together (``store/batches.py``).

On PostgreSQL a batch of moves is checked against game rows locked all at once and
stored in one statement (``games._store_moves``), and a batch of SPARs is one statement
(``PreparedMany``). On SQLite the same jobs run one by one in savepoints. These tests
give both stores the same batches and expect the same answers, and the same stored
games as moves played one at a time would leave.
"""

from __future__ import annotations

import asyncio
import random

import chess
import pytest
from sqlalchemy import text

from ajedrez.domain.errors import Failure, Refusal, StorageError
from ajedrez.domain.games import Games
from ajedrez.domain.reads import moves_of, status_of
from ajedrez.domain.views import GameStatus, MoveRecord
from ajedrez.store.db import Database, Tx
from ajedrez.store.statements import PLAYERS_AND_MOVES_AFTER, PLAYERS_AND_MOVES_AFTER_ONE
from tests.domain.test_play_history import _pick, _record
from tests.support.moves import moves_for, play
from tests.support.play import user_id

STATUS_FINISHED = 2


def _new_game(games: Games, db: Database, new_user) -> tuple[int, dict[chess.Color, int]]:  # type: ignore[no-untyped-def]
    white, black = new_user("bw"), new_user("bb")
    ids = {chess.WHITE: user_id(db, white), chess.BLACK: user_id(db, black)}
    games.challenge(ids[chess.WHITE], black)
    return games.accept(ids[chess.BLACK], "N", white), ids


def _row(db: Database, game_id: int):  # type: ignore[no-untyped-def]
    with db.engine.connect() as c:
        return c.execute(
            text("SELECT status, fen, next_ply, winner FROM games WHERE id = :g"), {"g": game_id}
        ).one()


def _plies(db: Database, game_id: int) -> list[str]:
    with db.engine.connect() as c:
        return list(
            c.execute(
                text("SELECT jugada FROM moves WHERE game_id = :g ORDER BY ply"), {"g": game_id}
            ).scalars()
        )


@pytest.mark.parametrize("seed", range(3))
def test_batches_of_moves_leave_what_single_moves_would(seed, games, db, new_user):
    """Eight random games move together: every batch holds the next move of each game
    still running (each with its own service instance now and then, as with two server
    processes), and after every batch each stored game must be its own full replay."""
    rng = random.Random(seed)
    other = Games(db)
    boards: dict[int, chess.Board] = {}
    players: dict[int, dict[chess.Color, int]] = {}
    for _ in range(8):
        game_id, ids = _new_game(games, db, new_user)
        boards[game_id], players[game_id] = chess.Board(), ids
    running = set(boards)
    while running:
        order = sorted(running)
        rng.shuffle(order)
        jobs, moves = [], {}
        for game_id in order:
            board = boards[game_id]
            moves[game_id] = _pick(board, rng)
            service = rng.choice((games, other))
            record = _record(len(board.move_stack) + 1, moves[game_id])
            jobs.append(moves_for(service).job(players[game_id][board.turn], game_id, record))
        assert db.write_jobs(jobs) == [None] * len(jobs)
        for game_id in order:
            board = boards[game_id]
            board.push(moves[game_id])
            row = _row(db, game_id)
            assert row.fen == board.fen()
            assert row.next_ply == len(board.move_stack) + 1
            if board.outcome(claim_draw=False) is not None or len(board.move_stack) >= 160:
                if board.outcome(claim_draw=False) is not None:
                    assert row.status == STATUS_FINISHED
                running.discard(game_id)


def test_a_batch_answers_each_move_on_its_own(games, db, new_user):
    """One batch: good moves, a refused one, a move out of turn, a move to no game, a
    game's two moves in a row, and an exact resend. Each gets the answer it would get
    alone, and only the good ones are stored. (SQLite refuses a wrong move as the job is
    made, on a snapshot; PostgreSQL when the batch runs.)"""
    g = {name: _new_game(games, db, new_user) for name in "abcdef"}

    def job(name: str | None, color: chess.Color, ply: int, uci: str):  # type: ignore[no-untyped-def]
        game_id, ids = g[name or "a"]
        record = _record(ply, chess.Move.from_uci(uci))
        try:
            return moves_for(games).job(
                ids[color], 999_999_999 if name is None else game_id, record
            )
        except Failure as e:
            return e

    # f has its first move stored already; its exact resend must be accepted.
    assert db.write_jobs([job("f", chess.WHITE, 1, "g1f3")]) == [None]
    batch = [
        job("a", chess.WHITE, 1, "e2e4"),
        job("b", chess.WHITE, 1, "e2e5"),  # no such pawn move
        job("c", chess.BLACK, 1, "e7e5"),  # white moves first
        job(None, chess.WHITE, 1, "e2e4"),  # no such game
        job("d", chess.WHITE, 1, "d2d4"),
        # d's reply in the same batch: PostgreSQL checks it after d's first move; SQLite
        # before, on its snapshot (no client can see a move before it is stored).
        job("d", chess.BLACK, 2, "d7d5"),
        job("e", chess.WHITE, 1, "c2c4"),
        job("f", chess.WHITE, 1, "g1f3"),
    ]
    queued = [j for j in batch if not isinstance(j, Failure)]
    ran = iter(db.write_jobs(queued))
    results = [j if isinstance(j, Failure) else next(ran) for j in batch]
    codes = [r.kind if isinstance(r, Failure) else r for r in results]
    assert codes == [
        None,
        Refusal.ILLEGAL_MOVE,
        Refusal.NOT_YOUR_TURN,
        Refusal.NO_SUCH_GAME,
        None,
        Refusal.NOT_YOUR_TURN if db.is_sqlite else None,
        None,
        None,
    ]
    assert _plies(db, g["a"][0]) == ["e2e4"]
    assert _plies(db, g["b"][0]) == []
    assert _plies(db, g["c"][0]) == []
    assert _plies(db, g["d"][0]) == (["d2d4"] if db.is_sqlite else ["d2d4", "d7d5"])
    assert _plies(db, g["e"][0]) == ["c2c4"]
    assert _plies(db, g["f"][0]) == ["g1f3"]
    assert _row(db, g["d"][0]).next_ply == len(_plies(db, g["d"][0])) + 1


def test_a_batch_that_mates_ends_its_game(games, db, new_user):
    """Fool's mate as the last move of a batch with another game's move: the game ends
    and the winner is credited, as a move stored alone would."""
    mated, ids = _new_game(games, db, new_user)
    other, other_ids = _new_game(games, db, new_user)
    for ply, uci in enumerate(["f2f3", "e7e5", "g2g4"], start=1):
        color = chess.WHITE if ply % 2 else chess.BLACK
        record = _record(ply, chess.Move.from_uci(uci))
        play(games, ids[color], mated, record)
    results = db.write_jobs(
        [
            moves_for(games).job(
                other_ids[chess.WHITE], other, _record(1, chess.Move.from_uci("e2e4"))
            ),
            moves_for(games).job(ids[chess.BLACK], mated, _record(4, chess.Move.from_uci("d8h4"))),
        ]
    )
    assert results == [None, None]
    row = _row(db, mated)
    assert row.status == STATUS_FINISHED and row.winner == 2  # black
    with db.engine.connect() as c:
        wins = c.execute(text("SELECT wins FROM users WHERE id = :u"), {"u": ids[chess.BLACK]})
        assert wins.scalar_one() == 1


def test_a_group_that_fails_runs_each_job_alone(db: Database):
    """A fault in a group's run undoes the whole group (PostgreSQL: the batch; SQLite:
    the group's savepoint), and each job then runs alone."""
    runs: list[str] = []

    class Job:
        def __init__(self, name: str) -> None:
            self.name = name

        def __call__(self, tx: Tx) -> str:
            runs.append(f"alone {self.name}")
            tx.conn.execute(text("SELECT 1"))
            return self.name

        @staticmethod
        def together(tx: Tx, jobs: list[Job]) -> list[str]:
            runs.append("together")
            raise StorageError("a fault in the group")

    assert db.write_jobs([Job("x"), Job("y")]) == ["x", "y"]
    assert runs == ["together", "alone x", "alone y"]


def test_batched_spar_reads_match_single_ones(games, db, new_user):
    """A batch of SPAR reads (``PreparedMany`` on PostgreSQL, whose rows lead with the
    read's ordinal; ``Prepared.all_each`` on SQLite) against the single statement, for a
    game with moves, one without moves after the asked ply, and no game at all."""
    played, ids = _new_game(games, db, new_user)
    empty, _ = _new_game(games, db, new_user)
    board = chess.Board()
    for uci in ["e2e4", "e7e5", "g1f3", "b8c6"]:
        record = _record(len(board.move_stack) + 1, chess.Move.from_uci(uci))
        play(games, ids[board.turn], played, record)
        board.push_uci(uci)
    asks = [(played, 0), (empty, 0), (played, 2), (999_999_999, 0), (played, 4), (played, 3)]
    params = [{"gid": gid, "after": after} for gid, after in asks]
    with db.read_each() as conn:
        single = [[tuple(r) for r in PLAYERS_AND_MOVES_AFTER_ONE.all(conn, **p)] for p in params]
        if db.is_sqlite:
            many = [
                [tuple(r) for r in rows]
                for rows in PLAYERS_AND_MOVES_AFTER_ONE.all_each(conn, params)
            ]
        else:
            found = PLAYERS_AND_MOVES_AFTER.all_each(conn, params)
            ordinals = [{r.i for r in rows} for rows in found]
            assert ordinals == [{1}, {2}, {3}, set(), {5}, {6}]
            many = [[tuple(r)[1:] for r in rows] for rows in found]
    assert many == single
    assert [len(rows) for rows in single] == [4, 1, 2, 0, 1, 1]  # empty, 4: no move


def test_reads_queued_from_a_loop_get_their_own_answers(games, db, new_user):
    """Many SPARs and STATs queued at once from an event loop (the reader thread on
    PostgreSQL; read inline on SQLite): each gets its own answer or refusal."""
    played, ids = _new_game(games, db, new_user)
    stranger = user_id(db, new_user("bx"))
    for ply, uci in enumerate(["e2e4", "e7e5", "g1f3"], start=1):
        color = chess.WHITE if ply % 2 else chess.BLACK
        record = _record(ply, chess.Move.from_uci(uci))
        play(games, ids[color], played, record)
    white = ids[chess.WHITE]

    moves = moves_for(games)

    async def spar(caller: int, game_id: int, after: int) -> list[MoveRecord]:
        return moves_of(await moves.move_rows(game_id, after), caller, game_id, after)

    async def stat(caller: int, game_id: int) -> GameStatus:
        return status_of(await moves.game_rows(game_id), caller, game_id)

    async def ask() -> list[object]:
        work = [spar(white, played, after) for after in range(4)]
        work += [spar(stranger, played, 0), stat(white, played)]
        work += [stat(white, 999_999_999)]
        return await asyncio.gather(*work, return_exceptions=True)

    answers = asyncio.run(ask())
    assert [len(a) for a in answers[:3]] == [3, 2, 1]  # type: ignore[arg-type]
    assert isinstance(answers[3], Failure) and answers[3].kind is Refusal.NO_MORE_MOVES
    assert isinstance(answers[4], Failure) and answers[4].kind is Refusal.NOT_A_PLAYER
    assert answers[5].next_ply == 4 and answers[5].color == "B"  # type: ignore[union-attr]
    assert isinstance(answers[6], Failure) and answers[6].kind is Refusal.NO_SUCH_GAME
