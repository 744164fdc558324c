"""Durable memory: facts remembered and recalled (runtime/memory.py,
worker/memory.py; the statements of sql/memory.sql; docs/memory.md)."""

from __future__ import annotations

from datetime import datetime

from turnkeep.store.records import MemoryRecord
from turnkeep.store.statements import Statements


class Memory(Statements):
    """Facts of a scope, written once per writing tool call."""

    def remember_fact(
        self,
        tenant_id: str,
        scope_key: str,
        source_key: str,
        fact: str,
        *,
        session_id: str,
        turn_id: str,
    ) -> bool:
        """Keep ``fact`` under ``scope_key``, written by the tool call ``source_key``
        (its idempotency key): whether this call wrote it (False: a run of that call
        wrote it before). Not fenced (see ``remember_fact``)."""
        row = self._one(
            "remember_fact",
            {
                "tenant_id": tenant_id,
                "scope_key": scope_key,
                "source_key": source_key,
                "fact": fact,
                "session_id": session_id,
                "turn_id": turn_id,
            },
        )
        return row is not None

    def recall_facts(
        self, tenant_id: str, scope_key: str, *, before: datetime, limit: int
    ) -> list[MemoryRecord]:
        """At most ``limit`` facts of ``scope_key`` remembered before ``before``, newest
        first."""
        rows = self._rows(
            "recall_facts",
            {"tenant_id": tenant_id, "scope_key": scope_key, "before": before, "limit": limit},
        )
        return [MemoryRecord(**r) for r in rows]
