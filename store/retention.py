"""Journal retention: the prune's work list and the prune (the statements of
sql/retention.sql; recovery/retention.py runs them)."""

from __future__ import annotations

from turnkeep.store.errors import NotFound
from turnkeep.store.records import Pruned
from turnkeep.store.statements import Statements

#: keyset position of the journal prune's walk over sessions: (tenant_id, session_id)
SessionCursor = tuple[str, str]
#: seconds after its turn ended that the prune deletes a recorded tool step (settings:
#: TURNKEEP_TOOL_STEPS_GRACE)
TOOL_STEPS_GRACE = 86_400.0


class Retention(Statements):
    """A bounded journal: what to prune, and one prune statement per session."""

    def retention_candidates(
        self, *, retain: int, limit: int, after: SessionCursor | None = None
    ) -> tuple[list[SessionCursor], SessionCursor | None]:
        """Sessions keeping more than ``retain`` events, one keyset page by primary key;
        the cursor for the next page (None at the end)."""
        tenant, session = after or ("", "")
        rows = self._rows(
            "retention_candidates",
            {"retain": retain, "limit": limit, "after_tenant": tenant, "after_session": session},
        )
        page = [(r["tenant_id"], r["session_id"]) for r in rows]
        return page, (page[-1] if page and len(rows) == limit else None)

    def prune(
        self,
        tenant_id: str,
        session_id: str,
        *,
        retain: int,
        batch: int,
        window_rows: int | None = None,
        steps_grace: float = TOOL_STEPS_GRACE,
    ) -> Pruned:
        """Delete at most ``batch`` of the session's oldest events beyond its newest
        ``retain``, keeping every event an active turn or the context window
        (``window_rows``, by default the one this store's ``start`` reads) still needs,
        and move ``earliest_seq`` past them; and at most ``batch`` recorded tool steps
        of turns that ended over ``steps_grace`` seconds ago: one statement
        (``prune_events``).

        ``NotFound`` for no session.
        """
        row = self._one(
            "prune_events",
            {
                "tenant_id": tenant_id,
                "session_id": session_id,
                "retain": retain,
                "batch": batch,
                "window_rows": self.window_rows if window_rows is None else window_rows,
                "steps_grace": steps_grace,
            },
        )
        if row is None:
            raise NotFound("session not found")
        return Pruned(
            deleted=int(row["deleted"]),
            earliest_seq=int(row["earliest_seq"]),
            head_seq=int(row["head_seq"]),
            steps_deleted=int(row["steps_deleted"]),
        )
