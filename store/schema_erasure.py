"""The tables of erasure and of what the journal never holds (store/schema.py gathers
them; docs/erasure.md): a deleted session's tombstone, and the opaque provider state
(reasoning) each model call left, kept out of the events table."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKeyConstraint,
    Index,
    PrimaryKeyConstraint,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from turnkeep.store.schema_base import metadata

#: why a session was erased (persisted: pinned in tests/unit/test_persisted_names.py)
TOMBSTONE_REASONS = ("deleted", "expired")

# What stays of an erased session (store/erasure.py): written in the transaction that
# fences the session off (the moment every read answers 410 session_deleted), kept for
# ever, so no admission and no replayed Idempotency-Key re-creates the session. No
# foreign key: it outlives the session row, which the eraser deletes last.
session_tombstones = Table(
    "session_tombstones",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    # the session's project: a non-owner of it is answered 404 still, as before
    Column("project_id", Text, nullable=True),
    Column("reason", Text, nullable=False),
    # the subject whose token deleted it; NULL when it expired (its TTL)
    Column("deleted_by", Text, nullable=True),
    Column("deleted_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # the id of the transaction that wrote it: the session row is deleted only once no
    # snapshot older than it is open (an admission that began before the tombstone
    # committed has ended, refused by the row's deleted_at), so none can re-create it
    Column("tombstone_xid", BigInteger, nullable=False),
    # rows the eraser deleted so far, and when it last got on (the sweep's "stalled")
    Column("erased_rows", BigInteger, nullable=False, server_default=text("0")),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # set by the statement that deletes the session row, the last of the erasure
    Column("erased_at", DateTime(timezone=True), nullable=True),
    PrimaryKeyConstraint("tenant_id", "session_id"),
    CheckConstraint(
        "reason IN (" + ", ".join(f"'{r}'" for r in TOMBSTONE_REASONS) + ")", name="reason"
    ),
    CheckConstraint("erased_rows >= 0", name="erased_rows"),
)
# the sweep's walk over erasures nobody finished (across tenants): erased ones leave it
Index(
    "ix_session_tombstones_erasing",
    session_tombstones.c.updated_at,
    postgresql_where=text("erased_at IS NULL"),
)

# Opaque provider state (runtime/messages.py's envelope: Anthropic's thinking blocks
# and their signatures, redacted_thinking) of the model call whose model.completed is
# event (tenant, session, seq): written by that step's own statement (fenced_append),
# read only by start_turn to build the next request for the same provider; never
# streamed, listed, exported or copied into a fork or a rerun. Goes with its event
# (the journal prune, the erasure).
provider_state = Table(
    "provider_state",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("seq", BigInteger, nullable=False),
    # the provider that answered (the envelope's), which alone may be sent it back
    Column("provider", Text, nullable=False),
    Column("data", JSONB, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "session_id", "seq"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id", "seq"],
        ["events.tenant_id", "events.session_id", "events.seq"],
        ondelete="CASCADE",
    ),
    CheckConstraint("jsonb_typeof(data) = 'object'", name="data"),
)
