"""chat bridges: participant bindings, and the outbox row of a bridge's reply

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03

``bridge_bindings`` is new, under the tenant policy as 0006 put every tenant table
(docs/bridges.md). ``webhooks`` gains two nullable columns (a catalog change, nothing
rewritten): ``connector`` names the connector that posts a bridge's reply (``slack``)
and ``target`` where (the thread), ``prompted`` the last input request asked about
there; NULL in all is the signed turnkeep webhook as before.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# Written out literally (not imported from store.schema), as in 0006.
ROLE = "turnkeep_app"
TENANT = "(SELECT current_setting('turnkeep.tenant', true))"
USING = f"tenant_id = {TENANT} OR {TENANT} = '*'"


def _text(name: str, *, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.Text(), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "bridge_bindings",
        _text("tenant_id"),
        _text("binding_id"),
        _text("bridge"),
        _text("workspace"),
        _text("channel"),
        _text("user_id"),
        _text("subject"),
        _text("role"),
        _text("agent"),
        _text("reply_url", nullable=True),
        _text("created_by"),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("role IN ('admin', 'member')", name=op.f("ck_bridge_bindings_role")),
        sa.PrimaryKeyConstraint("tenant_id", "binding_id", name="pk_bridge_bindings"),
    )
    op.create_index(
        "ux_bridge_bindings_sender",
        "bridge_bindings",
        ["bridge", "workspace", "channel", "user_id"],
        unique=True,
        postgresql_where=sa.text("revoked_at IS NULL"),
    )
    op.execute("ALTER TABLE bridge_bindings ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE bridge_bindings FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON bridge_bindings USING ({USING})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON bridge_bindings TO {ROLE}")

    op.add_column("webhooks", sa.Column("connector", sa.Text(), nullable=True))
    op.add_column(
        "webhooks",
        sa.Column("target", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
    )
    op.add_column("webhooks", sa.Column("prompted", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("webhooks", "prompted")
    op.drop_column("webhooks", "target")
    op.drop_column("webhooks", "connector")
    op.drop_table("bridge_bindings")
