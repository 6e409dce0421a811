"""guests: accounts that a seed protocol's listener makes for a connection

``users.guest`` marks them; ``users.guest_lease_ms`` is when the current holder's claim
on the name lapses (NULL: nobody holds it), renewed while its connection lasts, so every
server process sharing the database sees who holds a guest name. The downgrade keeps
every guest's row, with its games, as a closed account: the older release has no guests.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("guest", sa.Boolean(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("guest_lease_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.execute(sa.text("UPDATE users SET active = false WHERE guest = true"))
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("guest_lease_ms")
        batch_op.drop_column("guest")
