"""Migration 0012 on both stores: a game whose stored clock ran for a draw offer's
receiver gets the side to move's clock, running since the offer; no other game changes."""

from __future__ import annotations

from pathlib import Path

import chess
from sqlalchemy import text

from tests.support.clock import HOUR_MS, MINUTE_MS, START_MS
from tests.support.upgrades import HEAD, empty_database, migrate_to

S = START_MS
BANK = 10 * MINUTE_MS


def _user(conn, name: str) -> int:  # type: ignore[no-untyped-def]
    sql = (
        "INSERT INTO users (name, name_key, password_hash, comment, active, admitted_at, "
        "changed_at, wins) VALUES (:n, :n, 'x', '', true, 0, 0, 0) RETURNING id"
    )
    return int(conn.execute(text(sql), {"n": name}).scalar_one())


def _game(conn, white: int, black: int, next_ply: int, req: tuple[int, int], clock):  # type: ignore[no-untyped-def]
    white_ms, black_ms, since, deadline = clock
    row = {
        "w": white,
        "b": black,
        "lo": min(white, black),
        "hi": max(white, black),
        "rw": req[0],
        "rb": req[1],
        "ply": next_ply,
        "fen": chess.STARTING_FEN,
        "wms": white_ms,
        "bms": black_ms,
        "since": since,
        "deadline": deadline,
        "warn": deadline - MINUTE_MS,
    }
    sql = (
        "INSERT INTO games (white_id, black_id, user_lo, user_hi, status, winner, req_white, "
        "req_black, next_ply, fen, created_at, changed_at, tc_initial_ms, tc_increment_ms, "
        "white_ms, black_ms, clock_since_ms, deadline_ms, warn_at_ms) VALUES (:w, :b, :lo, "
        ":hi, 0, 0, :rw, :rb, :ply, :fen, 0, 0, 600000, 0, :wms, :bms, :since, :deadline, "
        ":warn) RETURNING id"
    )
    return int(conn.execute(text(sql), row).scalar_one())


def test_an_offer_by_the_side_to_move_gives_it_back_its_clock(tmp_path: Path) -> None:
    with empty_database(tmp_path) as (_url, database):
        migrate_to(database, "0011")
        offer_at = S + HOUR_MS
        with database.engine.begin() as conn:
            ids = [_user(conn, n) for n in ("ana", "bob", "carla", "dan", "eva", "fede")]
            # white, to move (ply 1), offered: black's clock ran from the offer
            handed = _game(
                conn, ids[0], ids[1], 1, (1, 0), (BANK - MINUTE_MS, BANK, offer_at, offer_at + BANK)
            )
            # black offered on white's move: white's clock ran all along
            kept = _game(conn, ids[2], ids[3], 3, (0, 1), (BANK, BANK, S, S + BANK))
            # black, to move (ply 2), offered: white's clock ran from the offer
            black_handed = _game(
                conn,
                ids[4],
                ids[5],
                2,
                (0, 1),
                (BANK, BANK - 2 * MINUTE_MS, offer_at, offer_at + BANK),
            )
        migrate_to(database, HEAD)
        with database.engine.connect() as conn:
            found = {
                r.id: (r.deadline_ms, r.warn_at_ms, r.white_offer_ply, r.black_offer_ply)
                for r in conn.execute(
                    text(
                        "SELECT id, deadline_ms, warn_at_ms, white_offer_ply, black_offer_ply "
                        "FROM games"
                    )
                )
            }
        assert found[handed] == (offer_at + BANK - MINUTE_MS, None, None, None)
        assert found[kept] == (S + BANK, S + BANK - MINUTE_MS, None, None)
        assert found[black_handed] == (offer_at + BANK - 2 * MINUTE_MS, None, None, None)
