"""webhooks: the outbox of workflow nodes' signed completion webhooks

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def _ts(name: str) -> sa.Column[Any]:
    return sa.Column(
        name, sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
    )


def upgrade() -> None:
    # a new table: nothing to rewrite or lock but its own
    op.create_table(
        "webhooks",
        sa.Column("tenant_id", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("turn_id", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Text(), nullable=False),
        sa.Column("node_id", sa.Text(), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("secret_id", sa.Text(), nullable=False),
        sa.Column("delivery_id", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default=sa.text("0"), nullable=False),
        _ts("next_attempt_at"),
        sa.Column("claim", sa.Text(), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        _ts("created_at"),
        _ts("updated_at"),
        sa.CheckConstraint("url ~ '^https?://'", name=op.f("ck_webhooks_url")),
        sa.CheckConstraint("attempts >= 0", name=op.f("ck_webhooks_attempts")),
        sa.ForeignKeyConstraint(
            ["tenant_id", "session_id", "turn_id"],
            ["turns.tenant_id", "turns.session_id", "turns.turn_id"],
            name="fk_webhooks_tenant_id",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "session_id", "turn_id", name="pk_webhooks"),
    )
    op.create_index(
        "ix_webhooks_due",
        "webhooks",
        ["next_attempt_at", "tenant_id", "session_id", "turn_id"],
        postgresql_where=sa.text("delivered_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_table("webhooks")
