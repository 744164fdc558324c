"""projects: the projects table under the tenant policy, sessions.project_id

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

``projects`` is new, under the tenant policy as 0006 put every tenant table
(docs/projects.md). ``sessions`` gains a nullable column (a catalog change, nothing
rewritten) and a foreign key to it, added NOT VALID and then validated: the
validation scans sessions under a lock that lets admissions and steps go on (every
row is NULL, so none is looked up).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"


def _ts(name: str) -> sa.Column[Any]:
    return sa.Column(
        name, sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
    )


def upgrade() -> None:
    op.create_table(
        "projects",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("project_id", sa.Text(), nullable=False),
        sa.Column("owner", sa.Text(), nullable=False),
        sa.Column(
            "overrides",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("request_hash", sa.Text(), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.CheckConstraint(
            "jsonb_typeof(overrides) = 'object'", name=op.f("ck_projects_overrides")
        ),
        sa.PrimaryKeyConstraint("tenant_id", "project_id", name="pk_projects"),
    )
    op.create_index(
        "ix_projects_owner", "projects", ["tenant_id", "owner", "created_at", "project_id"]
    )
    # row-level security as 0006 put every tenant table under it
    op.execute("ALTER TABLE projects ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE projects FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON projects USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON projects TO {ROLE}")

    op.add_column("sessions", sa.Column("project_id", sa.Text(), nullable=True))
    op.execute(
        "ALTER TABLE sessions ADD CONSTRAINT fk_sessions_tenant_id "
        "FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, project_id) "
        "NOT VALID"
    )
    op.execute("ALTER TABLE sessions VALIDATE CONSTRAINT fk_sessions_tenant_id")


def downgrade() -> None:
    op.drop_constraint("fk_sessions_tenant_id", "sessions", type_="foreignkey")
    op.drop_column("sessions", "project_id")
    op.drop_table("projects")
