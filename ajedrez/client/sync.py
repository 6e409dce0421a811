"""Bring the local cache up to date, the seed's way (sections 4.3.2 and 4.4).

1. ``JAUT:<fecha>``, ``BAJA:<fecha>``, ``TRAN:<fecha>`` and ``PPEN:<fecha>`` with the
   fecha the server answered last time (``0`` on a fresh machine: everything), storing the
   new fecha each answers. The server promises that sending back the last fecha never
   misses a change; a record may come twice, which is harmless here. BAJA comes before
   TRAN and PPEN, which report only what exists: a purged game is marked removed (and
   kept, in the player's archive); ``SOLI:1`` then gives the whole list of open
   challenges with their time controls, so one declined or withdrawn leaves the local list.
2. For every game PPEN reports: ``STAT``, then, when the server's next ply is ahead of the
   cache, ``SPAR`` from the last ply held locally, so only the missing plies travel; then
   ``RELJ`` for its clocks (or, once it has ended, how it ended). PPEN reports every
   change of a game's clock too (a draw offer, an opponent's leave), so the clocks of the
   games it does not report are as they were. A full sync (PPEN:0) also marks removed the
   local games the server no longer lists.
3. ``SRNK`` for the cached ranking.

A server older than clocks answers RELJ ``800`` and SOLI:1 ``801``: the sync goes on
without clocks and without time controls.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import chess
import chess.pgn

from ajedrez.client.cache import Cache, CachedMove
from ajedrez.client.chessboard import board_from, to_move
from ajedrez.client.clocks import local_ms
from ajedrez.client.errors import ProtocolError, ProtocolFailure, ReplyError
from ajedrez.client.protocol import Client
from ajedrez.domain.export import GameFacts, read_facts
from ajedrez.espol.codes import Reply
from ajedrez.espol.records import REMOVED_GAME, GameStatus, MoveRecord, OpenChallenge

# How many of the last plies held a sync reads again to see that they are still the game's.
RECHECK_PLIES = 2

LocalClock = Callable[[], int]  # this machine's time in ms; the tests pass their own


@dataclass
class SyncReport:
    full: bool = False
    players: int = 0
    new_players: int = 0
    new_challenges: list[str] = field(default_factory=list)
    closed_challenges: list[str] = field(default_factory=list)  # declined or withdrawn
    games_removed: list[str] = field(default_factory=list)  # purged on the server
    games_changed: list[str] = field(default_factory=list)
    new_moves: dict[str, int] = field(default_factory=dict)
    takebacks_declined: list[str] = field(default_factory=list)  # asked here, then declined
    spar_requests: int = 0

    @property
    def total_new_moves(self) -> int:
        return sum(self.new_moves.values())


@dataclass
class GameSync:
    status: GameStatus
    new_moves: int
    spar_requests: int
    takeback_declined: bool = False


def sync_game(client: Client, cache: Cache, gid: str, *, clock: LocalClock = local_ms) -> GameSync:
    """STAT one game, then SPAR only the plies the cache lacks, then RELJ; store them."""
    before = cache.game(gid)
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
        # The last plies held are read again with the new ones: a takeback (two in a row,
        # one by each player) followed by other moves leaves as many plies, not the same.
        recheck = min(local_last, RECHECK_PLIES)
        after = local_last - recheck
        records: list[MoveRecord] = []
        if server_last > after:
            records = client.spar(gid, after)
            spar_requests += 1
            for i, rec in enumerate(records):
                if rec.ply != after + 1 + i:
                    raise ProtocolError(
                        f"SPAR {gid} after {after} answered ply {rec.ply} out of order"
                    )
            if [_fields(r) for r in records[:recheck]] != [_fields(m) for m in held[after:]]:
                with cache.transaction():  # taken back and played otherwise: fetch it whole
                    cache.drop_moves(gid)
                continue
            records = records[recheck:]
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
            break
        # A move arrived between STAT and SPAR: STAT again so status and moves agree.
    learn_facts(client, cache, st)
    learn_clock(client, cache, st, clock=clock)
    # My request gone with my move still the last: the opponent declined it.
    declined = (
        before is not None
        and before.takeback == before.color
        and st.takeback is None
        and st.active
        and st.next_ply == before.next_ply
    )
    if declined:
        with cache.transaction():
            cache.note_takeback_declined(gid, st.next_ply - 1)
    return GameSync(st, new_total, spar_requests, declined)


def _fields(move: MoveRecord | CachedMove) -> tuple[int, str, int, str, int]:
    return (move.ply, move.jugada, move.reverso, move.posicion, move.promocion)


def learn_clock(client: Client, cache: Cache, st: GameStatus, *, clock: LocalClock) -> None:
    """RELJ for a game that changed: its clocks at the server's ``ahora``, stored with the
    offset from the local clock, or how it ended. Skipped where nothing can have changed:
    a game's time control is fixed (an active game without a clock has none to show) and
    an end is final."""
    held = cache.clock(st.game)
    if held is not None and (held.status.end_reason or (st.active and not held.has_clock)):
        return
    if "RELJ" in client.unknown:
        return
    # The local time before asking: the countdown then starts no later than the server's
    # ahora, so it never shows more time than is left.
    asked = clock()
    try:
        status = client.relj(st.game)
    except ProtocolFailure as e:
        if e.code == Reply.F_CMDINV:  # a server older than clocks
            return
        raise
    with cache.transaction():
        cache.store_clock(status, status.now_ms - asked)


def open_challenges(client: Client) -> list[OpenChallenge]:
    """SOLI:1, the open challenges with their time controls; plain SOLI from a server
    older than time controls (control None: not known)."""
    try:
        return client.soli(controls=True)
    except ProtocolFailure as e:
        if e.code not in (Reply.F_NFIELDS, Reply.F_PARAM):
            raise
    return client.soli()


def learn_facts(client: Client, cache: Cache, st: GameStatus) -> None:
    """The start and end days, the end reason and each move's clock, which STAT and SPAR
    do not carry, from the server's PGN (PGNX): once when the game is new here, once more
    when it has ended, so that `ajedrez export` writes the server's text."""
    known = cache.facts(st.game)
    held = cache.clock(st.game)
    # A full sync fetches the moves again, without the clocks only the PGN carries.
    clocks_lost = (
        not st.active
        and held is not None
        and held.has_clock
        and any(m.clock_ms is None for m in cache.moves(st.game))
    )
    if known is not None and (st.active or known.ended is not None) and not clocks_lost:
        return
    try:
        text = client.pgnx(st.game)
    except ReplyError:
        # Without them the export falls back on what the local data can tell.
        return
    facts = read_facts(text)
    if st.active:
        # The game may have ended after the STAT: its end waits for the STAT that says so.
        facts = GameFacts(facts.started, None, None)
    with cache.transaction():
        cache.store_facts(st.game, facts)
        cache.store_move_clocks(st.game, move_clocks(text))


def move_clocks(pgn: str) -> dict[int, int]:
    """ply -> the mover's bank after it (ms), from a PGN's ``[%clk]`` comments."""
    game = chess.pgn.read_game(io.StringIO(pgn))
    if game is None:
        return {}
    found = {}
    for ply, node in enumerate(game.mainline(), 1):
        seconds = node.clock()
        if seconds is not None:
            found[ply] = round(seconds * 1000)
    return found


def record_own_move(cache: Cache, gid: str, rec: MoveRecord, san: str) -> None:
    with cache.transaction():
        cache.add_moves(gid, [(rec, san, int(time.time()))])


def sync_all(
    client: Client, cache: Cache, *, full: bool = False, clock: LocalClock = local_ms
) -> SyncReport:
    report = SyncReport(full=full)

    since = 0 if full else cache.fecha("JAUT")
    fecha, names = client.jaut(since)
    with cache.transaction():
        report.new_players = cache.add_players(names, replace=since == 0)
        cache.set_fecha("JAUT", fecha)

    since = 0 if full else cache.fecha("BAJA")
    fecha, removals = client.baja(since)
    with cache.transaction():
        for removal in removals:
            if removal.kind == REMOVED_GAME:
                if cache.mark_removed(removal.subject):
                    report.games_removed.append(removal.subject)
            else:
                report.closed_challenges.append(removal.subject)
        cache.set_fecha("BAJA", fecha)

    since = 0 if full else cache.fecha("TRAN")
    fecha, challengers = client.tran(since)
    challenges = open_challenges(client)
    with cache.transaction():
        held = set(cache.challenge_names("in"))
        cache.replace_challenges(challenges)
        report.new_challenges = [n for n in dict.fromkeys(challengers) if n not in held]
        cache.set_fecha("TRAN", fecha)
    still_open = {c.user for c in challenges}
    report.closed_challenges = [
        n for n in dict.fromkeys(report.closed_challenges) if n not in still_open
    ]

    since = 0 if full else cache.fecha("PPEN")
    fecha, summaries = client.ppen(since)
    if since == 0:
        listed = {s.game for s in summaries}
        with cache.transaction():
            for g in cache.games():
                if g.id not in listed and cache.mark_removed(g.id):
                    report.games_removed.append(g.id)
    for summary in summaries:
        if full:  # fetched again whole; only games the server no longer has are kept as held
            with cache.transaction():
                cache.drop_moves(summary.game)
        result = sync_game(client, cache, summary.game, clock=clock)
        report.games_changed.append(summary.game)
        report.spar_requests += result.spar_requests
        if result.new_moves:
            report.new_moves[summary.game] = result.new_moves
        if result.takeback_declined:
            report.takebacks_declined.append(summary.game)
        if result.status.active:
            # One active game per pair: no challenge between the two can still be open.
            with cache.transaction():
                cache.remove_challenges(summary.opponent)
    # Active games that last changed before this machine kept clocks (a cache an older
    # client wrote): PPEN will not report them until they change again.
    clocks = cache.clocks()
    for g in cache.games():
        if g.status_record.active and not g.removed and g.id not in clocks:
            learn_clock(client, cache, g.status_record, clock=clock)
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
