"""search: metadata on sessions and turns, a turn's project, the search indexes

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05

``sessions.metadata`` and ``turns.metadata`` (a flat object of labels, ``{}`` when
none) and ``turns.project_id`` (its session's project, NULL for none) are added with
constant defaults: PostgreSQL 11+ adds them without rewriting the tables. Their checks
are added NOT VALID and validated after, which scans under a lock that lets writers on.
The turns of sessions in a project get their project (one UPDATE of those rows).

``turn_metadata`` and ``session_metadata`` hold each label once more as a row, under
the tenant policy as 0006 put every tenant table: no jsonb operator is leakproof, so
under row security only their text columns' indexes can serve a search
(store/schema_search.py). They start empty: turns admitted before carry no metadata.
No foreign key: only the statement that writes a turn or session writes its rows.

The indexes are built CONCURRENTLY, without blocking admissions and steps.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"
KEY = "key ~ '^[A-Za-z0-9_.:/-]{1,64}$'"
VALUE = "length(value) <= 256"

INDEXES: dict[str, tuple[str, list[str], dict[str, Any]]] = {
    "ix_turns_created": ("turns", ["tenant_id", "created_at", "ordinal"], {}),
    "ix_turns_state": (
        "turns",
        ["tenant_id", "state", "created_at", "ordinal"],
        {
            "postgresql_where": sa.text(
                "state IN ('cancelled', 'failed', 'needs_reconciliation', 'waiting')"
            )
        },
    ),
    "ix_turns_project": (
        "turns",
        ["tenant_id", "project_id", "created_at", "ordinal"],
        {"postgresql_where": sa.text("project_id IS NOT NULL")},
    ),
    "ix_turn_metadata_pair": (
        "turn_metadata",
        ["tenant_id", "key", "value", "created_at", "ordinal"],
        {"postgresql_include": ["session_id", "turn_id"]},
    ),
    "ix_session_metadata_pair": (
        "session_metadata",
        ["tenant_id", "key", "value", "created_at", "session_id"],
        {},
    ),
}


def _text(name: str) -> sa.Column[Any]:
    return sa.Column(name, sa.Text(), nullable=False)


def _metadata(table: str) -> None:
    op.add_column(
        table,
        sa.Column(
            "metadata",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
    )
    name = f"ck_{table}_metadata"
    op.execute(
        f"ALTER TABLE {table} ADD CONSTRAINT {name} "
        "CHECK (jsonb_typeof(metadata) = 'object') NOT VALID"
    )
    op.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}")


def _tenant_policy(table: str) -> None:
    op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON {table} USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {ROLE}")


def upgrade() -> None:
    _metadata("sessions")
    _metadata("turns")
    op.add_column("turns", sa.Column("project_id", sa.Text(), nullable=True))
    op.execute(
        "UPDATE turns t SET project_id = s.project_id FROM sessions s "
        "WHERE s.tenant_id = t.tenant_id AND s.session_id = t.session_id "
        "AND s.project_id IS NOT NULL"
    )
    op.create_table(
        "turn_metadata",
        _text("tenant_id"),
        _text("session_id"),
        _text("turn_id"),
        _text("key"),
        _text("value"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ordinal", sa.BigInteger(), nullable=False),
        sa.CheckConstraint(KEY, name=op.f("ck_turn_metadata_key")),
        sa.CheckConstraint(VALUE, name=op.f("ck_turn_metadata_value")),
        sa.PrimaryKeyConstraint(
            "tenant_id", "session_id", "turn_id", "key", name=op.f("pk_turn_metadata")
        ),
    )
    op.create_table(
        "session_metadata",
        _text("tenant_id"),
        _text("session_id"),
        _text("key"),
        _text("value"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(KEY, name=op.f("ck_session_metadata_key")),
        sa.CheckConstraint(VALUE, name=op.f("ck_session_metadata_value")),
        sa.PrimaryKeyConstraint("tenant_id", "session_id", "key", name=op.f("pk_session_metadata")),
    )
    for table in ("turn_metadata", "session_metadata"):
        _tenant_policy(table)
    with op.get_context().autocommit_block():
        for name, (table, columns, options) in INDEXES.items():
            op.create_index(name, table, columns, postgresql_concurrently=True, **options)


def downgrade() -> None:
    with op.get_context().autocommit_block():
        for name, (table, _, _) in INDEXES.items():
            if table == "turns":
                op.drop_index(name, table_name=table, postgresql_concurrently=True)
    op.drop_table("session_metadata")
    op.drop_table("turn_metadata")
    op.drop_column("turns", "project_id")
    op.drop_column("turns", "metadata")
    op.drop_column("sessions", "metadata")
