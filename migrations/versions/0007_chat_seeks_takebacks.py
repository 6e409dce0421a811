"""live play: chat messages, seeks, takeback requests

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 19:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chat_messages",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("channel", sa.String(length=1), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.CheckConstraint("channel IN ('J', 'O')", name=op.f("ck_chat_messages_channel")),
        sa.ForeignKeyConstraint(
            ["game_id"],
            ["games.id"],
            name=op.f("fk_chat_messages_game_id_games"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_chat_messages_user_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chat_messages")),
    )
    op.create_index("ix_chat_messages_game_at", "chat_messages", ["game_id", "at"])
    op.create_index("ix_chat_messages_user_at_ms", "chat_messages", ["user_id", "at_ms"])
    op.create_table(
        "seeks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("control", sa.String(length=32), nullable=False),
        sa.Column("tc_initial_ms", sa.BigInteger(), nullable=True),
        sa.Column("tc_increment_ms", sa.BigInteger(), nullable=True),
        sa.Column("tc_cap_ms", sa.BigInteger(), nullable=True),
        sa.Column("private", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_seeks_user_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_seeks")),
        sa.UniqueConstraint("user_id", "control", name=op.f("uq_seeks_user_id_control")),
    )
    op.create_index("ix_seeks_control", "seeks", ["control", "id"])
    op.create_table(
        "takebacks",
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("by_id", sa.Integer(), nullable=False),
        sa.Column("asked_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["by_id"], ["users.id"], name=op.f("fk_takebacks_by_id_users")),
        sa.ForeignKeyConstraint(
            ["game_id"],
            ["games.id"],
            name=op.f("fk_takebacks_game_id_games"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("game_id", name=op.f("pk_takebacks")),
    )


def downgrade() -> None:
    op.drop_table("takebacks")
    op.drop_index("ix_seeks_control", table_name="seeks")
    op.drop_table("seeks")
    op.drop_index("ix_chat_messages_user_at_ms", table_name="chat_messages")
    op.drop_index("ix_chat_messages_game_at", table_name="chat_messages")
    op.drop_table("chat_messages")
