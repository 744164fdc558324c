"""Row-level security: the tenant policy every tenant-keyed table is under, and the
application's role (migration 0006 put them in place; store/schema.py installs them on
the declared metadata, so ``metadata.create_all`` builds what the migrations do).

APP_ROLE (runtime/settings.py) is the role the application (API, workers, beat)
connects as: LOGIN, not a superuser, no BYPASSRLS, not the tables' owner; created by
the migration when absent (without a password: where the server wants one, create the
role beforehand or set one afterwards).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import DDL, MetaData, Table, event

from turnkeep.runtime.settings import APP_ROLE
from turnkeep.store.db import ALL_TENANTS, TENANT_SETTING

POLICY = "tenant_isolation"
#: (a scalar subquery: an InitPlan evaluated once per statement, not a function call
#: per row, which costs a read of 2,000 events a third more than without the policy)
_TENANT = f"(SELECT current_setting('{TENANT_SETTING}', true))"
#: a row is visible, and may be written, when its tenant is the session's, or the
#: session is a cross-tenant system scan's; unset (NULL) or empty: nothing
POLICY_USING = f"tenant_id = {_TENANT} OR {_TENANT} = '{ALL_TENANTS}'"

CREATE_APP_ROLE = f"""DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
        BEGIN
            CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- a concurrent migration of another database created it
        END;
    END IF;
END $$"""


def row_security(table: str) -> list[str]:
    """The statements that put ``table`` under the tenant policy and grant its rows
    (and nothing more) to the application's role."""
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY",
        f"CREATE POLICY {POLICY} ON {table} USING ({POLICY_USING})",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}",
    ]


def _ddl(statement: str) -> DDL:
    return DDL(statement)  # type: ignore[no-untyped-call]


def install(
    metadata: MetaData, tables: Iterable[str], sequences: Iterable[str], owner: Table
) -> None:
    """Have ``metadata.create_all`` create the role, the policies and the grants: the
    sequences' grants after ``owner``, the table that owns them."""
    event.listen(metadata, "before_create", _ddl(CREATE_APP_ROLE))
    event.listen(metadata, "before_create", _ddl(f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}"))
    for name in tables:
        for stmt in row_security(name):
            event.listen(metadata.tables[name], "after_create", _ddl(stmt))
    for seq in sequences:
        event.listen(
            owner, "after_create", _ddl(f"GRANT USAGE, SELECT ON SEQUENCE {seq} TO {APP_ROLE}")
        )
