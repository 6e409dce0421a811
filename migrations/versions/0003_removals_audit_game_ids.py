"""removals (what sync must tell clients went away), admin_audit, game ids never reused

- ``removals``: one row per player for each purged game and each challenge closed
  without a game, reported by BAJA.
- ``admin_audit``: every change made through ``ajedrez-admin``.
- SQLite: ``games`` is rebuilt with AUTOINCREMENT, so an id freed by a purge is never
  given again (PostgreSQL's sequence already never goes back). ``migrations/env.py``
  turns SQLite's foreign keys off around migrations, as SQLite's own procedure for
  rebuilding a table requires: with them on, dropping the old table would cascade to
  ``moves``.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 11:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _rebuild_games(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table(
        "games", recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
    ):
        pass


def upgrade() -> None:
    op.create_table(
        "removals",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=1), nullable=False),
        sa.Column("subject", sa.String(length=32), nullable=False),
        sa.Column("removed_at", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("kind IN ('P', 'R')", name=op.f("ck_removals_kind")),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_removals_user_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_removals")),
    )
    with op.batch_alter_table("removals", schema=None) as batch_op:
        batch_op.create_index("ix_removals_user_removed", ["user_id", "removed_at"], unique=False)

    op.create_table(
        "admin_audit",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("target", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_admin_audit")),
    )
    with op.batch_alter_table("admin_audit", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_admin_audit_at"), ["at"], unique=False)

    _rebuild_games(autoincrement=True)


def downgrade() -> None:
    _rebuild_games(autoincrement=False)
    with op.batch_alter_table("admin_audit", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_admin_audit_at"))
    op.drop_table("admin_audit")
    with op.batch_alter_table("removals", schema=None) as batch_op:
        batch_op.drop_index("ix_removals_user_removed")
    op.drop_table("removals")
