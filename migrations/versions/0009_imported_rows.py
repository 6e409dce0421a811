"""imported rows: what import espol wrote, by its key in the 1995 files

A database imported into before this migration has no records: a rerun of the import
decides about its rows by what the store holds (an equal row, a purge), and records
what it writes from then on.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26 07:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "imported_rows",
        sa.Column("kind", sa.String(length=9), nullable=False),
        sa.Column("subject", sa.String(length=32), nullable=False),
        sa.Column("challenged", sa.String(length=32), nullable=False),
        sa.Column("imported_at", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            "kind IN ('user', 'request', 'game', 'challenge')", name=op.f("ck_imported_rows_kind")
        ),
        sa.PrimaryKeyConstraint("kind", "subject", "challenged", name=op.f("pk_imported_rows")),
    )


def downgrade() -> None:
    op.drop_table("imported_rows")
