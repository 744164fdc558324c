"""schedules: turns admitted on a cron expression or an interval, under the tenant policy

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03

``schedules`` is new (runtime/schedules.py, docs/flow-control.md), under the tenant
policy as 0006 put every tenant table: nothing to rewrite or lock but its own.
``ix_schedules_due`` is the beat's pass over the due ones (partial: paused ones are
never due).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("schedule_id", sa.Text(), nullable=False),
        sa.Column("agent_name", sa.Text(), nullable=False),
        sa.Column("cron", sa.Text(), nullable=True),
        sa.Column("every_seconds", sa.Float(), nullable=True),
        sa.Column("timezone", sa.Text(), server_default=sa.text("'UTC'"), nullable=False),
        sa.Column("input", JSONB(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=True),
        sa.Column("missed", sa.Text(), server_default=sa.text("'run_once'"), nullable=False),
        sa.Column("paused", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("next_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_tick", sa.DateTime(timezone=True), nullable=True),
        sa.Column("fired", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("spec_hash", sa.Text(), nullable=False),
        sa.Column("created_by", sa.Text(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "(cron IS NULL) <> (every_seconds IS NULL)", name=op.f("ck_schedules_when")
        ),
        sa.CheckConstraint("missed IN ('run_once', 'skip')", name=op.f("ck_schedules_missed")),
        sa.PrimaryKeyConstraint("tenant_id", "schedule_id", name="pk_schedules"),
    )
    op.create_index(
        "ix_schedules_due",
        "schedules",
        ["next_at"],
        postgresql_where=sa.text("NOT paused"),
    )
    op.execute("ALTER TABLE schedules ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE schedules FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON schedules USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON schedules TO {ROLE}")


def downgrade() -> None:
    op.drop_table("schedules")
