"""The planes' tables beside the turn's core (store/schema.py gathers them): schedules
(flow control), feedback (evaluation) and the chat bridges' participant bindings."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
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


# a person's score of a turn or one of its steps (step 0: the whole turn), one per
# subject, replaced by its author; the note as its hash (api/service/feedback.py, 0015)
feedback = Table(
    "feedback",
    metadata,
    *(Column(c, Text, nullable=False) for c in ("tenant_id", "session_id", "turn_id")),
    Column("step", Integer, nullable=False, server_default=text("0")),
    Column("subject", Text, nullable=False),
    Column("kind", Text, nullable=False),
    *(Column(c, Float, nullable=False) for c in ("score", "scale_min", "scale_max")),
    Column("note_hash", Text, nullable=True),
    Column("note", Text, nullable=True),  # redacted, and only where the operator allows
    *(Column(c, Text, nullable=False) for c in ("trace_id", "agent_name", "agent_version")),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "session_id", "turn_id", "step", "subject"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id", "turn_id"],
        ["turns.tenant_id", "turns.session_id", "turns.turn_id"],
    ),
    CheckConstraint("kind IN ('thumbs', 'score')", name="kind"),
    CheckConstraint(
        "scale_min < scale_max AND score BETWEEN scale_min AND scale_max", name="score"
    ),
    CheckConstraint("step >= 0", name="step"),
)
Index("ix_feedback_agent", feedback.c.tenant_id, feedback.c.agent_name, feedback.c.agent_version)


# Participant bindings of the chat bridges (api/http/bindings.py, store/bridges.py):
# who a sender of a bridge (its workspace, channel and user) is in turnkeep, the
# tenant, subject and role its messages are admitted as, and the agent that answers.
# At most one live binding per sender in a tenant (the inbound lookup runs in the
# tenant its workspace is assigned to: find_binding); revoked, never deleted.
bridge_bindings = Table(
    "bridge_bindings",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("binding_id", Text, nullable=False),
    Column("bridge", Text, nullable=False),
    Column("workspace", Text, nullable=False),
    Column("channel", Text, nullable=False),
    Column("user_id", Text, nullable=False),
    Column("subject", Text, nullable=False),
    Column("role", Text, nullable=False),
    Column("agent", Text, nullable=False),
    # the generic bridge's reply URL (a signed turnkeep webhook); NULL for Slack
    Column("reply_url", Text, nullable=True),
    Column("created_by", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
    PrimaryKeyConstraint("tenant_id", "binding_id"),
    CheckConstraint("role IN ('admin', 'member')", name="role"),
)
# the inbound lookup, and the one live binding per sender in a tenant (migration 0024)
Index(
    "ux_bridge_bindings_sender",
    bridge_bindings.c.tenant_id,
    bridge_bindings.c.bridge,
    bridge_bindings.c.workspace,
    bridge_bindings.c.channel,
    bridge_bindings.c.user_id,
    unique=True,
    postgresql_where=text("revoked_at IS NULL"),
)
