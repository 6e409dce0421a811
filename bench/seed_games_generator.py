"""The games ``bench.seed_games`` writes, decided in Python before anything is written.

* **Templates**: ``--templates`` (2,000) distinct random games played with python-chess
  (random legal moves, lengths uniform in ``--min-plies``..``--max-plies``, 10..70, mean
  40). Per ply: jugada, posicion, promocion and SAN exactly as ``ajedrez.domain.games``
  stores them; per template: the final FEN, ``base_ply``/``base_fen`` (the position after
  the last irreversible move in python-chess's sense, as the server computes them) and
  the outcome when the rules ended the game. Every seeded game is one template's moves,
  so the data is consistent: the server accepts the next legal move of any active game.
* **Users**: ``--users`` (20,000) bulk users ``u00000``... and ``--probe-users`` (20)
  ``probe_00000``..., all with the password ``bench-password`` (one shared argon2 hash,
  as ``bench/seed.py``). Ids are explicit: bulk users 1..U, probe users after them.
* **Probe games** (last ids, the same in every database whatever ``--games``): probe
  user *i* plays *i±1 .. i±5* (mod 20), so each has exactly 10 games, 4 of them active
  (offsets 1 and 2), the others finished by resignation or agreement; every probe game
  is 36..44 plies long, created 2-4 days ago and changed within the last day. They come
  from their own random generator, so the 1k and 1M databases hold the same probe data.
* **Bulk games** (ids 1..N, between bulk users only): ~90% finished (by the rules when
  the template ended so, else resignation or agreement), ~10% active with a pair that
  has no other active game (the partial unique index), created over the last year, one
  move every 1 to 120 minutes, all ended at least a day ago. Winners' ``users.wins`` are
  credited.
* **Moves** are not built here: a game is a link (game, template, first stamp, step)
  that the database expands (``bench/seed_games_writers.py``). A move's ``created_at`` is
  ``c0 + ply * step``, the game's ``changed_at`` is that of its last ply (or later), and
  every user was admitted before any game.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import chess

from ajedrez.domain.rules import AUTOMATIC_ENDINGS
from ajedrez.domain.values import (
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
from bench.report import log
from bench.seed import user_names

DAY = 86_400
YEAR = 365 * DAY
BULK_PREFIX = "u"
PROBE_PREFIX = "probe_"
PROBE_GAMES_PER_USER = 10  # offsets 1..5 either way
PROBE_ACTIVE_OFFSETS = 2  # offsets 1 and 2: 4 active games per probe user
PROBE_MIN_PLIES, PROBE_MAX_PLIES = 36, 44

# The rows below are tuples in these columns' order, which the writers name.
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
# One row of the staging table of template moves: template id, then a TemplateMove.
TemplateRow = tuple[int, int, str, str, int, str]
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


def template_rows(templates: Sequence[Template]) -> Iterator[TemplateRow]:
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
