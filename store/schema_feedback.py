"""Feedback's table (evaluation): a person's score of a turn; store/schema.py gathers it."""

from __future__ import annotations

from sqlalchemy import (
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

from turnkeep.store.schema_base import metadata

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
