"""max_running in the store (the statements of sql/max_running.sql): a tenant's declared
limit, and the start of a head under a limit.

A slot is a ``running`` turn row. The worker leaves a head under a limit (its tenant's,
from ``tenant_limits`` or the setting; its agent's, from the definition) out of the
ordinary start statement, which stays as it was; ``start_limited`` takes the tenant's
limit lock (a session lock of one pooled connection), counts the running turns (every
start committed before is seen, and no other limited start of the tenant runs beside
it), starts the head only below each limit, and gives the lock back. So a limit is never overrun;
past it, the refusal names the scope (``tenant`` or ``agent``) and nothing is
written. Counting rows means a worker that dies keeps its turn's slot counted until
the turn is taken over and ends: no slot is lost, and none is handed out twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from psycopg.errors import DivisionByZero

from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.store.connector import Connector
from turnkeep.store.context_cache import NO_WINDOW, ContextCache
from turnkeep.store.db import Database, Row
from turnkeep.store.errors import LeaseLost
from turnkeep.store.records import LaneStarted
from turnkeep.store.rows import first
from turnkeep.store.statements import Statements
from turnkeep.store.turns import START_RACE_TRIES, started_from


@dataclass(frozen=True)
class TenantLimits:
    """A tenant's declared limits (``tenant_limits``)."""

    tenant_id: str
    #: at most this many of its turns running at once; None: none declared
    max_running: int | None
    updated_by: str
    updated_at: datetime


def _limits(row: Row) -> TenantLimits:
    return TenantLimits(
        tenant_id=row["tenant_id"],
        max_running=row["max_running"],
        updated_by=row["updated_by"],
        updated_at=row["updated_at"],
    )


class MaxRunning(Statements):
    """A tenant's declared max_running (docs/flow-control.md): the store's part. Its
    starts keep and extend the process's context windows as ``Turns.start`` does
    (``context``, the same cache)."""

    def __init__(self, db: Database | Connector, *, context: ContextCache, **window: int) -> None:
        super().__init__(db, **window)
        self.context = context

    def get_limits(self, tenant_id: str) -> TenantLimits | None:
        row = self._one("get_limits", {"tenant_id": tenant_id})
        return None if row is None else _limits(row)

    def set_limits(
        self, tenant_id: str, *, max_running: int | None, updated_by: str
    ) -> TenantLimits:
        row = self._one(
            "set_limits",
            {"tenant_id": tenant_id, "max_running": max_running, "updated_by": updated_by},
        )
        assert row is not None  # an upsert returns its row
        return _limits(row)

    def declared_limits(self) -> dict[str, int]:
        """Every tenant's declared max_running (a cross-tenant read)."""
        return {r["tenant_id"]: int(r["max_running"]) for r in self._rows("declared_limits", {})}

    def waiting_heads(self, tenant_id: str, session_ids: list[str]) -> set[str]:
        """Which of ``session_ids`` still wait for a slot: their lane head is queued,
        or back from a wait with its answer (store/held.py's wake skips the rest)."""
        if not session_ids:
            return set()
        params = {"tenant_id": tenant_id, "session_ids": session_ids}
        return {r["session_id"] for r in self._rows("waiting_heads", params)}

    def start_limited(
        self,
        tenant_id: str,
        session_id: str,
        fence: int,
        *,
        agent_name: str,
        agent_hashes: Sequence[str],
        max_attempts: int,
        tenant_max: int | None,
        agent_max: int | None,
        tenant_default: int | None = None,
    ) -> tuple[LaneStarted | None, str | None, bool]:
        """Start the lane head (of ``agent_name``, its fence confirmed, not claimed)
        under the tenant's limit lock when its scopes are below their limits: (what
        ``start`` says, None, whether a slot of each scope is left after it); else
        (None, the scope at its limit, False), nothing written. ``tenant_max`` (a
        worker's cached reading) says whether the tenant's limit counts; the one it
        counts against is the tenant's declared limit as it stands (a raise or a clear
        lets the start through at once), else ``tenant_default``."""
        cached = self.context.get(tenant_id, session_id)
        params = {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "fence": fence,
            "claim": False,
            "agent_hashes": list(agent_hashes),
            "max_attempts": max_attempts,
            "window_rows": self.window_rows,
            "window_bytes": self.window_bytes,
            **(NO_WINDOW if cached is None else cached.since()),
        }
        tries = START_RACE_TRIES
        lock = {"tenant_id": tenant_id}
        while True:
            try:
                with self.connector.session(tenant_id) as conn:
                    conn.rows("limit_lock", lock)
                    try:
                        hit(FaultPoint.LIMIT_LOCK_HELD)
                        counts = first(
                            conn.rows(
                                "count_running", {"tenant_id": tenant_id, "agent_name": agent_name}
                            )
                        )
                        assert counts is not None  # an aggregate has its row
                        if tenant_max is not None:
                            declared = counts["declared"]
                            tenant_max = tenant_default if declared is None else int(declared)
                        tenant_running, agent_running = (
                            int(counts["tenant_running"]),
                            int(counts["agent_running"]),
                        )
                        if tenant_max is not None and tenant_running >= tenant_max:
                            return None, "tenant", False
                        if agent_max is not None and agent_running >= agent_max:
                            return None, "agent", False
                        room = (tenant_max is None or tenant_running + 1 < tenant_max) and (
                            agent_max is None or agent_running + 1 < agent_max
                        )
                        row = first(conn.rows("start_turn", params))
                        hit(FaultPoint.AFTER_LIMITED_START)
                    finally:
                        conn.rows("limit_unlock", lock)
                return (
                    started_from(row, tenant_id, session_id, fence, self.context, cached, self),
                    None,
                    room,
                )
            except DivisionByZero as exc:  # the head moved under it (LaneHeadMoved)
                tries -= 1
                if not tries:
                    raise LeaseLost("the lane head kept moving while its attempt started") from exc
