"""draw offers: when each side last offered, and offers no longer move the clock

``games.white_offer_ply``/``black_offer_ply``: the game's next ply when that side last
offered a draw (NULL: never), so an offer is not renewed before its maker has moved
again (docs/protocol.md, TBLS). A pending offer no longer hands the running clock to its
receiver: an active game whose clock the upgrade finds with the receiver of an offer while
the other side is to move gets the side to move's clock back, running since the offer
(its bank was charged up to then), and no warning for the turn under way.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 23:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OFFER = 1  # games.req_white / req_black: offers a draw
_ACTIVE = 0  # games.status


def upgrade() -> None:
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.add_column(sa.Column("white_offer_ply", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("black_offer_ply", sa.Integer(), nullable=True))
    # Where the side to move made the offer, its opponent's clock ran: the side to move
    # gets it back (white moves on odd plies).
    op.execute(
        sa.text(
            "UPDATE games SET deadline_ms = clock_since_ms + white_ms, warn_at_ms = NULL "
            "WHERE status = :active AND deadline_ms IS NOT NULL AND next_ply % 2 = 1 "
            "AND req_white = :offer"
        ).bindparams(active=_ACTIVE, offer=_OFFER)
    )
    op.execute(
        sa.text(
            "UPDATE games SET deadline_ms = clock_since_ms + black_ms, warn_at_ms = NULL "
            "WHERE status = :active AND deadline_ms IS NOT NULL AND next_ply % 2 = 0 "
            "AND req_black = :offer"
        ).bindparams(active=_ACTIVE, offer=_OFFER)
    )


def downgrade() -> None:
    with op.batch_alter_table("games", schema=None) as batch_op:
        batch_op.drop_column("black_offer_ply")
        batch_op.drop_column("white_offer_ply")
