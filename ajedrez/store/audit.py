"""The administrator's trail: every change made through ``ajedrez-admin``, who ran it
(the operating-system user), when and what. Written in the transaction of the change
itself, so a change is never without its record, nor a record without its change."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import insert, select

from ajedrez.store.db import Database, Tx
from ajedrez.store.models import AdminAudit


@dataclass(frozen=True)
class AuditEntry:
    at: int
    actor: str
    action: str
    target: str
    detail: str


def record(tx: Tx, by: str | None, action: str, target: str = "", detail: str = "") -> None:
    """Note an administrator's change; nothing when ``by`` is None (not an admin action).
    Never pass a password or a hash in ``detail``."""
    if by is None:
        return
    tx.conn.execute(
        insert(AdminAudit).values(
            at=tx.stamp, actor=by[:64], action=action, target=target[:64], detail=detail
        )
    )


def entries(db: Database, limit: int | None = None) -> list[AuditEntry]:
    """The trail, oldest first; with ``limit``, only the newest ``limit`` entries."""
    with db.read() as conn:
        query = select(
            AdminAudit.at, AdminAudit.actor, AdminAudit.action, AdminAudit.target, AdminAudit.detail
        ).order_by(AdminAudit.id.desc())
        if limit is not None:
            query = query.limit(limit)
        rows = conn.execute(query).all()
    return [AuditEntry(*row) for row in reversed(rows)]
