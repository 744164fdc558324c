"""Schedules' table (flow control, runtime/schedules.py): a turn admitted on a cron
expression, an interval or once; store/schema.py gathers it."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    Index,
    PrimaryKeyConstraint,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from turnkeep.store.schema_base import metadata

# a turn admitted on a cron expression or an interval (runtime/schedules.py, 0014), or
# once (neither: a one-shot, such as a turn's follow-up, 0021): its input (messages)
# the same every tick, to session_id (NULL: a new one per tick); next_at is the tick it
# waits for (NULL: a one-shot that fired); spec_hash what a replay of its creation must
# match; origin the turn and step that asked for a follow-up (NULL: made over the API);
# skipped the ticks passed over (past the grace, or their agent or session gone; 0022)
schedules = Table(
    "schedules",
    metadata,
    *(Column(c, Text, nullable=False) for c in ("tenant_id", "schedule_id", "agent_name")),
    Column("cron", Text, nullable=True),
    Column("every_seconds", Float, nullable=True),
    Column("timezone", Text, nullable=False, server_default=text("'UTC'")),
    Column("input", JSONB, nullable=False),
    Column("session_id", Text, nullable=True),
    Column("missed", Text, nullable=False, server_default=text("'run_once'")),
    Column("paused", Boolean, nullable=False, server_default=text("false")),
    Column("next_at", DateTime(timezone=True), nullable=True),
    Column("last_tick", DateTime(timezone=True), nullable=True),
    Column("fired", BigInteger, nullable=False, server_default=text("0")),
    *(Column(c, Text, nullable=False) for c in ("spec_hash", "created_by")),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("origin", JSONB, nullable=True),
    Column("skipped", BigInteger, nullable=False, server_default=text("0")),
    # the refusal's code when a tick paused it (creator_revoked, session_deleted)
    Column("paused_reason", Text, nullable=True),
    PrimaryKeyConstraint("tenant_id", "schedule_id"),
    CheckConstraint("cron IS NULL OR every_seconds IS NULL", name="when"),
    CheckConstraint("missed IN ('run_once', 'skip')", name="missed"),
)
Index("ix_schedules_due", schedules.c.next_at, postgresql_where=text("NOT paused"))
