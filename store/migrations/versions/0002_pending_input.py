"""turns.pending_input: the open input request of a waiting turn

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("turns", sa.Column("pending_input", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    op.drop_column("turns", "pending_input")
