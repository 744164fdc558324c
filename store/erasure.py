"""Erasure of a session (the statements of sql/erasure.sql; docs/erasure.md): its
tombstone, the bounded batches that delete what it held, the statement that deletes
its row last, and the sweep's work lists. The loop that runs the batches is the
worker's (worker/erasure.py); the sweep that finds expired sessions and stalled
erasures is recovery's (recovery/erasure.py)."""

from __future__ import annotations

from enum import StrEnum

import psycopg.errors as pg

from turnkeep.store.connector import Connector
from turnkeep.store.context_cache import ContextCache
from turnkeep.store.db import Database
from turnkeep.store.erasure_registry import Part
from turnkeep.store.errors import NotFound
from turnkeep.store.records import Tombstoned, TombstoneRecord
from turnkeep.store.rows import first, tombstone_record
from turnkeep.store.statements import Statements, tenant_of

#: sessions per page of the sweep's work lists
SWEEP_PAGE = 500


class Reason(StrEnum):
    """Why a session was erased (persisted: ``session_tombstones.reason``)."""

    #: someone with a member's or an admin's token deleted it
    DELETED = "deleted"
    #: its TTL ran out (``expires_at``) and the erasure sweep found it
    EXPIRED = "expired"


class Erasure(Statements):
    """A session's tombstone and the erasure of everything it held. The tombstone also
    drops the session's context window from this process's cache (``context``; other
    processes' are refused by the context epoch it moves: store/context_cache.py)."""

    def __init__(self, db: Database | Connector, *, context: ContextCache, **window: int) -> None:
        super().__init__(db, **window)
        self.context = context

    def tombstone(
        self,
        tenant_id: str,
        session_id: str,
        *,
        reason: Reason,
        deleted_by: str | None,
        expired_only: bool = False,
    ) -> Tombstoned:
        """Fence the session off and leave its tombstone, in one short transaction: lock
        its row (``lock_for_erasure``), then mark it deleted, write the tombstone and
        cancel its active turns (``tombstone_session``). From the commit on every read
        answers 410 and no admission or worker write lands.

        Idempotent: a session deleted already answers its tombstone (``created=False``).
        ``NotFound`` for no session and no tombstone; with ``expired_only`` (the TTL's),
        also for a session not past its expiry (an admission came first)."""
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "reason": reason.value,
            "deleted_by": deleted_by,
            "expired_only": expired_only,
        }
        with self.connector.transaction(tenant_of(params)) as tx:
            tx.rows("lock_for_erasure", params)
            row = first(tx.rows("tombstone_session", params))
        self.context.drop(tenant_id, session_id)
        if row is not None:
            return Tombstoned(tombstone_record(row), created=True, cancelled=int(row["cancelled"]))
        found = self._tombstone(tenant_id, session_id)
        if found is None:
            raise NotFound("session not found")
        return Tombstoned(found, created=False)

    def _tombstone(self, tenant_id: str, session_id: str) -> TombstoneRecord | None:
        row = self._one("get_tombstone", {"tenant_id": tenant_id, "session_id": session_id})
        return None if row is None else tombstone_record(row)

    def erase_rows(self, tenant_id: str, session_id: str, part: Part, *, batch: int) -> int:
        """Delete at most ``batch`` rows of ``part`` of a tombstoned session, one
        statement (its own transaction); how many. Nothing of a session without a
        tombstone, or whose erasure has finished."""
        row = self._one(
            part.value, {"tenant_id": tenant_id, "session_id": session_id, "batch": batch}
        )
        return 0 if row is None else int(row["deleted"])

    def finish_erasure(self, tenant_id: str, session_id: str) -> TombstoneRecord | None:
        """Delete the session row, the last of its erasure, and mark the tombstone
        erased; the tombstone as it stands, None for no tombstone. Its ``erased_at``
        is None when the session may not go yet: a snapshot older than the tombstone is
        still open, or a row written after the batches passed still references the
        session (its foreign key refused the statement: run the batches again)."""
        params = {"tenant_id": tenant_id, "session_id": session_id}
        try:
            row = self._one("erase_session_row", params)
        except pg.ForeignKeyViolation:
            return self._tombstone(tenant_id, session_id)
        return None if row is None else tombstone_record(row)

    def expired_sessions(self, *, limit: int = SWEEP_PAGE) -> list[tuple[str, str]]:
        """Sessions past their TTL with no tombstone yet, oldest expiry first (across
        tenants)."""
        return [
            (r["tenant_id"], r["session_id"])
            for r in self._rows("expired_sessions", {"limit": limit})
        ]

    def stalled_erasures(self, *, grace: float, limit: int = SWEEP_PAGE) -> list[tuple[str, str]]:
        """Tombstoned sessions whose erasure has not moved for ``grace`` seconds, oldest
        first (across tenants)."""
        rows = self._rows("stalled_erasures", {"grace": grace, "limit": limit})
        return [(r["tenant_id"], r["session_id"]) for r in rows]
