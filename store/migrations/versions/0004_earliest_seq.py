"""sessions.earliest_seq (journal retention) and ix_events_compacted

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0001.
EARLIEST = "earliest_seq >= 1 AND earliest_seq <= head_seq + 1"
COMPACTED = "type = 'context.compacted'"


def upgrade() -> None:
    # a constant default: no table rewrite; every journal so far starts at seq 1
    op.add_column(
        "sessions",
        sa.Column("earliest_seq", sa.BigInteger(), server_default=sa.text("1"), nullable=False),
    )
    op.create_check_constraint(op.f("ck_sessions_earliest"), "sessions", EARLIEST)
    # the events table is the large one: build the index without blocking writes
    with op.get_context().autocommit_block():
        op.create_index(
            "ix_events_compacted",
            "events",
            ["tenant_id", "session_id", "seq"],
            postgresql_where=sa.text(COMPACTED),
            postgresql_concurrently=True,
        )


def downgrade() -> None:
    with op.get_context().autocommit_block():
        op.drop_index("ix_events_compacted", table_name="events", postgresql_concurrently=True)
    op.drop_constraint(op.f("ck_sessions_earliest"), "sessions", type_="check")
    op.drop_column("sessions", "earliest_seq")
