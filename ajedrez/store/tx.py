"""A transaction as the domain sees it: ``Tx`` carries the connection and the stamp
(the fecha written into every ``changed_at`` it touches), and one method per question
or change the domain asks of the store (``ajedrez.domain.ports.StoreTx``). The SQL of
each is here or in the query modules it is built from; no rule of the game is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import Connection, insert

from ajedrez.domain.events import Event
from ajedrez.store import statements as st
from ajedrez.store.account_queries import AccountQueries
from ajedrez.store.block_queries import BlockQueries
from ajedrez.store.event_data import encode as encode_fields
from ajedrez.store.game_queries import GameQueries
from ajedrez.store.guest_queries import GuestQueries
from ajedrez.store.live_queries import LiveQueries
from ajedrez.store.models import AdminAudit, Removal
from ajedrez.store.presence_queries import PresenceQueries
from ajedrez.store.token_queries import TokenQueries

# Rows per statement when many are written at once: far below any driver's limit on
# bound parameters.
CHUNK = 500


@dataclass
class Tx(
    GameQueries,
    AccountQueries,
    GuestQueries,
    LiveQueries,
    BlockQueries,
    PresenceQueries,
    TokenQueries,
):
    conn: Connection
    stamp: int
    # The events of this transaction, written by ``flush_events`` just before it commits.
    events: list[Event] = field(default_factory=list)
    # What the database does once a transaction has written events (PostgreSQL: NOTIFY).
    on_events: Callable[[Connection, int], None] | None = None
    # The events written so far, for ``Database.on_commit`` once the transaction commits.
    written: list[Event] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def flush_events(self) -> int | None:
        """Write the events emitted so far, numbered from the counter; returns the last
        id (None: there were none). Called as the transaction's last write, as the
        counter's row then stays locked for the shortest time (``models.Event``)."""
        if not self.events:
            return None
        events, self.events = self.events, []
        self.written.extend(events)
        last = int(st.BUMP_EVENTS.first(self.conn, n=len(events)).last)
        first = last - len(events) + 1
        st.INSERT_EVENT.run_each(
            self.conn,
            [
                {
                    "id": first + i,
                    "at_ms": e.at_ms,
                    "kind": e.kind,
                    "game_id": e.game_id,
                    "user_a": e.user_a,
                    "user_b": e.user_b,
                    "actor_id": e.actor_id,
                    "observers": e.observers,
                    "data": encode_fields(e.fields),
                }
                for i, e in enumerate(events)
            ],
        )
        if self.on_events is not None:
            self.on_events(self.conn, last)
        return last

    def note_removals(self, kind: str, rows: list[tuple[int, str]]) -> None:
        """Record that ``subject`` went away for each (user id, subject), for BAJA."""
        for start in range(0, len(rows), CHUNK):
            self.conn.execute(
                insert(Removal),
                [
                    {"user_id": user_id, "kind": kind, "subject": subject, "removed_at": self.stamp}
                    for user_id, subject in rows[start : start + CHUNK]
                ],
            )

    def audit(self, by: str | None, action: str, target: str = "", detail: str = "") -> None:
        """Note an administrator's change in the transaction of the change itself, so a
        change is never without its record; nothing when ``by`` is None (not an admin
        action). Never pass a password or a hash in ``detail``."""
        if by is None:
            return
        self.conn.execute(
            insert(AdminAudit).values(
                at=self.stamp, actor=by[:64], action=action, target=target[:64], detail=detail
            )
        )
