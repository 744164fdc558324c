"""An in-memory store for tests, below the facade: the same named statements the
real ``Store`` runs (store/sql/*.sql), answered in Python over dicts, in the way
procrastinate's ``InMemoryConnector`` answers its manager's queries.

    from turnkeep.store.testing import in_memory_store
    store = in_memory_store()  # a store.facade.Store: its own code runs unchanged

The facade's code runs as it does over Postgres (rows into records, refusals into
their named reasons, the start's retries); only the statements are answered here:

==========================  =======================================================
store/testing/turns.py      sql/turns.sql: admit_turn, lock_session, interrupt_lane,
                            insert_webhook, claim_fence, start_turn, fenced_append,
                            request_cancel, resolve_input
store/testing/reads.py      sql/reads.sql (but list_sessions), sql/tool_steps.sql,
                            sql/memory.sql
store/testing/tables.py     the tables, and what the statements share
store/testing/in_memory.py  ``InMemoryConnector``: dispatch by name, transactions
==========================  =======================================================

Any other statement raises ``NotImplementedError`` naming it. tests/contract/ runs
the same cases against this store and Postgres. Where it differs, on purpose: the
statements run one at a time (one lock, so none of Postgres's races), row-level
security is not mirrored, and the context window's byte bound weighs the JSON text,
not ``pg_column_size``.
"""

from __future__ import annotations

from turnkeep.store.facade import Store
from turnkeep.store.testing.in_memory import STATEMENTS, InMemoryConnector
from turnkeep.store.testing.tables import Tables

__all__ = ["STATEMENTS", "InMemoryConnector", "Tables", "in_memory_store"]


def in_memory_store(**window: int) -> Store:
    """A ``Store`` over a fresh ``InMemoryConnector`` (``window_rows``,
    ``window_bytes``: the context window's bounds, as ``Store`` takes them)."""
    return Store(InMemoryConnector(), **window)
