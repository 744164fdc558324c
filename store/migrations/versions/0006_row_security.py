"""row-level security on every tenant-keyed table, and the application's role

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

The application connects as ``turnkeep_app`` (LOGIN, not a superuser, no BYPASSRLS,
not the owner), created here when absent, without a password: where the server wants
one, create the role beforehand (deploy/compose.yaml does) or set it afterwards.
Migrations keep running as the tables' owner (TURNKEEP_MIGRATE_URL).
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0001.
ROLE = "turnkeep_app"
TABLES = ("sessions", "turns", "events", "webhooks")
# a scalar subquery: evaluated once per statement (an InitPlan), not once per row
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"

CREATE_ROLE = f"""DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
        BEGIN
            CREATE ROLE {ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- a concurrent migration of another database created it
        END;
    END IF;
END $$"""


def upgrade() -> None:
    # catalog changes only: each ALTER takes its table's lock for a moment, nothing
    # is rewritten or scanned
    op.execute(CREATE_ROLE)
    op.execute(f"GRANT USAGE ON SCHEMA public TO {ROLE}")
    for table in TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY tenant_isolation ON {table} USING ({USING})")
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {ROLE}")
    op.execute(f"GRANT USAGE, SELECT ON SEQUENCE turns_ordinal_seq TO {ROLE}")


def downgrade() -> None:
    # the role is the cluster's (other databases may use it): it stays
    op.execute(f"REVOKE USAGE, SELECT ON SEQUENCE turns_ordinal_seq FROM {ROLE}")
    for table in reversed(TABLES):
        op.execute(f"REVOKE SELECT, INSERT, UPDATE, DELETE ON {table} FROM {ROLE}")
        op.execute(f"DROP POLICY tenant_isolation ON {table}")
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {ROLE}")
