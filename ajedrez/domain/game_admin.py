"""The administrator's side of games (``ajedrez-admin games``): every game listed, and
finished games purged, each player told through the removals (BAJA)."""

from __future__ import annotations

from dataclasses import dataclass

from ajedrez.domain import clocks
from ajedrez.domain.ports import Store
from ajedrez.domain.timecontrol import control_name
from ajedrez.domain.values import REMOVED_GAME, game_name

PURGE_AUDIT_IDS = 20  # the audit trail names this many purged games, then counts the rest


@dataclass(frozen=True)
class GameListing:
    game_id: int
    white: str
    black: str
    status: int
    winner: int
    plies: int
    changed_at: int
    end_reason: str | None
    control: str
    deadline_ms: int | None


class GameAdmin:
    def __init__(self, store: Store) -> None:
        self.store = store

    def list_all(self) -> list[GameListing]:
        with self.store.reading() as tx:
            rows = tx.list_games()
        return [
            GameListing(
                r.id,
                r.white,
                r.black,
                r.status,
                r.winner,
                r.next_ply - 1,
                r.changed_at,
                r.end_reason,
                control_name(clocks.control_of(r)),
                r.deadline_ms,
            )
            for r in rows
        ]

    def purge_finished(
        self,
        *,
        finished_before: int | None = None,
        dry_run: bool = False,
        by: str | None = None,
    ) -> list[int]:
        """Remove finished games (those finished before ``finished_before``, a fecha,
        when given) and their moves; returns their ids, or with ``dry_run`` the ids it
        would remove. Both players of each are told through BAJA. ``by``: the
        administrator, for the audit trail."""
        with self.store.writing() as tx:
            rows = tx.finished_games(finished_before)
            ids = [r.id for r in rows]
            if dry_run or not ids:
                return ids
            tx.delete_games(ids)
            tx.note_removals(
                REMOVED_GAME,
                [(player, game_name(r.id)) for r in rows for player in (r.white_id, r.black_id)],
            )
            shown = ", ".join(game_name(i) for i in ids[:PURGE_AUDIT_IDS])
            more = f" and {len(ids) - PURGE_AUDIT_IDS} more" if len(ids) > PURGE_AUDIT_IDS else ""
            cutoff = "" if finished_before is None else f" finished before {finished_before}"
            tx.audit(by, "games purge", "", f"{len(ids)} game(s){cutoff}: {shown}{more}")
            return ids
