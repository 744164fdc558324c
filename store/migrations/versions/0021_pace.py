"""provider rate limits (the turn.paced event); one-shot schedules (follow-up turns)

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05

``turn.paced`` joins the event types the events table's check allows: a model call
that waits for its provider rate limit's slot records it (runtime/pacing.py,
docs/flow-control.md). The old list is a subset of the new one, so every row passes:
the new check is added NOT VALID (no scan while the table is locked for the swap)
and validated after, which scans under a lock that lets writers on.

``schedules`` takes one-shot schedules: neither a cron expression nor an interval,
the tick is ``next_at`` and, once it fired, there is none (NULL); ``origin`` says
which turn's tool call asked for one (a follow-up turn, runtime/followups.py), NULL
for a schedule made over the API. Both are catalog changes: nothing is rewritten.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


# Written out literally (not imported from runtime.states), as in 0013.
OLD_TYPES = [
    "context.compacted",
    "input.requested",
    "input.resolved",
    "model.completed",
    "tool.completed",
    "tool.interrupted",
    "turn.accepted",
    "turn.cancel_requested",
    "turn.cancelled",
    "turn.completed",
    "turn.definition_changed",
    "turn.failed",
    "turn.needs_reconciliation",
    "turn.started",
]
NEW_TYPES = sorted([*OLD_TYPES, "turn.paced"])


def _check(types: list[str]) -> str:
    return "type IN (" + ", ".join(f"'{t}'" for t in types) + ")"


def _swap_event_types(types: list[str]) -> None:
    op.execute("ALTER TABLE events DROP CONSTRAINT ck_events_type")
    op.execute(
        f"ALTER TABLE events ADD CONSTRAINT ck_events_type CHECK ({_check(types)}) NOT VALID"
    )
    op.execute("ALTER TABLE events VALIDATE CONSTRAINT ck_events_type")


def upgrade() -> None:
    _swap_event_types(NEW_TYPES)
    op.alter_column("schedules", "next_at", nullable=True)
    op.execute("ALTER TABLE schedules DROP CONSTRAINT ck_schedules_when")
    op.execute(
        "ALTER TABLE schedules ADD CONSTRAINT ck_schedules_when"
        " CHECK (cron IS NULL OR every_seconds IS NULL)"
    )
    op.add_column("schedules", sa.Column("origin", postgresql.JSONB(), nullable=True))


def downgrade() -> None:
    # (refused while a turn.paced row or a one-shot schedule exists: delete them first)
    op.drop_column("schedules", "origin")
    op.execute("ALTER TABLE schedules DROP CONSTRAINT ck_schedules_when")
    op.execute(
        "ALTER TABLE schedules ADD CONSTRAINT ck_schedules_when"
        " CHECK ((cron IS NULL) <> (every_seconds IS NULL))"
    )
    op.alter_column("schedules", "next_at", nullable=False)
    _swap_event_types(OLD_TYPES)
