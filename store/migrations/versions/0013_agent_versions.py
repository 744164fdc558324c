"""agent versions: what a turn does when a newer version of its agent is deployed

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03

``turns.agent_version`` and ``turns.on_deploy`` pin the version and the policy of
the turn's definition at admission beside its hash (a worker that does not serve
the definition reads them there), and
``turns.upgrade_requested`` is an operator's request to move the turn to its agent's
newest version (docs/deploy.md). All have constant defaults: PostgreSQL 11+ adds
them without rewriting the table.

``turn.definition_changed`` joins the event types the events table's check allows.
The old list is a subset of the new one, so every row passes: the new check is added
NOT VALID (no scan while the table is locked for the swap) and validated after,
which scans under a lock that lets writers on.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


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
    "turn.failed",
    "turn.needs_reconciliation",
    "turn.started",
]
NEW_TYPES = sorted([*OLD_TYPES, "turn.definition_changed"])


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
    op.add_column(
        "turns",
        sa.Column("agent_version", sa.Text(), server_default=sa.text("''"), nullable=False),
    )
    op.add_column(
        "turns",
        sa.Column("on_deploy", sa.Text(), server_default=sa.text("'upgrade'"), nullable=False),
    )
    op.add_column(
        "turns",
        sa.Column(
            "upgrade_requested", sa.Boolean(), server_default=sa.text("false"), nullable=False
        ),
    )


def downgrade() -> None:
    # (refused while a turn.definition_changed row exists: delete them first)
    _swap_event_types(OLD_TYPES)
    op.drop_column("turns", "upgrade_requested")
    op.drop_column("turns", "on_deploy")
    op.drop_column("turns", "agent_version")
