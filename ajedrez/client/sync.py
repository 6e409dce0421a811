"""Bring the local cache up to date, the seed's way (sections 4.3.2 and 4.4).

1. ``JAUT:<fecha>``, ``TRAN:<fecha>`` and ``PPEN:<fecha>`` with the fecha the server
   answered last time (``0`` on a fresh machine: everything), storing the new fecha each
   answers. The server promises that sending back the last fecha never misses a change;
   a record may come twice, which is harmless here.
2. For every game PPEN reports: ``STAT``, then, when the server's next ply is ahead of the
   cache, ``SPAR`` from the last ply held locally, so only the missing plies travel.
3. ``SRNK`` for the cached ranking.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import chess

from .cache import Cache
from .chessboard import board_from, to_move
from .errors import ProtocolError
from .protocol import Client, GameStatus, MoveRecord


@dataclass
class SyncReport:
    full: bool = False
    players: int = 0
    new_players: int = 0
    new_challenges: list[str] = field(default_factory=list)
    games_changed: list[str] = field(default_factory=list)
    new_moves: dict[str, int] = field(default_factory=dict)
    spar_requests: int = 0

    @property
    def total_new_moves(self) -> int:
        return sum(self.new_moves.values())


@dataclass
class GameSync:
    status: GameStatus
    new_moves: int
    spar_requests: int


def sync_game(client: Client, cache: Cache, gid: str) -> GameSync:
    """STAT one game, then SPAR only the plies the cache lacks; store both."""
    spar_requests = 0
    new_total = 0
    for _attempt in range(3):
        st = client.stat(gid)
        server_last = st.next_ply - 1
        held = cache.moves(gid)
        if len(held) != (held[-1].ply if held else 0) or len(held) > server_last:
            # Not a prefix of the server's game (a reset server?): fetch it again whole.
            with cache.transaction():
                cache.drop_moves(gid)
            held = []
        local_last = len(held)
        records: list[MoveRecord] = []
        if server_last > local_last:
            records = client.spar(gid, local_last)
            spar_requests += 1
            for i, rec in enumerate(records):
                if rec.ply != local_last + 1 + i:
                    raise ProtocolError(
                        f"SPAR {gid} after {local_last} answered ply {rec.ply} out of order"
                    )
        board = board_from((m.jugada, m.promocion) for m in held)
        rows: list[tuple[MoveRecord, str, int | None]] = []
        for rec in records:
            move = to_move(rec.jugada, rec.promocion)
            san = board.san(move) if board.is_legal(move) else rec.jugada
            board.push(move)
            # SPAR carries no times: the last ply is dated by STAT's fecha (the game's last
            # change); earlier ones stay undated.
            rows.append((rec, san, st.fecha if rec.ply == server_last else None))
        with cache.transaction():
            cache.store_status(st)
            cache.add_moves(gid, rows)
        new_total += len(rows)
        if not records or records[-1].ply <= server_last:
            return GameSync(st, new_total, spar_requests)
        # A move arrived between STAT and SPAR: STAT again so status and moves agree.
    return GameSync(st, new_total, spar_requests)


def record_own_move(cache: Cache, gid: str, rec: MoveRecord, san: str) -> None:
    with cache.transaction():
        cache.add_moves(gid, [(rec, san, int(time.time()))])


def sync_all(client: Client, cache: Cache, *, full: bool = False) -> SyncReport:
    report = SyncReport(full=full)

    since = 0 if full else cache.fecha("JAUT")
    fecha, names = client.jaut(since)
    with cache.transaction():
        report.new_players = cache.add_players(names, replace=since == 0)
        cache.set_fecha("JAUT", fecha)

    since = 0 if full else cache.fecha("TRAN")
    fecha, challengers = client.tran(since)
    with cache.transaction():
        report.new_challenges = cache.add_challenges(challengers, "in", replace=since == 0)
        cache.set_fecha("TRAN", fecha)

    since = 0 if full else cache.fecha("PPEN")
    fecha, summaries = client.ppen(since)
    for summary in summaries:
        result = sync_game(client, cache, summary.game)
        report.games_changed.append(summary.game)
        report.spar_requests += result.spar_requests
        if result.new_moves:
            report.new_moves[summary.game] = result.new_moves
        if result.status.active:
            # One active game per pair: no challenge between the two can still be open.
            with cache.transaction():
                cache.remove_challenges(summary.opponent)
    with cache.transaction():
        cache.set_fecha("PPEN", fecha)

    ranking = client.srnk()
    with cache.transaction():
        cache.store_ranking(ranking)
        cache.mark_synced()
    report.players = len(cache.players())
    return report


def board_of(cache: Cache, gid: str) -> chess.Board:
    return board_from((m.jugada, m.promocion) for m in cache.moves(gid))
