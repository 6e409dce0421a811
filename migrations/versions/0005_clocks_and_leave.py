"""clocks: time controls of challenges and games, banks and deadlines, each move's
remaining time, and players' leave

Existing games and challenges get no clock (every new column NULL), as before.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 17:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CONTROL = ("tc_initial_ms", "tc_increment_ms", "tc_cap_ms")
_GAME_CLOCK = (
    "white_ms",
    "black_ms",
    "clock_since_ms",
    "deadline_ms",
    "white_leave_until_ms",
    "black_leave_until_ms",
)
_LEAVE = (("leave_until_ms", sa.BigInteger()), ("leave_left_ms", sa.BigInteger()))


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        for name, kind in _LEAVE:
            batch_op.add_column(sa.Column(name, kind, nullable=True))
        batch_op.add_column(sa.Column("leave_year", sa.Integer(), nullable=True))
    with op.batch_alter_table("game_requests", schema=None) as batch_op:
        for name in _CONTROL:
            batch_op.add_column(sa.Column(name, sa.BigInteger(), nullable=True))
    with op.batch_alter_table("games", schema=None) as batch_op:
        for name in (*_CONTROL, *_GAME_CLOCK):
            batch_op.add_column(sa.Column(name, sa.BigInteger(), nullable=True))
        batch_op.create_index(
            "ix_games_deadline",
            ["deadline_ms"],
            unique=False,
            sqlite_where=sa.text("deadline_ms IS NOT NULL"),
            postgresql_where=sa.text("deadline_ms IS NOT NULL"),
        )
    with op.batch_alter_table("moves", schema=None) as batch_op:
        batch_op.add_column(sa.Column("clock_ms", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("moves", schema=None) as batch_op:
        batch_op.drop_column("clock_ms")
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.drop_index("ix_games_deadline")
        for name in reversed((*_CONTROL, *_GAME_CLOCK)):
            batch_op.drop_column(name)
    with op.batch_alter_table("game_requests", schema=None) as batch_op:
        for name in reversed(_CONTROL):
            batch_op.drop_column(name)
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("leave_year")
        for name, _kind in reversed(_LEAVE):
            batch_op.drop_column(name)
