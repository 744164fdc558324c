"""turns.usage and sessions.usage: tokens and cost, counted by every step's commit

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a constant default: no table rewrite
    for table in ("turns", "sessions"):
        op.add_column(
            table,
            sa.Column("usage", JSONB(), server_default=sa.text("'{}'::jsonb"), nullable=False),
        )


def downgrade() -> None:
    for table in ("turns", "sessions"):
        op.drop_column(table, "usage")
