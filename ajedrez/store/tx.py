"""A transaction as the domain sees it: ``Tx`` carries the connection and the stamp
(the fecha written into every ``changed_at`` it touches), and one method per question
or change the domain asks of the store (``ajedrez.domain.ports.StoreTx``). The SQL of
each is here or in the two query modules it is built from; no rule of the game is.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, insert

from ajedrez.store.account_queries import AccountQueries
from ajedrez.store.game_queries import GameQueries
from ajedrez.store.models import AdminAudit, Removal

# Rows per statement when many are written at once: far below any driver's limit on
# bound parameters.
CHUNK = 500


@dataclass
class Tx(GameQueries, AccountQueries):
    conn: Connection
    stamp: int

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
