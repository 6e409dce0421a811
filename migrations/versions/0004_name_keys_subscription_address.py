"""users and subscriptions: name_key (names unique regardless of case); the address a
subscription request came from

Existing names that differ only in case keep working: the oldest keeps the key, the
others get none (NULL), and ``ajedrez-admin db upgrade`` names them.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 11:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("name_key", sa.String(length=32), nullable=True))
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("name_key", sa.String(length=32), nullable=True))
        batch_op.add_column(
            sa.Column("requested_from", sa.String(length=64), server_default="", nullable=False)
        )
    for table in ("users", "subscriptions"):
        op.execute(f"UPDATE {table} SET name_key = lower(name)")
        op.execute(
            f"UPDATE {table} SET name_key = NULL WHERE id NOT IN "
            f"(SELECT min(id) FROM {table} GROUP BY lower(name))"
        )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index("uq_users_name_key", ["name_key"], unique=True)
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.create_index("uq_subscriptions_name_key", ["name_key"], unique=True)
        batch_op.create_index("ix_subscriptions_requested_from", ["requested_from"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("subscriptions", schema=None) as batch_op:
        batch_op.drop_index("ix_subscriptions_requested_from")
        batch_op.drop_index("uq_subscriptions_name_key")
        batch_op.drop_column("requested_from")
        batch_op.drop_column("name_key")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index("uq_users_name_key")
        batch_op.drop_column("name_key")
