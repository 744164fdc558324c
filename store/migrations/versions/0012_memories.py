"""memories: facts remembered by agents with a memory scope, under the tenant policy

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

``memories`` is new (runtime/memory.py, docs/memory.md), under the tenant policy as
0006 put every tenant table: nothing to rewrite or lock but its own.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"


def upgrade() -> None:
    op.create_table(
        "memories",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("scope_key", sa.Text(), nullable=False),
        sa.Column("source_key", sa.Text(), nullable=False),
        sa.Column("fact", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("turn_id", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("length(fact) BETWEEN 1 AND 2000", name=op.f("ck_memories_fact")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "session_id"],
            ["sessions.tenant_id", "sessions.session_id"],
            name="fk_memories_tenant_id",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "scope_key", "source_key", name="pk_memories"),
    )
    op.create_index(
        "ix_memories_recall",
        "memories",
        ["tenant_id", "scope_key", sa.text("created_at DESC")],
    )
    # row-level security as 0006 put every tenant table under it
    op.execute("ALTER TABLE memories ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE memories FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON memories USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON memories TO {ROLE}")


def downgrade() -> None:
    op.drop_table("memories")
