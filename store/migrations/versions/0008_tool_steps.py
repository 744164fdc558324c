"""tool_steps: the recorded steps of tool calls (ToolContext.step), under the tenant policy

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"


def upgrade() -> None:
    # a new table: nothing to rewrite or lock but its own
    op.create_table(
        "tool_steps",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("turn_id", sa.Text(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("result", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("length(name) BETWEEN 1 AND 200", name=op.f("ck_tool_steps_name")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "session_id"],
            ["sessions.tenant_id", "sessions.session_id"],
            name="fk_tool_steps_tenant_id",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "session_id", "turn_id", "step", "name", name="pk_tool_steps"
        ),
    )
    # row-level security as 0006 put every tenant table under it
    op.execute("ALTER TABLE tool_steps ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE tool_steps FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON tool_steps USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON tool_steps TO {ROLE}")


def downgrade() -> None:
    op.drop_table("tool_steps")
