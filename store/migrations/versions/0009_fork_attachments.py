"""forks and attachments: sessions.forked_from_*, the attachments table under the tenant policy

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01

``sessions`` gains two nullable columns (a catalog change, nothing rewritten) and a
check added NOT VALID, then validated: the validation scans the table under a lock
that lets admissions and steps go on. ``attachments`` is new, under the tenant policy
as 0006 put every tenant table (docs/fork-and-attachments.md).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"
FORKED_FROM = "(forked_from_session IS NULL) = (forked_from_seq IS NULL)"


def _ts(name: str) -> sa.Column[Any]:
    return sa.Column(
        name, sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
    )


def upgrade() -> None:
    op.add_column("sessions", sa.Column("forked_from_session", sa.Text(), nullable=True))
    op.add_column("sessions", sa.Column("forked_from_seq", sa.BigInteger(), nullable=True))
    op.execute(
        f"ALTER TABLE sessions ADD CONSTRAINT ck_sessions_forked_from CHECK ({FORKED_FROM}) "
        "NOT VALID"
    )
    op.execute("ALTER TABLE sessions VALIDATE CONSTRAINT ck_sessions_forked_from")

    op.create_table(
        "attachments",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("attachment_id", sa.Text(), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("filename", sa.Text(), nullable=False),
        sa.Column("content_type", sa.Text(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.Text(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        sa.CheckConstraint(
            "state IN ('deleting', 'pending', 'ready')", name=op.f("ck_attachments_state")
        ),
        sa.CheckConstraint("size >= 0", name=op.f("ck_attachments_size")),
        sa.CheckConstraint("sha256 ~ '^[0-9a-f]{64}$'", name=op.f("ck_attachments_sha256")),
        sa.CheckConstraint(
            "length(filename) BETWEEN 1 AND 255", name=op.f("ck_attachments_filename")
        ),
        sa.CheckConstraint(
            "state <> 'ready' OR data IS NOT NULL", name=op.f("ck_attachments_ready_has_data")
        ),
        sa.CheckConstraint(
            "data IS NULL OR octet_length(data) = size", name=op.f("ck_attachments_data_size")
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id", "session_id"],
            ["sessions.tenant_id", "sessions.session_id"],
            name="fk_attachments_tenant_id",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "session_id", "attachment_id", name="pk_attachments"),
    )
    op.create_index("ix_attachments_state", "attachments", ["state", "updated_at"])
    # row-level security as 0006 put every tenant table under it
    op.execute("ALTER TABLE attachments ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE attachments FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON attachments USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON attachments TO {ROLE}")


def downgrade() -> None:
    op.drop_table("attachments")
    op.drop_constraint("ck_sessions_forked_from", "sessions", type_="check")
    op.drop_column("sessions", "forked_from_seq")
    op.drop_column("sessions", "forked_from_session")
