"""blocks: the accounts a user blocks (BLOQ, BLOR, BLOL)

A row (blocker, blocked) keeps the blocked account from challenging, chatting to,
being paired by a seek with, or observing the games of the blocker. The downgrade drops
the table: the older release has no blocks.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26 23:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "blocks",
        sa.Column("blocker_id", sa.Integer(), nullable=False),
        sa.Column("blocked_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["blocker_id"], ["users.id"], name=op.f("fk_blocks_blocker_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["blocked_id"], ["users.id"], name=op.f("fk_blocks_blocked_id_users")
        ),
        sa.PrimaryKeyConstraint("blocker_id", "blocked_id", name=op.f("pk_blocks")),
    )


def downgrade() -> None:
    op.drop_table("blocks")
