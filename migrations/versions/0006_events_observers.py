"""events: the stored event stream and its counter, observers, private games

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 19:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=False,
            nullable=False,
        ),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=24), nullable=False),
        sa.Column("game_id", sa.Integer(), nullable=True),
        sa.Column("user_a", sa.Integer(), nullable=True),
        sa.Column("user_b", sa.Integer(), nullable=True),
        sa.Column("actor_id", sa.Integer(), nullable=True),
        sa.Column("observers", sa.Boolean(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_events")),
    )
    op.create_index("ix_events_user_a", "events", ["user_a", "id"])
    op.create_index("ix_events_user_b", "events", ["user_b", "id"])
    op.create_index(
        "ix_events_game",
        "events",
        ["game_id", "id"],
        sqlite_where=sa.text("observers IS 1"),
        postgresql_where=sa.text("observers IS true"),
    )
    counter = op.create_table(
        "event_counter",
        sa.Column("id", sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column("last", sa.BigInteger(), nullable=False),
        sa.Column("pruned_through", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name=op.f("ck_event_counter_one_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_event_counter")),
    )
    op.bulk_insert(counter, [{"id": 1, "last": 0, "pruned_through": 0}])
    op.create_table(
        "observers",
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("since_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["game_id"],
            ["games.id"],
            name=op.f("fk_observers_game_id_games"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_observers_user_id_users")),
        sa.PrimaryKeyConstraint("game_id", "user_id", name=op.f("pk_observers")),
    )
    op.create_index("ix_observers_user", "observers", ["user_id"])
    for table in ("game_requests", "games"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("private", sa.Boolean(), server_default="0", nullable=False)
            )


def downgrade() -> None:
    for table in ("games", "game_requests"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("private")
    op.drop_index("ix_observers_user", table_name="observers")
    op.drop_table("observers")
    op.drop_table("event_counter")
    op.drop_index("ix_events_game", table_name="events")
    op.drop_index("ix_events_user_b", table_name="events")
    op.drop_index("ix_events_user_a", table_name="events")
    op.drop_table("events")
