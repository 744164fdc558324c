"""sessions, turns and the journal

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema) so that this migration
# stays what it was when later revisions change the schema.
TURN_STATES = (
    "state IN ('cancelled', 'completed', 'failed', 'needs_reconciliation', "
    "'queued', 'running', 'waiting')"
)
ACTIVE = "state IN ('needs_reconciliation', 'queued', 'running', 'waiting')"
EVENT_TYPES = (
    "type IN ('context.compacted', 'input.requested', 'input.resolved', "
    "'model.completed', 'tool.completed', 'tool.interrupted', 'turn.accepted', "
    "'turn.cancel_requested', 'turn.cancelled', 'turn.completed', 'turn.failed', "
    "'turn.needs_reconciliation', 'turn.started')"
)
OUTCOMES = "type IN ('model.completed', 'tool.completed', 'tool.interrupted')"


def _ts(name: str) -> sa.Column[Any]:
    return sa.Column(
        name, sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
    )


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("agent_name", sa.Text(), nullable=False),
        sa.Column("fence", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("head_seq", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.CheckConstraint("fence >= 0 AND head_seq >= 0", name=op.f("ck_sessions_counters")),
        sa.PrimaryKeyConstraint("tenant_id", "session_id", name="pk_sessions"),
    )
    op.create_table(
        "turns",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("turn_id", sa.Text(), nullable=False),
        sa.Column("ordinal", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("state", sa.Text(), nullable=False),
        sa.Column("agent_name", sa.Text(), nullable=False),
        sa.Column("agent_hash", sa.Text(), nullable=False),
        sa.Column("input_hash", sa.Text(), nullable=False),
        sa.Column("input", postgresql.JSONB(), nullable=False),
        sa.Column("output_schema", postgresql.JSONB(), nullable=True),
        sa.Column("budget", postgresql.JSONB(), nullable=True),
        sa.Column("attempt", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("revision", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "cancel_requested", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
        sa.Column("result", postgresql.JSONB(), nullable=True),
        sa.Column("error", postgresql.JSONB(), nullable=True),
        sa.Column("accepted_seq", sa.BigInteger(), nullable=False),
        _ts("created_at"),
        _ts("updated_at"),
        sa.CheckConstraint(TURN_STATES, name=op.f("ck_turns_state")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "session_id"],
            ["sessions.tenant_id", "sessions.session_id"],
            name="fk_turns_tenant_id",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "session_id", "turn_id", name="pk_turns"),
    )
    op.create_index(
        "ix_turns_active_lane",
        "turns",
        ["tenant_id", "session_id", "ordinal"],
        postgresql_where=sa.text(ACTIVE),
    )
    op.create_table(
        "events",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("turn_id", sa.Text(), nullable=False),
        sa.Column("type", sa.Text(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("fence", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("data", postgresql.JSONB(), nullable=False),
        _ts("created_at"),
        sa.CheckConstraint(EVENT_TYPES, name=op.f("ck_events_type")),
        sa.CheckConstraint("seq > 0", name=op.f("ck_events_seq_positive")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "session_id"],
            ["sessions.tenant_id", "sessions.session_id"],
            name="fk_events_tenant_id",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "session_id", "seq", name="pk_events"),
    )
    op.create_index(
        "ix_events_one_outcome_per_step",
        "events",
        ["tenant_id", "session_id", "turn_id", "step"],
        unique=True,
        postgresql_where=sa.text(OUTCOMES),
    )
    op.create_index("ix_events_turn", "events", ["tenant_id", "session_id", "turn_id", "seq"])


def downgrade() -> None:
    op.drop_table("events")
    op.drop_table("turns")
    op.drop_table("sessions")
