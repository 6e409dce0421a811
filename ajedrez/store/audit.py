"""The administrator's trail: every change made through ``ajedrez-admin``, who ran it
(the operating-system user), when and what. Each entry is written in the transaction of
the change itself (``Tx.audit``), so a change is never without its record, nor a record
without its change; this module reads the trail back."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from ajedrez.store.db import Database
from ajedrez.store.models import AdminAudit


@dataclass(frozen=True)
class AuditEntry:
    at: int
    actor: str
    action: str
    target: str
    detail: str


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
