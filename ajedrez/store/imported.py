"""The SQL of an import from another server (``ajedrez-admin import espol``): rows written
with the values the old server gave them (game numbers, admission dates, wins), the
record of each (``imported_rows``), and the lookups that tell whether a row was imported
already. Each function runs in the caller's transaction; every ``changed_at`` it writes
is the transaction's stamp, so clients that sync by fecha see the imported rows as a
change made now.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import insert, or_, select, update

from ajedrez.domain.values import REMOVED_GAME, STATUS_ACTIVE, WINNER_BLACK, WINNER_WHITE
from ajedrez.domain.values import game_name as format_partida
from ajedrez.domain.views import NotatedMove
from ajedrez.store import statements as st
from ajedrez.store.models import (
    Game,
    GameRequest,
    ImportedRow,
    Move,
    Removal,
    Subscription,
    User,
)
from ajedrez.store.tx import CHUNK, Tx


@dataclass(frozen=True)
class AccountFound:
    name: str
    admitted_at: int
    comment: str


class GameValues(Protocol):
    """A game as it is to be stored, with its number and its players' names."""

    @property
    def game_id(self) -> int: ...
    @property
    def white(self) -> str: ...
    @property
    def black(self) -> str: ...
    @property
    def created_at(self) -> int: ...
    @property
    def status(self) -> int: ...
    @property
    def winner(self) -> int: ...
    @property
    def req_white(self) -> int: ...
    @property
    def req_black(self) -> int: ...
    @property
    def fen(self) -> str: ...
    @property
    def base_ply(self) -> int: ...
    @property
    def base_fen(self) -> str | None: ...
    @property
    def end_reason(self) -> str | None: ...
    @property
    def finished_at(self) -> int | None: ...
    @property
    def moves(self) -> Sequence[NotatedMove]: ...


def _chunks(items: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


# -- the record of what was imported --------------------------------------------------------

USER, REQUEST, GAME, CHALLENGE = "user", "request", "game", "challenge"


def record(tx: Tx, kind: str, keys: Sequence[tuple[str, str]]) -> None:
    """Record rows written by the import, each by its key in the 1995 files: (name, '')
    for a user or a request, (P#######, '') for a game, (challenger, challenged) for a
    challenge."""
    for chunk in _chunks(keys):
        tx.conn.execute(
            insert(ImportedRow),
            [
                {
                    "kind": kind,
                    "subject": subject,
                    "challenged": challenged,
                    "imported_at": tx.stamp,
                }
                for subject, challenged in chunk
            ],
        )


def recorded(tx: Tx, kind: str, subjects: Sequence[str]) -> set[tuple[str, str]]:
    """The keys (subject, challenged) recorded as imported of this kind among those
    whose subject is one of ``subjects``, spelled exactly so."""
    found: set[tuple[str, str]] = set()
    for chunk in _chunks(sorted(set(subjects))):
        rows = tx.conn.execute(
            select(ImportedRow.subject, ImportedRow.challenged).where(
                ImportedRow.kind == kind, ImportedRow.subject.in_(chunk)
            )
        )
        found.update((r.subject, r.challenged) for r in rows)
    return found


# -- accounts and subscription requests ----------------------------------------------------


def accounts_named(tx: Tx, names: Sequence[str]) -> dict[str, AccountFound]:
    """The accounts (active or closed) whose name is one of ``names`` in any case, by
    their name in lower case."""
    found: dict[str, AccountFound] = {}
    for chunk in _chunks(list(names)):
        lowered = [n.lower() for n in chunk]
        rows = tx.conn.execute(
            select(User.name, User.admitted_at, User.comment).where(
                or_(User.name_key.in_(lowered), User.name.in_(chunk))
            )
        )
        for r in rows:
            found.setdefault(r.name.lower(), AccountFound(r.name, r.admitted_at, r.comment))
    return found


def requests_named(tx: Tx, names: Sequence[str]) -> dict[str, AccountFound]:
    """The pending subscription requests for one of ``names`` in any case, by name in
    lower case (``admitted_at``: when it was requested)."""
    found: dict[str, AccountFound] = {}
    for chunk in _chunks(list(names)):
        lowered = [n.lower() for n in chunk]
        rows = tx.conn.execute(
            select(Subscription.name, Subscription.requested_at, Subscription.comment).where(
                or_(Subscription.name_key.in_(lowered), Subscription.name.in_(chunk))
            )
        )
        for r in rows:
            found.setdefault(r.name.lower(), AccountFound(r.name, r.requested_at, r.comment))
    return found


def add_accounts(tx: Tx, rows: Sequence[tuple[str, str, str, int, int]]) -> None:
    """Active accounts, each (name, password hash, comment, admitted at, wins)."""
    for chunk in _chunks(rows):
        tx.conn.execute(
            insert(User),
            [
                {
                    "name": name,
                    "name_key": name.lower(),
                    "password_hash": password_hash,
                    "comment": comment,
                    "active": True,
                    "admitted_at": admitted_at,
                    "changed_at": tx.stamp,
                    "wins": wins,
                }
                for name, password_hash, comment, admitted_at, wins in chunk
            ],
        )


def add_requests(tx: Tx, rows: Sequence[tuple[str, str, str]]) -> None:
    """Pending subscription requests, each (name, password hash, comment)."""
    for chunk in _chunks(rows):
        tx.conn.execute(
            insert(Subscription),
            [
                {
                    "name": name,
                    "name_key": name.lower(),
                    "password_hash": password_hash,
                    "comment": comment,
                    "requested_at": tx.stamp,
                    "requested_from": "",
                }
                for name, password_hash, comment in chunk
            ],
        )


def closed_accounts(tx: Tx, names: Iterable[str]) -> set[str]:
    """Those of ``names`` (spelled exactly so) whose account is closed."""
    found: set[str] = set()
    for chunk in _chunks(sorted(set(names))):
        rows = tx.conn.execute(
            select(User.name).where(User.name.in_(chunk), User.active.is_(False))
        )
        found.update(rows.scalars())
    return found


def user_ids(tx: Tx, names: Iterable[str]) -> dict[str, int]:
    """The ids of the accounts named exactly so."""
    found: dict[str, int] = {}
    for chunk in _chunks(sorted(set(names))):
        rows = tx.conn.execute(select(User.id, User.name).where(User.name.in_(chunk)))
        found.update({r.name: r.id for r in rows})
    return found


# -- games ---------------------------------------------------------------------------------


def games_numbered(tx: Tx, game_ids: Sequence[int]) -> dict[int, tuple[str, str, int]]:
    """(white, black, created_at) of the games with these numbers."""
    found: dict[int, tuple[str, str, int]] = {}
    for chunk in _chunks(list(game_ids)):
        rows = tx.conn.execute(
            select(
                Game.id, st.White.name.label("white"), st.Black.name.label("black"), Game.created_at
            )
            .join(st.White, st.White.id == Game.white_id)
            .join(st.Black, st.Black.id == Game.black_id)
            .where(Game.id.in_(chunk))
        )
        found.update({r.id: (r.white, r.black, r.created_at) for r in rows})
    return found


def games_purged(tx: Tx, game_ids: Sequence[int]) -> dict[int, set[str]]:
    """The names of the players told (through BAJA) that the game with one of these
    numbers was purged, by its number; a number without such a row is not given. The
    rows are kept with their accounts, closed ones too, so a purge is never forgotten."""
    numbers = {format_partida(g): g for g in game_ids}
    found: dict[int, set[str]] = {}
    for chunk in _chunks(list(numbers)):
        rows = tx.conn.execute(
            select(Removal.subject, User.name)
            .join(User, User.id == Removal.user_id)
            .where(Removal.kind == REMOVED_GAME, Removal.subject.in_(chunk))
        )
        for r in rows:
            found.setdefault(numbers[r.subject], set()).add(r.name)
    return found


def moves_played(tx: Tx, game_ids: Sequence[int]) -> dict[int, list[str]]:
    """The jugadas of these games, in the order of their plies."""
    found: dict[int, list[str]] = {g: [] for g in game_ids}
    for chunk in _chunks(list(game_ids)):
        rows = tx.conn.execute(
            select(Move.game_id, Move.jugada)
            .where(Move.game_id.in_(chunk))
            .order_by(Move.game_id, Move.ply)
        )
        for r in rows:
            found[r.game_id].append(r.jugada)
    return found


def active_pairs(tx: Tx, names: Iterable[str]) -> dict[frozenset[str], int]:
    """The pairs of players (by name) of the active games of these users, each with the
    number of its active game (the lowest, if a pair has several)."""
    pairs: dict[frozenset[str], int] = {}
    for chunk in _chunks(sorted(set(names))):
        rows = tx.conn.execute(
            select(Game.id, st.White.name.label("white"), st.Black.name.label("black"))
            .select_from(Game)
            .join(st.White, st.White.id == Game.white_id)
            .join(st.Black, st.Black.id == Game.black_id)
            .where(
                Game.status == STATUS_ACTIVE,
                or_(st.White.name.in_(chunk), st.Black.name.in_(chunk)),
            )
        )
        for r in rows:
            pair = frozenset((r.white, r.black))
            pairs[pair] = min(r.id, pairs.get(pair, r.id))
    return pairs


def add_games(tx: Tx, games: Sequence[tuple[GameValues, int, int, bool]]) -> None:
    """Games with their own numbers and their moves, each (game, white id, black id,
    credit); ``credit``: its winner is credited a win (a game that ended on import; the
    wins of the others are in the accounts)."""
    rows, moves, credited = [], [], []
    for game, white_id, black_id, credit in games:
        rows.append(
            {
                "id": game.game_id,
                "white_id": white_id,
                "black_id": black_id,
                "user_lo": min(white_id, black_id),
                "user_hi": max(white_id, black_id),
                "status": game.status,
                "winner": game.winner,
                "req_white": game.req_white,
                "req_black": game.req_black,
                "next_ply": len(game.moves) + 1,
                "fen": game.fen,
                "base_ply": game.base_ply,
                "base_fen": game.base_fen,
                "end_reason": game.end_reason,
                "created_at": game.created_at,
                "changed_at": tx.stamp,
                "finished_at": game.finished_at,
            }
        )
        moves += [
            {
                "game_id": game.game_id,
                "ply": m.ply,
                "jugada": m.jugada,
                "reverso": m.reverso,
                "posicion": m.posicion,
                "promocion": m.promocion,
                "san": m.san,
                "created_at": game.created_at,
            }
            for m in game.moves
        ]
        if credit and game.winner in (WINNER_WHITE, WINNER_BLACK):
            credited.append(white_id if game.winner == WINNER_WHITE else black_id)
    for chunk in _chunks(rows):
        tx.conn.execute(insert(Game), chunk)
    for chunk in _chunks(moves):
        tx.conn.execute(insert(Move), chunk)
    for winner_id in credited:
        tx.conn.execute(update(User).where(User.id == winner_id).values(wins=User.wins + 1))


# -- challenges ----------------------------------------------------------------------------


def challenges_among(tx: Tx, names: Iterable[str]) -> dict[frozenset[str], tuple[str, str]]:
    """The open challenges made or received by these users: (challenger, challenged) by
    the pair of their names."""
    found: dict[frozenset[str], tuple[str, str]] = {}
    maker, target = st.White, st.Black  # two aliases of users
    for chunk in _chunks(sorted(set(names))):
        rows = tx.conn.execute(
            select(maker.name.label("challenger"), target.name.label("challenged"))
            .select_from(GameRequest)
            .join(maker, maker.id == GameRequest.challenger_id)
            .join(target, target.id == GameRequest.challenged_id)
            .where(or_(maker.name.in_(chunk), target.name.in_(chunk)))
        )
        for r in rows:
            found[frozenset((r.challenger, r.challenged))] = (r.challenger, r.challenged)
    return found


def add_challenges(tx: Tx, rows: Sequence[tuple[int, int]]) -> None:
    """Open challenges without a clock, each (challenger id, challenged id), made now."""
    for chunk in _chunks(rows):
        tx.conn.execute(
            insert(GameRequest),
            [
                {
                    "challenger_id": a,
                    "challenged_id": b,
                    "user_lo": min(a, b),
                    "user_hi": max(a, b),
                    "created_at": tx.stamp,
                    "private": False,
                }
                for a, b in chunk
            ],
        )
