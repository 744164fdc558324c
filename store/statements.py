"""The one way the store runs a statement: by name, as its tenant sees the tables.

``Statements`` runs the named blocks of ``sql/*.sql`` (store/sql.py) through its
connector (store/connector.py): on a process's Postgres pool, in autocommit, one
round trip and one server transaction each; or in memory (store/testing/, the unit
tests' store), the same names answered in Python. Every concern of the store
(store/turns.py, reads.py, …) is a ``Statements`` with its own methods, and
``turnkeep.store.facade.Store`` is one too (``ping``, ``close``), holding one of each
concern as a named part (``store.turns``, ``store.reads``, …) on its connector.

Every statement runs as its ``tenant_id`` (store/db.py sets the session's tenant the
row-level security policies read, store/schema.py): a statement that lost its tenant
clause would still see that tenant's rows only. The ``CROSS_TENANT`` scans alone run
as every tenant.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from psycopg.errors import DivisionByZero

from turnkeep.store.connector import Connector, PostgresConnector
from turnkeep.store.db import ALL_TENANTS, Database, Row
from turnkeep.store.errors import refusal

#: the statements that run across tenants, with no ``:tenant_id``: the recovery scans
#: (stalled lanes, expired inputs), the journal retention's work list and the webhook
#: delivery pass. Only these run with the row-level security setting ``*``
#: (store/db.py ALL_TENANTS); every other statement runs as its ``tenant_id``.
CROSS_TENANT = frozenset(
    {
        "scan_stalled",
        "scan_expired_inputs",
        "retention_candidates",
        "claim_webhooks",
        # the backlog gauges of /metrics (store/producer.py Backlog)
        "count_active_turns",
        # delegations whose children all ended, for the recovery scan to answer
        "scan_delegations",
        # schedules whose next tick is due (recovery/schedules.py), and their move on
        "due_schedules",
        # the chat bridges' parked turns to ask about in their threads (store/outbox.py)
        "due_prompts",
        # the running experiments, for the driver's beat pass (store/experiments.py)
        "scan_experiments",
        # the erasure sweep's work lists: sessions past their TTL, erasures left
        # unfinished (recovery/erasure.py)
        "expired_sessions",
        "stalled_erasures",
        # every tenant's declared max_running, each worker's cache (worker/max_running.py)
        "declared_limits",
    }
) | {"sweep_attachments"}  # the sweep of attachments left pending or deleting

#: the earlier turns' conversation a turn starts with, newest kept: at most this many
#: rows and (stored) bytes after the newest compaction
CONTEXT_WINDOW_ROWS = 2000
CONTEXT_WINDOW_BYTES = 4 << 20


def tenant_of(params: Mapping[str, Any]) -> str:
    """The tenant a statement runs as: its ``tenant_id``, which is never ``*``."""
    tenant = params["tenant_id"]
    if not isinstance(tenant, str) or not tenant or tenant == ALL_TENANTS:
        raise ValueError(f"not a tenant id: {tenant!r}")
    return tenant


class Statements:
    """The store's statements for one process, over Postgres (a ``Database``) or any
    ``Connector``. Thread-safe: every call takes a pooled connection for one
    statement (or one short transaction)."""

    def __init__(
        self,
        db: Database | Connector,
        *,
        window_rows: int = CONTEXT_WINDOW_ROWS,
        window_bytes: int = CONTEXT_WINDOW_BYTES,
    ) -> None:
        #: what it was built over: a Postgres pool, or a connector of its own
        #: (``turnkeep.store.testing.InMemoryConnector``)
        self.db = db
        #: what every statement runs on
        self.connector: Connector = PostgresConnector(db) if isinstance(db, Database) else db
        #: bounds of the earlier turns' conversation start_turn returns
        self.window_rows = window_rows
        self.window_bytes = window_bytes

    @classmethod
    def from_url(cls, url: str, *, pool_size: int = 10, **window: int) -> Self:
        return cls(Database(url, size=pool_size), **window)

    def close(self) -> None:
        self.connector.close()

    def _rows(self, name: str, params: Mapping[str, Any]) -> list[Row]:
        """The one way a statement runs outside a transaction: by name, in autocommit,
        as its ``tenant_id`` sees the tables (a ``CROSS_TENANT`` scan: every tenant).
        A statement that refuses in SQL raises its named reason (store/errors.py
        ``refusal``)."""
        tenant = ALL_TENANTS if name in CROSS_TENANT else tenant_of(params)
        try:
            return self.connector.rows(name, params, tenant=tenant)
        except DivisionByZero as exc:
            raise refusal(name, exc) from exc

    def _one(self, name: str, params: Mapping[str, Any]) -> Row | None:
        rows = self._rows(name, params)
        return rows[0] if rows else None

    def ping(self) -> None:
        """One round trip; ``Unavailable`` when Postgres does not answer."""
        self.connector.ping()
