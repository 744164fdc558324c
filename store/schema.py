"""The Postgres schema, declared once with SQLAlchemy Core.

Alembic migrations in ``store/migrations`` must replay to exactly this (a test
compares them, row-level security and grants included). Every table carries
``tenant_id`` first in its key and in every index that is looked up, so no query can
reach across tenants by accident.

Row-level security is the second layer (``row_security``): every tenant-keyed table
shows a statement only the rows of the tenant its session is set to
(``turnkeep.tenant``, set by store/db.py), or every row for ``*``, the setting of
the cross-tenant system scans (store/statements.py ``CROSS_TENANT``). The policies
are forced, so they bind the tables' owner too; only a superuser or a role with
BYPASSRLS passes them. The application connects as ``APP_ROLE`` (neither, nor the
owner: it may read and write rows, nothing more); migrations run as the owner.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    Sequence,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from turnkeep.runtime.states import ACTIVE_STATES, OUTCOME_EVENTS, EventType, TurnState
from turnkeep.store.attachments import AttachmentState
from turnkeep.store.row_security import install
from turnkeep.store.schema_base import in_list
from turnkeep.store.schema_base import metadata as metadata  # re-exported: migrations read it here
from turnkeep.store.schema_bridges import bridge_bindings as bridge_bindings

# erasure's tables (tombstones) and the provider state kept out of the journal
from turnkeep.store.schema_erasure import provider_state as provider_state
from turnkeep.store.schema_erasure import session_tombstones as session_tombstones

# the planes' tables, registered on the same metadata before row security is installed
from turnkeep.store.schema_eval import EVAL_TABLES
from turnkeep.store.schema_feedback import feedback as feedback
from turnkeep.store.schema_limits import tenant_limits as tenant_limits
from turnkeep.store.schema_schedules import schedules as schedules
from turnkeep.store.schema_search import TABLES as SEARCH_TABLES
from turnkeep.store.schema_search import searchable

# Projects (api/service/projects.py, docs/projects.md): a tenant's sessions grouped under
# one owner, who alone sees them, and its overrides of agents (runtime/projects.py).
projects = Table(
    "projects",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("project_id", Text, nullable=False),
    # the subject whose token created it
    Column("owner", Text, nullable=False),
    # {"agents": {<agent name>: {"instructions": ..., "limits": {...}}}}; a turn pins
    # its agent's entry at admission, so a change reaches only turns admitted after it
    Column("overrides", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    # the hash of the creating request's overrides: tells its replay from another
    Column("request_hash", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "project_id"),
    CheckConstraint("jsonb_typeof(overrides) = 'object'", name="overrides"),
)
# the owner's projects newest first (GET /v1/projects)
_p = projects.c
Index("ix_projects_owner", _p.tenant_id, _p.owner, _p.created_at, _p.project_id)

#: the context epochs of sessions (sessions.context_epoch)
context_epochs = Sequence("session_context_epochs", metadata=metadata)

sessions = Table(
    "sessions",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("agent_name", Text, nullable=False),
    # highest fence Postgres has accepted; the floor for every Redis token
    Column("fence", BigInteger, nullable=False, server_default=text("0")),
    # seq of the newest journal event; bumped in the same statement that checks the fence
    Column("head_seq", BigInteger, nullable=False, server_default=text("0")),
    # seq of the oldest retained event: the journal prune (prune_events) deletes
    # the events below it and moves it in the same statement; a cursor before it is 410
    Column("earliest_seq", BigInteger, nullable=False, server_default=text("1")),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # last journal progress; the recovery scan's "no recent progress"
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # a fork's source session and the seq it was cut at (POST .../fork, store/forks.py);
    # NULL for a session that is not a fork (migration 0009)
    Column("forked_from_session", Text, nullable=True),
    Column("forked_from_seq", BigInteger, nullable=True),
    # the project the session's first turn named (NULL: none); never changes, and every
    # later turn must name it too (migration 0010)
    # tokens and cost of every model call of the session, counted by each step's commit
    Column("usage", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("project_id", Text, nullable=True),
    # session TTL (docs/erasure.md): the seconds a turn named (else the tenant's default
    # applies), and when the session is gone unless another turn comes first: each
    # admission sets it to now + TTL. At it, reads and admissions answer 410 and the
    # erasure sweep erases the session (migration 0017)
    Column("expires_after", Integer, nullable=True),
    Column("expires_at", DateTime(timezone=True), nullable=True),
    # set by the tombstone's statement: from then on no admission writes the row (its
    # upsert's guard), and the eraser deletes it last
    Column("deleted_at", DateTime(timezone=True), nullable=True),
    # what a worker's cached context window was read under (store/context_cache.py):
    # a value no other session ever had, and a new one whenever earlier events are
    # deleted (prune_events) or the session is tombstoned (migration 0025)
    Column(
        "context_epoch",
        BigInteger,
        nullable=False,
        server_default=text("nextval('session_context_epochs'::regclass)"),
    ),
    PrimaryKeyConstraint("tenant_id", "session_id"),
    ForeignKeyConstraint(
        ["tenant_id", "project_id"], ["projects.tenant_id", "projects.project_id"]
    ),
    CheckConstraint("expires_after > 0", name="expires_after"),
    CheckConstraint("fence >= 0 AND head_seq >= 0", name="counters"),
    CheckConstraint("earliest_seq >= 1 AND earliest_seq <= head_seq + 1", name="earliest"),
    CheckConstraint(
        "(forked_from_session IS NULL) = (forked_from_seq IS NULL)", name="forked_from"
    ),
)

# the tenant's sessions newest first (GET /v1/sessions): by created_at, which never
# changes, not updated_at, which every step's commit moves
Index("ix_sessions_created", sessions.c.tenant_id, sessions.c.created_at, sessions.c.session_id)
# the erasure sweep's walk over sessions past their TTL (across tenants)
Index(
    "ix_sessions_expires",
    sessions.c.expires_at,
    postgresql_where=text("expires_at IS NOT NULL AND deleted_at IS NULL"),
)

turns = Table(
    "turns",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("turn_id", Text, nullable=False),
    # global admission order; a session's lane runs its turns by it, oldest first
    Column("ordinal", BigInteger, Identity(always=True), nullable=False),
    Column("state", Text, nullable=False),
    Column("agent_name", Text, nullable=False),
    Column("agent_hash", Text, nullable=False),
    Column("input_hash", Text, nullable=False),
    Column("input", JSONB, nullable=False),
    Column("output_schema", JSONB, nullable=True),
    Column("budget", JSONB, nullable=True),
    Column("attempt", Integer, nullable=False, server_default=text("0")),
    # bumped by every transition; the CAS guard beside the fence
    Column("revision", BigInteger, nullable=False, server_default=text("0")),
    Column("cancel_requested", Boolean, nullable=False, server_default=text("false")),
    # the open input request of a waiting turn (see docs/turn-states.md); NULL otherwise
    Column("pending_input", JSONB, nullable=True),
    Column("result", JSONB, nullable=True),
    Column("error", JSONB, nullable=True),
    Column("accepted_seq", BigInteger, nullable=False),
    # the subject whose token admitted the turn: who may answer its input requests
    # tokens and cost of the turn's model calls (a recovered call charged again),
    # counted by each step's commit (fenced_append)
    Column("usage", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("submitted_by", Text, nullable=False, server_default=text("''")),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # the version of the turn's definition ('': admitted before versions were kept)
    Column("agent_version", Text, nullable=False, server_default=text("''")),
    # what the turn does once a newer version of its agent is deployed (pinned at
    # admission with the hash: a worker without the turn's definition reads it here)
    Column("on_deploy", Text, nullable=False, server_default=text("'upgrade'")),
    # an operator asked for the turn to move to its agent's newest version
    Column("upgrade_requested", Boolean, nullable=False, server_default=text("false")),
    PrimaryKeyConstraint("tenant_id", "session_id", "turn_id"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id"], ["sessions.tenant_id", "sessions.session_id"]
    ),
    CheckConstraint(in_list("state", list(TurnState)), name="state"),
)
# a session's turns newest first, a page at a time (GET /v1/sessions/{sid}/turns):
# ordinal never changes, so the index costs an admission one entry and no step anything
Index("ix_turns_session_ordinal", turns.c.tenant_id, turns.c.session_id, turns.c.ordinal)
# the lane and the recovery scan look only at active turns
Index(
    "ix_turns_active_lane",
    turns.c.tenant_id,
    turns.c.session_id,
    turns.c.ordinal,
    postgresql_where=text(in_list("state", ACTIVE_STATES)),
)
# a max_running limit counts a tenant's (or an agent's) running turns (store/max_running.py)
Index(
    "ix_turns_running",
    turns.c.tenant_id,
    turns.c.agent_name,
    postgresql_where=text(f"state = '{TurnState.RUNNING.value}'"),
)

# sessions' and turns' metadata, a turn's project, the search indexes (schema_search.py)
searchable(sessions, turns)

events = Table(
    "events",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    # per-session, contiguous from 1, no gaps
    Column("seq", BigInteger, nullable=False),
    Column("turn_id", Text, nullable=False),
    Column("type", Text, nullable=False),
    # the model or tool step an outcome belongs to; NULL for turn-level events
    Column("step", Integer, nullable=True),
    # the fence the event was written under; 0 for the API's own events
    Column("fence", BigInteger, nullable=False, server_default=text("0")),
    Column("data", JSONB, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "session_id", "seq"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id"], ["sessions.tenant_id", "sessions.session_id"]
    ),
    CheckConstraint(in_list("type", list(EventType)), name="type"),
    CheckConstraint("seq > 0", name="seq_positive"),
)
# one outcome per step, enforced by the database rather than trusted to the worker
Index(
    "ix_events_one_outcome_per_step",
    events.c.tenant_id,
    events.c.session_id,
    events.c.turn_id,
    events.c.step,
    unique=True,
    postgresql_where=text(in_list("type", OUTCOME_EVENTS)),
)
Index("ix_events_turn", events.c.tenant_id, events.c.session_id, events.c.turn_id, events.c.seq)
# the newest compaction of a session: the context window's base (start_turn) and the
# journal prune's floor (prune_events)
Index(
    "ix_events_compacted",
    events.c.tenant_id,
    events.c.session_id,
    events.c.seq,
    postgresql_where=text(f"type = '{EventType.CONTEXT_COMPACTED.value}'"),
)

# The webhook outbox of workflow nodes (api/http/workflows.py, worker/webhooks.py):
# written with the turn at admission, in one transaction, so a turn that settles by
# any statement (a worker's, a cancellation's, an interrupt's) is found here by the
# delivery pass, whoever settled it and whatever crashed after. Undelivered while
# delivered_at is NULL; next_attempt_at is both the schedule and the claim's lease.
webhooks = Table(
    "webhooks",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("turn_id", Text, nullable=False),
    # the workflow run and node the turn answers (sent in the body)
    Column("run_id", Text, nullable=False),
    Column("node_id", Text, nullable=False),
    Column("url", Text, nullable=False),
    # which signing secret was configured at admission (runtime/webhooks.secret_id)
    Column("secret_id", Text, nullable=False),
    # chosen at admission, the same on every attempt: receivers dedupe by it
    Column("delivery_id", Text, nullable=False),
    # attempts started (claims), failed or not
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    # when a deliverer may next take it: now at admission, the backoff after a failed
    # attempt, the claim's lease while an attempt runs
    Column("next_attempt_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # the newest claim's token: only its holder records a failure
    Column("claim", Text, nullable=True),
    # the last attempt's HTTP status (NULL: no answer) and why it failed
    Column("last_status", Integer, nullable=True),
    Column("last_error", Text, nullable=True),
    # set once a receiver acknowledged (2xx); never unset
    Column("delivered_at", DateTime(timezone=True), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # a chat bridge's reply (docs/bridges.md): the connector that posts it ('slack'), and
    # where in the conversation (its thread); NULL: the signed turnkeep webhook
    Column("connector", Text, nullable=True),
    Column("target", JSONB, nullable=True),
    # the request id of the last input request the bridge asked about in the thread
    # (an approval's buttons): each open request is asked about once
    Column("prompted", Text, nullable=True),
    PrimaryKeyConstraint("tenant_id", "session_id", "turn_id"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id", "turn_id"],
        ["turns.tenant_id", "turns.session_id", "turns.turn_id"],
    ),
    CheckConstraint("url ~ '^https?://'", name="url"),
    CheckConstraint("attempts >= 0", name="attempts"),
)
# the delivery pass's keyset walk over what is undelivered and due (across tenants,
# like the recovery scan): delivered rows leave the index
Index(
    "ix_webhooks_due",
    webhooks.c.next_attempt_at,
    webhooks.c.tenant_id,
    webhooks.c.session_id,
    webhooks.c.turn_id,
    postgresql_where=text("delivered_at IS NULL"),
)


# The recorded steps of tool calls (ToolContext.step, worker/tool_steps.py): a tool's
# own memo of the effects it has done, keyed by its call's idempotency key (tenant,
# session, turn, step) and the step name. Written once (the first writer wins) and
# never updated; not fenced (an effect a stale worker did happened all the same).
tool_steps = Table(
    "tool_steps",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("turn_id", Text, nullable=False),
    # the tool call's step in the turn
    Column("step", Integer, nullable=False),
    Column("name", Text, nullable=False),
    # what the step's function returned (JSON; 'null' for None)
    Column("result", JSONB, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "session_id", "turn_id", "step", "name"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id"], ["sessions.tenant_id", "sessions.session_id"]
    ),
    CheckConstraint("length(name) BETWEEN 1 AND 200", name="name"),
)


# Attachments of a session (api/http/attachments.py, store/attachments.py): content
# a turn's input refers to by id. Uploaded pending, content written, then ready;
# deleted by way of deleting; pending and deleting rows nobody finished are swept
# (sweep_attachments, across tenants, on ix_attachments_state).
attachments = Table(
    "attachments",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("session_id", Text, nullable=False),
    Column("attachment_id", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("filename", Text, nullable=False),
    # the media type, one of the API's allowlist (api/service/attachments.py)
    Column("content_type", Text, nullable=False),
    # bytes of content, and their SHA-256 (hex), computed by the API
    Column("size", Integer, nullable=False),
    Column("sha256", Text, nullable=False),
    # NULL until the upload's second statement writes it
    Column("data", LargeBinary, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "session_id", "attachment_id"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id"], ["sessions.tenant_id", "sessions.session_id"]
    ),
    CheckConstraint(in_list("state", list(AttachmentState)), name="state"),
    CheckConstraint("size >= 0", name="size"),
    CheckConstraint("sha256 ~ '^[0-9a-f]{64}$'", name="sha256"),
    CheckConstraint("length(filename) BETWEEN 1 AND 255", name="filename"),
    CheckConstraint(
        f"state <> '{AttachmentState.READY.value}' OR data IS NOT NULL", name="ready_has_data"
    ),
    CheckConstraint("data IS NULL OR octet_length(data) = size", name="data_size"),
)
# the sweep's walk over pending and deleting rows, oldest first (a full index: its
# statement names the states as parameters, which a partial index's predicate cannot
# be matched against)
Index("ix_attachments_state", attachments.c.state, attachments.c.updated_at)


# Durable memory (runtime/memory.py, worker/memory.py, docs/memory.md): facts an agent
# with a memory scope wrote through its ``remember`` tool, per scope key
# (``subject:<submitted_by>`` or ``project:<project id>``), recalled into later turns
# of that scope as untrusted notes. Keyed by the writing call's idempotency key, so a
# rerun of the call writes nothing more; written once, never updated. Redacted before
# it is written.
memories = Table(
    "memories",
    metadata,
    Column("tenant_id", Text, nullable=False),
    Column("scope_key", Text, nullable=False),
    # the idempotency key of the tool call that wrote it (tenant/session/turn/step)
    Column("source_key", Text, nullable=False),
    Column("fact", Text, nullable=False),
    # where it was remembered: the recall shows it as the fact's source
    Column("session_id", Text, nullable=False),
    Column("turn_id", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("tenant_id", "scope_key", "source_key"),
    ForeignKeyConstraint(
        ["tenant_id", "session_id"], ["sessions.tenant_id", "sessions.session_id"]
    ),
    CheckConstraint("length(fact) BETWEEN 1 AND 2000", name="fact"),
)
# a scope's facts newest first (recall_facts)
Index(
    "ix_memories_recall",
    memories.c.tenant_id,
    memories.c.scope_key,
    memories.c.created_at.desc(),
)


# -- row-level security and the application's role (migration 0006; store/row_security.py)

#: every table keyed by tenant, each under the tenant policy
TENANT_TABLES = (
    "sessions",
    "turns",
    "events",
    "webhooks",
    "tool_steps",
    "attachments",
    "projects",
    "memories",
    "schedules",
    "feedback",
    "bridge_bindings",
    # the evaluation plane (store/schema_eval.py, migration 0019)
    *EVAL_TABLES,
    "session_tombstones",
    "provider_state",
    *SEARCH_TABLES,
    "tenant_limits",
)
#: the identity sequence of turns.ordinal, and sessions' context epochs
SEQUENCES = ("turns_ordinal_seq", "session_context_epochs")

# metadata.create_all (the schema test) builds what migration 0006 does
install(metadata, TENANT_TABLES, SEQUENCES, turns)
