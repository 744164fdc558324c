"""schedules.skipped: the ticks a schedule passed over

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-07

A late pass of the beat now admits every tick within the grace and passes over the
ones beyond it (recovery/schedules.py, docs/flow-control.md); ``skipped`` counts
those, and the ticks whose agent or session was gone, beside ``fired``. A column
with a constant default is a catalog change in Postgres 11 and later: nothing is
rewritten, every existing schedule reads 0.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "schedules",
        sa.Column("skipped", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
    )


def downgrade() -> None:
    op.drop_column("schedules", "skipped")
