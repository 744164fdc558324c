"""a schedule paused by its tick says why

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07

``schedules.paused_reason``: the code of the refusal that paused a schedule at its
tick (``creator_revoked``: its creator may no longer write; ``session_deleted``: its
session was erased), NULL for one running or paused by its owner; a resume clears it
(store/admission.py, recovery/schedules.py). A catalog change: nothing is rewritten.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("schedules", sa.Column("paused_reason", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("schedules", "paused_reason")
