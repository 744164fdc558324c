"""What search adds to the turn's core (store/schema.py gathers it; migration 0018):
the ``metadata`` of sessions and turns, a turn's project beside it, the indexes the
searches walk and the metadata's own tables (store/sql/search.sql, docs/search.md).

The indexes were chosen from ``EXPLAIN`` of the searches on 100,000 turns across
tenants (``python -m bench --only search`` prints the plans; docs/search.md has them):

- every search pages newest first by ``(created_at, ordinal)`` for turns and
  ``(created_at, session_id)`` for sessions, both fixed at admission, so a cursor is
  stable and a time range is an index range: ``ix_turns_created`` is the turns' walk
  (ix_sessions_created, migration 0007, the sessions');
- ``ix_turns_state`` walks one state's turns newest first: the failed, cancelled,
  waiting and needs_reconciliation ones only (``FOUND_BY_STATE``; an error code is
  only ever on a failed or cancelled turn, so its search walks these too);
  ``ix_turns_project`` one project's, holding only turns in a project. A turn's
  project is its session's, copied at admission (``turns.project_id``), so a search
  shows a project's turns to its owner alone without a join to the session per row;
- metadata: no operator on jsonb is leakproof, so under the forced row-level security
  of every tenant table Postgres may not use any index of a jsonb column for a search
  (an index condition would run before the policy's). Each label is kept once more as
  a row (``turn_metadata``, ``session_metadata``, written by the statement that admits
  the turn or creates the session), whose text equality is leakproof: its pair index
  walks one ``key=value``'s turns newest first, index-only (it holds the turn's key).

None holds ``updated_at``, which every step's commit moves: an index on it would cost
each commit an index write (no heap-only update); an ``updated_*`` range is a filter.
A turn's state changes a few times in its life, never per step; agents are few, so an
agent is a filter too (the walk by creation found one agent's turns in about a
millisecond).

The metadata rows have no foreign key: only the statement that writes their turn or
session writes them (admission, a fork's copy, a rerun), and a key's check would cost
every labelled admission a lookup per label (0.4 ms on a 4 ms admission, measured).
Whatever deletes a session's turns deletes its rows here too, by (tenant_id,
session_id): both primary keys lead with it.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Index,
    PrimaryKeyConstraint,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

from turnkeep.runtime.metadata import KEY_PATTERN, MAX_VALUE
from turnkeep.runtime.states import PARKED_STATES, TurnState
from turnkeep.store.schema_base import in_list, metadata

#: the tables search adds, both keyed by tenant (under the tenant policy)
TABLES = ("session_metadata", "turn_metadata")
#: the states ix_turns_state holds: the turns that did not complete and those waiting
#: for someone, few of a tenant's, the ones looked for by state. Not queued, running
#: (ix_turns_active_lane has them) or completed (most turns: the walk by creation finds
#: them at once), so an admission writes nothing to it
FOUND_BY_STATE = PARKED_STATES | {TurnState.FAILED, TurnState.CANCELLED}

_KEY_CHECK = f"key ~ '{KEY_PATTERN}'"
_VALUE_CHECK = f"length(value) <= {MAX_VALUE}"


def _metadata_column(table: Table) -> None:
    # {} when none: a constant default, added without rewriting the table
    table.append_column(
        Column("metadata", JSONB, nullable=False, server_default=text("'{}'::jsonb"))
    )
    table.append_constraint(CheckConstraint("jsonb_typeof(metadata) = 'object'", name="metadata"))


def searchable(sessions: Table, turns: Table) -> None:
    """Add the metadata columns, a turn's project and the turns' search indexes."""
    _metadata_column(sessions)
    _metadata_column(turns)
    # the session's project, copied at admission (NULL: none); never changes
    turns.append_column(Column("project_id", Text, nullable=True))
    t = turns.c
    Index("ix_turns_created", t.tenant_id, t.created_at, t.ordinal)
    Index(
        "ix_turns_state",
        t.tenant_id,
        t.state,
        t.created_at,
        t.ordinal,
        postgresql_where=text(in_list("state", FOUND_BY_STATE)),
    )
    Index(
        "ix_turns_project",
        t.tenant_id,
        t.project_id,
        t.created_at,
        t.ordinal,
        postgresql_where=text("project_id IS NOT NULL"),
    )


# a turn's labels, one row each (the turn's metadata column holds them all); with the
# turn's creation time and ordinal, so a pair's walk is in the searches' order
turn_metadata = Table(
    "turn_metadata",
    metadata,
    *(Column(c, Text, nullable=False) for c in ("tenant_id", "session_id", "turn_id")),
    Column("key", Text, nullable=False),
    Column("value", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("ordinal", BigInteger, nullable=False),
    PrimaryKeyConstraint("tenant_id", "session_id", "turn_id", "key"),
    CheckConstraint(_KEY_CHECK, name="key"),
    CheckConstraint(_VALUE_CHECK, name="value"),
)
_m = turn_metadata.c
Index(
    "ix_turn_metadata_pair",
    _m.tenant_id,
    _m.key,
    _m.value,
    _m.created_at,
    _m.ordinal,
    postgresql_include=["session_id", "turn_id"],
)

# a session's labels, one row each, with the session's creation time
session_metadata = Table(
    "session_metadata",
    metadata,
    *(Column(c, Text, nullable=False) for c in ("tenant_id", "session_id", "key", "value")),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("tenant_id", "session_id", "key"),
    CheckConstraint(_KEY_CHECK, name="key"),
    CheckConstraint(_VALUE_CHECK, name="value"),
)
_s = session_metadata.c
Index("ix_session_metadata_pair", _s.tenant_id, _s.key, _s.value, _s.created_at, _s.session_id)
