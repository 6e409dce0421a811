"""initial schema: users, subscriptions, game requests, games, moves

Revision ID: 0001
Revises:
Create Date: 2026-11-22 14:23:54.920727
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "subscriptions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("comment", sa.String(length=200), nullable=False),
        sa.Column("requested_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriptions")),
        sa.UniqueConstraint("name", name=op.f("uq_subscriptions_name")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("comment", sa.String(length=200), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("admitted_at", sa.BigInteger(), nullable=False),
        sa.Column("changed_at", sa.BigInteger(), nullable=False),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name", name=op.f("uq_users_name")),
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_users_changed_at"), ["changed_at"], unique=False)
        batch_op.create_index("ix_users_wins_name", ["wins", "name"], unique=False)

    op.create_table(
        "game_requests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("challenger_id", sa.Integer(), nullable=False),
        sa.Column("challenged_id", sa.Integer(), nullable=False),
        sa.Column("user_lo", sa.Integer(), nullable=False),
        sa.Column("user_hi", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(
            "challenger_id <> challenged_id", name=op.f("ck_game_requests_not_self")
        ),
        sa.ForeignKeyConstraint(
            ["challenged_id"], ["users.id"], name=op.f("fk_game_requests_challenged_id_users")
        ),
        sa.ForeignKeyConstraint(
            ["challenger_id"], ["users.id"], name=op.f("fk_game_requests_challenger_id_users")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_game_requests")),
        sa.UniqueConstraint("user_lo", "user_hi", name=op.f("uq_game_requests_user_lo_user_hi")),
    )
    with op.batch_alter_table("game_requests", schema=None) as batch_op:
        batch_op.create_index(
            "ix_game_requests_challenged_created", ["challenged_id", "created_at"], unique=False
        )

    op.create_table(
        "games",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("white_id", sa.Integer(), nullable=False),
        sa.Column("black_id", sa.Integer(), nullable=False),
        sa.Column("user_lo", sa.Integer(), nullable=False),
        sa.Column("user_hi", sa.Integer(), nullable=False),
        sa.Column("status", sa.SmallInteger(), nullable=False),
        sa.Column("winner", sa.SmallInteger(), nullable=False),
        sa.Column("req_white", sa.SmallInteger(), nullable=False),
        sa.Column("req_black", sa.SmallInteger(), nullable=False),
        sa.Column("next_ply", sa.Integer(), nullable=False),
        sa.Column("fen", sa.Text(), nullable=False),
        sa.Column("end_reason", sa.String(length=32), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("changed_at", sa.BigInteger(), nullable=False),
        sa.Column("finished_at", sa.BigInteger(), nullable=True),
        sa.CheckConstraint("next_ply >= 1", name=op.f("ck_games_next_ply")),
        sa.CheckConstraint("status IN (0, 2)", name=op.f("ck_games_status")),
        sa.CheckConstraint("white_id <> black_id", name=op.f("ck_games_two_players")),
        sa.CheckConstraint("winner BETWEEN 0 AND 3", name=op.f("ck_games_winner")),
        sa.ForeignKeyConstraint(["black_id"], ["users.id"], name=op.f("fk_games_black_id_users")),
        sa.ForeignKeyConstraint(["white_id"], ["users.id"], name=op.f("fk_games_white_id_users")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_games")),
    )
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.create_index("ix_games_black_changed", ["black_id", "changed_at"], unique=False)
        batch_op.create_index("ix_games_status", ["status"], unique=False)
        batch_op.create_index("ix_games_white_changed", ["white_id", "changed_at"], unique=False)
        batch_op.create_index(
            "uq_games_active_pair",
            ["user_lo", "user_hi"],
            unique=True,
            sqlite_where=sa.text("status = 0"),
            postgresql_where=sa.text("status = 0"),
        )

    op.create_table(
        "moves",
        sa.Column("game_id", sa.Integer(), nullable=False),
        sa.Column("ply", sa.Integer(), nullable=False),
        sa.Column("jugada", sa.String(length=5), nullable=False),
        sa.Column("reverso", sa.SmallInteger(), nullable=False),
        sa.Column("posicion", sa.String(length=4), nullable=False),
        sa.Column("promocion", sa.SmallInteger(), nullable=False),
        sa.Column("san", sa.String(length=10), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("ply >= 1", name=op.f("ck_moves_ply")),
        sa.CheckConstraint("promocion IN (0, 2, 3, 4, 5)", name=op.f("ck_moves_promocion")),
        sa.CheckConstraint("reverso IN (0, 1)", name=op.f("ck_moves_reverso")),
        sa.ForeignKeyConstraint(
            ["game_id"], ["games.id"], name=op.f("fk_moves_game_id_games"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("game_id", "ply", name=op.f("pk_moves")),
    )


def downgrade() -> None:
    op.drop_table("moves")
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_games_active_pair",
            sqlite_where=sa.text("status = 0"),
            postgresql_where=sa.text("status = 0"),
        )
        batch_op.drop_index("ix_games_white_changed")
        batch_op.drop_index("ix_games_status")
        batch_op.drop_index("ix_games_black_changed")

    op.drop_table("games")
    with op.batch_alter_table("game_requests", schema=None) as batch_op:
        batch_op.drop_index("ix_game_requests_challenged_created")

    op.drop_table("game_requests")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index("ix_users_wins_name")
        batch_op.drop_index(batch_op.f("ix_users_changed_at"))

    op.drop_table("users")
    op.drop_table("subscriptions")
