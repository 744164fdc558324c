"""a sender's one live binding is per tenant

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07

A Slack workspace and the generic bridge's secret now belong to one tenant
(``TURNKEEP_SLACK_WORKSPACES``, ``TURNKEEP_BRIDGE_TENANT``, docs/bridges.md), and an
inbound message is looked up in that tenant alone. The unique index on a live binding's
sender was across tenants: a binding left in a workspace later assigned to another
tenant held its sender against the new owner (409 ``binding_taken``) and told it that
another tenant had bound that user. It now leads with the tenant, as the lookup does.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_SENDER = ["bridge", "workspace", "channel", "user_id"]


def upgrade() -> None:
    op.drop_index("ux_bridge_bindings_sender", table_name="bridge_bindings")
    op.create_index(
        "ux_bridge_bindings_sender",
        "bridge_bindings",
        ["tenant_id", *_SENDER],
        unique=True,
        postgresql_where=sa.text("revoked_at IS NULL"),
    )


def downgrade() -> None:
    # two tenants' live bindings of one sender cannot both stay under the old index
    op.drop_index("ux_bridge_bindings_sender", table_name="bridge_bindings")
    op.create_index(
        "ux_bridge_bindings_sender",
        "bridge_bindings",
        _SENDER,
        unique=True,
        postgresql_where=sa.text("revoked_at IS NULL"),
    )
