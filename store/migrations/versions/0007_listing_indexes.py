"""ix_sessions_created and ix_turns_session_ordinal: the session and turn listings

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0001.
INDEXES = {
    "ix_sessions_created": ("sessions", ["tenant_id", "created_at", "session_id"]),
    "ix_turns_session_ordinal": ("turns", ["tenant_id", "session_id", "ordinal"]),
}


def upgrade() -> None:
    # built without blocking admissions and steps on a live database
    with op.get_context().autocommit_block():
        for name, (table, columns) in INDEXES.items():
            op.create_index(name, table, columns, postgresql_concurrently=True)


def downgrade() -> None:
    with op.get_context().autocommit_block():
        for name, (table, _) in INDEXES.items():
            op.drop_index(name, table_name=table, postgresql_concurrently=True)
