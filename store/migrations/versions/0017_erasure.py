"""erasure: session tombstones, session TTL, provider state out of the journal

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05

``session_tombstones`` and ``provider_state`` are new, under the tenant policy as 0006
put every tenant table (docs/erasure.md). ``sessions`` gains three nullable columns
(a catalog change, nothing rewritten), a check added NOT VALID then validated, and a
partial index that holds no row until a session has a TTL.

Existing journals: the provider metadata a model.completed event carried in its
``message`` (Anthropic's thinking blocks and signatures) moves to ``provider_state``,
keyed by the event's seq, and leaves the event, which keeps the provider's name alone
(``provider_state``: the worker reads the state of such calls only); one pass over the
model.completed events that hold any (run as the owner under the policy's ``*``, in the migration's
transaction). The downgrade moves it back.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"
#: the migration's own statements see every tenant's rows (the policies bind the owner)
EVERY_TENANT = "SELECT set_config('turnkeep.tenant', '*', true)"
META = "'{message,provider_meta}'"


def _ts(name: str, *, nullable: bool = False) -> sa.Column[Any]:
    default = None if nullable else sa.text("now()")
    return sa.Column(name, sa.DateTime(timezone=True), server_default=default, nullable=nullable)


def _row_security(table: str) -> None:
    op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON {table} USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {ROLE}")


def upgrade() -> None:
    op.add_column("sessions", sa.Column("expires_after", sa.Integer(), nullable=True))
    op.add_column("sessions", _ts("expires_at", nullable=True))
    op.add_column("sessions", _ts("deleted_at", nullable=True))
    op.execute(
        "ALTER TABLE sessions ADD CONSTRAINT ck_sessions_expires_after "
        "CHECK (expires_after > 0) NOT VALID"
    )
    op.execute("ALTER TABLE sessions VALIDATE CONSTRAINT ck_sessions_expires_after")
    op.create_index(
        "ix_sessions_expires",
        "sessions",
        ["expires_at"],
        postgresql_where=sa.text("expires_at IS NOT NULL AND deleted_at IS NULL"),
    )

    op.create_table(
        "session_tombstones",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("project_id", sa.Text(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("deleted_by", sa.Text(), nullable=True),
        _ts("deleted_at"),
        sa.Column("tombstone_xid", sa.BigInteger(), nullable=False),
        sa.Column("erased_rows", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        _ts("updated_at"),
        _ts("erased_at", nullable=True),
        sa.CheckConstraint(
            "reason IN ('deleted', 'expired')", name=op.f("ck_session_tombstones_reason")
        ),
        sa.CheckConstraint("erased_rows >= 0", name=op.f("ck_session_tombstones_erased_rows")),
        sa.PrimaryKeyConstraint("tenant_id", "session_id", name="pk_session_tombstones"),
    )
    op.create_index(
        "ix_session_tombstones_erasing",
        "session_tombstones",
        ["updated_at"],
        postgresql_where=sa.text("erased_at IS NULL"),
    )
    _row_security("session_tombstones")

    op.create_table(
        "provider_state",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("provider", sa.Text(), nullable=False),
        sa.Column("data", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        _ts("created_at"),
        sa.CheckConstraint("jsonb_typeof(data) = 'object'", name=op.f("ck_provider_state_data")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "session_id", "seq"],
            ["events.tenant_id", "events.session_id", "events.seq"],
            name="fk_provider_state_tenant_id",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "session_id", "seq", name="pk_provider_state"),
    )
    _row_security("provider_state")

    # the journals written before: their provider metadata leaves the events
    op.execute(EVERY_TENANT)
    op.execute(
        f"""
        INSERT INTO provider_state (tenant_id, session_id, seq, provider, data, created_at)
        SELECT tenant_id, session_id, seq,
               coalesce(data #>> '{{message,provider_meta,provider}}', ''),
               data #> {META}, created_at
        FROM events
        WHERE type = 'model.completed'
          AND jsonb_typeof(data #> {META}) = 'object'
        """
    )
    # the event keeps the name of the provider whose state it left (the worker reads
    # the state only for such calls: ModelCompleted.provider_state)
    op.execute(
        f"""
        UPDATE events
        SET data = (data #- {META}) || jsonb_build_object(
                'provider_state', coalesce(data #>> '{{message,provider_meta,provider}}', ''))
        WHERE type = 'model.completed' AND jsonb_typeof(data #> {META}) = 'object'
        """
    )
    op.execute(
        f"""
        UPDATE events SET data = data #- {META}
        WHERE type = 'model.completed' AND data #> {META} IS NOT NULL
        """
    )


def downgrade() -> None:
    op.execute(EVERY_TENANT)
    op.execute(
        f"""
        UPDATE events e SET data = jsonb_set(e.data - 'provider_state', {META}, p.data)
        FROM provider_state p
        WHERE p.tenant_id = e.tenant_id AND p.session_id = e.session_id AND p.seq = e.seq
          AND jsonb_typeof(e.data -> 'message') = 'object'
        """
    )
    op.drop_table("provider_state")
    op.drop_table("session_tombstones")
    op.drop_index("ix_sessions_expires", table_name="sessions")
    op.execute("ALTER TABLE sessions DROP CONSTRAINT ck_sessions_expires_after")
    op.drop_column("sessions", "deleted_at")
    op.drop_column("sessions", "expires_at")
    op.drop_column("sessions", "expires_after")
