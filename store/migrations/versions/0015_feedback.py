"""feedback: a person's score of a turn or of one of its steps, under the tenant policy

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03

``feedback`` is new (api/service/feedback.py, docs/evaluation.md): one row per
(turn, step, subject), replaced by its author; the note is kept as its hash alone
(a redacted copy only where the operator allows it). Under the tenant policy as 0006
put every tenant table: nothing to rewrite or lock but its own.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"


def upgrade() -> None:
    op.create_table(
        "feedback",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("turn_id", sa.Text(), nullable=False),
        sa.Column("step", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("scale_min", sa.Float(), nullable=False),
        sa.Column("scale_max", sa.Float(), nullable=False),
        sa.Column("note_hash", sa.Text(), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("trace_id", sa.Text(), nullable=False),
        sa.Column("agent_name", sa.Text(), nullable=False),
        sa.Column("agent_version", sa.Text(), nullable=False),
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
        sa.CheckConstraint("kind IN ('thumbs', 'score')", name=op.f("ck_feedback_kind")),
        sa.CheckConstraint(
            "scale_min < scale_max AND score BETWEEN scale_min AND scale_max",
            name=op.f("ck_feedback_score"),
        ),
        sa.CheckConstraint("step >= 0", name=op.f("ck_feedback_step")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "session_id", "turn_id"],
            ["turns.tenant_id", "turns.session_id", "turns.turn_id"],
            name="fk_feedback_tenant_id",
        ),
        sa.PrimaryKeyConstraint(
            "tenant_id", "session_id", "turn_id", "step", "subject", name="pk_feedback"
        ),
    )
    op.create_index("ix_feedback_agent", "feedback", ["tenant_id", "agent_name", "agent_version"])
    op.execute("ALTER TABLE feedback ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE feedback FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON feedback USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON feedback TO {ROLE}")


def downgrade() -> None:
    op.drop_table("feedback")
