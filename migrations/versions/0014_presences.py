"""presences: the logged-in sessions each server process serves of each account

A row per (account, process) while that process serves sessions of the account,
leased as guests' names are: every process sharing the database sees whether an
account is connected anywhere, so a live seek goes once its owner's last session
ends, and the sessions of one account are capped over all processes. The downgrade
drops the table: its rows describe connections, not data.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26 23:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "presences",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("holder", sa.String(length=32), nullable=False),
        sa.Column("sessions", sa.Integer(), nullable=False),
        sa.Column("lease_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_presences_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "holder", name=op.f("pk_presences")),
    )
    op.create_index("ix_presences_holder", "presences", ["holder"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_presences_holder", table_name="presences")
    op.drop_table("presences")
