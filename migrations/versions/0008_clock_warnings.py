"""clock warnings: when each running clock's next warning is due

Running clocks get their next warning on their next turn: none is sent for the turn
under way when the upgrade runs.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23 19:50:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.add_column(sa.Column("warn_at_ms", sa.BigInteger(), nullable=True))
        batch_op.create_index(
            "ix_games_warn",
            ["warn_at_ms"],
            unique=False,
            sqlite_where=sa.text("warn_at_ms IS NOT NULL"),
            postgresql_where=sa.text("warn_at_ms IS NOT NULL"),
        )


def downgrade() -> None:
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.drop_index("ix_games_warn")
        batch_op.drop_column("warn_at_ms")
