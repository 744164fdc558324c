"""The recovery scans and the backlog gauges: statements that run across tenants
(``CROSS_TENANT``, the statements of sql/scans.sql)."""

from __future__ import annotations

from datetime import UTC, datetime

from turnkeep.store.statements import Statements

#: keyset position of the recovery scan: (updated_at, tenant_id, session_id)
StalledCursor = tuple[datetime, str, str]


class Scans(Statements):
    """What recovery (recovery/scan.py) and the metrics find across tenants."""

    def expired_inputs(self, *, limit: int) -> list[tuple[str, str, str, str]]:
        """(tenant, session, turn, request id) of waits whose request expired unanswered."""
        rows = self._rows("scan_expired_inputs", {"limit": limit})
        return [(r["tenant_id"], r["session_id"], r["turn_id"], r["request_id"]) for r in rows]

    def settled_delegations(self, *, limit: int) -> list[tuple[str, str, str]]:
        """(tenant, session, turn) of parents whose delegation is unanswered though
        every child has ended."""
        rows = self._rows("scan_delegations", {"limit": limit})
        return [(r["tenant_id"], r["session_id"], r["turn_id"]) for r in rows]

    def stalled_sessions(
        self, *, grace: float, limit: int, after: StalledCursor | None = None
    ) -> tuple[list[tuple[str, str]], StalledCursor | None]:
        """Sessions whose lane head can run and whose journal has not moved in ``grace``,
        oldest first, one keyset page; the cursor for the next page (None at the end)."""
        ts, tenant, session = after or (datetime(1970, 1, 1, tzinfo=UTC), "", "")
        rows = self._rows(
            "scan_stalled",
            {
                "grace": grace,
                "limit": limit,
                "after_ts": ts,
                "after_tenant": tenant,
                "after_session": session,
            },
        )
        page = [(r["tenant_id"], r["session_id"]) for r in rows]
        last = rows[-1] if rows else None
        cursor = (
            (last["updated_at"], last["tenant_id"], last["session_id"])
            if last is not None and len(rows) == limit
            else None
        )
        return page, cursor

    def active_turn_counts(self) -> dict[tuple[str, str], int]:
        """Active turns across tenants by (agent, state): what the backlog gauges show."""
        rows = self._rows("count_active_turns", {})
        return {(str(r["agent_name"]), str(r["state"])): int(r["n"]) for r in rows}
