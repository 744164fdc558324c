"""tenant_limits and ix_turns_running: max_running per tenant (flow control)

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-10

``tenant_limits`` is new (store/max_running.py, docs/flow-control.md): a tenant's declared
``max_running``, under the tenant policy as 0006 put every tenant table. The start
statement counts a limited tenant's running turns on ``ix_turns_running``, a partial
index of the running rows only (a turn enters it at its start and leaves it when it
settles or parks), built CONCURRENTLY-free: it is small by nature.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"


def upgrade() -> None:
    op.create_table(
        "tenant_limits",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("max_running", sa.Integer(), nullable=True),
        sa.Column("updated_by", sa.Text(), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("max_running > 0", name=op.f("ck_tenant_limits_max_running")),
        sa.PrimaryKeyConstraint("tenant_id", name="pk_tenant_limits"),
    )
    op.execute("ALTER TABLE tenant_limits ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE tenant_limits FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON tenant_limits USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON tenant_limits TO {ROLE}")
    op.create_index(
        "ix_turns_running",
        "turns",
        ["tenant_id", "agent_name"],
        postgresql_where=sa.text("state = 'running'"),
    )


def downgrade() -> None:
    op.drop_index("ix_turns_running", table_name="turns")
    op.drop_table("tenant_limits")
