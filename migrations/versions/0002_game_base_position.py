"""games: the position at the last irreversible move (base_ply, base_fen)

A move then needs only the plies since that position to detect repetitions, however long
the game. Existing games get base_ply 0 and no base_fen (the starting position): always
correct, and the service moves the base forward at the game's next irreversible move.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 18:05:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.add_column(sa.Column("base_ply", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("base_fen", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.drop_column("base_fen")
        batch_op.drop_column("base_ply")
