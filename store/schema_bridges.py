"""The chat bridges' participant bindings (runtime/bridges): which person of a chat
workspace stands for which subject; store/schema.py gathers it."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    Index,
    PrimaryKeyConstraint,
    Table,
    Text,
    func,
    text,
)

from turnkeep.store.schema_base import metadata

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
