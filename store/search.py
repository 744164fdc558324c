"""The searches across a tenant's turns and sessions (the statements of sql/search.sql;
docs/search.md): every filter optional, keyset pages newest first.

A search with metadata walks one pair's rows (``turn_metadata`` or
``session_metadata``) newest first, a batch per statement, reading only that batch's
turns or sessions, until a page is full or the pair has no more rows: the first pair
named leads (the others are held by containment), so the most particular pair first
reads the fewest rows. The batch grows fourfold per statement (up to
``MAX_BATCH``), so a page of rare matches takes a few statements, never one per row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from turnkeep.runtime.states import TurnState
from turnkeep.store.db import Row
from turnkeep.store.records import SessionListing, TurnRecord
from turnkeep.store.rows import session_record, turn_record
from turnkeep.store.statements import Statements

#: a session's state while no turn of it is active (api/service/wire.py ``IDLE``)
IDLE = "idle"
#: the states of a turn that can carry an error: a failed one, and a cancelled copy a
#: fork cut (tests/integration/test_search.py pins it); a search by error code alone
#: walks their index (ix_turns_state) instead of the tenant's every turn
ERRORED = (TurnState.CANCELLED.value, TurnState.FAILED.value)
#: the first and the largest batch of a metadata walk
FIRST_BATCH = 200
MAX_BATCH = 10_000


@dataclass(frozen=True)
class Filters:
    """What a search asks for; an empty filter is no filter. ``metadata``'s pairs are
    ANDed, as ``states`` are ORed."""

    states: tuple[str, ...] = ()
    agent: str | None = None
    #: turns only
    agent_version: str | None = None
    #: turns only: the code of the turn's error
    error: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    project: str | None = None
    created_since: datetime | None = None
    created_until: datetime | None = None
    updated_since: datetime | None = None
    updated_until: datetime | None = None

    def params(self) -> dict[str, Any]:
        """The statements' filter parameters (None: not asked for)."""
        states = self.states or (ERRORED if self.error is not None else ())
        pairs = list(self.metadata.items())
        return {
            "state": states[0] if len(states) == 1 else None,
            "states": list(states) if len(states) > 1 else None,
            "agent": self.agent,
            "agent_version": self.agent_version,
            "error": self.error,
            "project": self.project,
            "created_since": self.created_since,
            "created_until": self.created_until,
            "updated_since": self.updated_since,
            "updated_until": self.updated_until,
            "key": pairs[0][0] if pairs else None,
            "value": pairs[0][1] if pairs else None,
            # the lead pair is held by its own rows: containment for the others only
            "metadata": json.dumps(dict(pairs)) if len(pairs) > 1 else None,
            "idle": IDLE,
        }


def _listing(row: Row) -> SessionListing:
    state = row["active_state"]
    return SessionListing(
        session=session_record(row),
        active_turn=row["active_turn"],
        active_state=None if state is None else TurnState(state),
    )


class Search(Statements):
    """``search_turns`` and ``search_sessions``: a page of what matches, newest first."""

    def search_turns(
        self,
        tenant_id: str,
        *,
        subject: str,
        filters: Filters,
        limit: int,
        before: tuple[datetime, int] | None = None,
    ) -> list[TurnRecord]:
        """At most ``limit`` of the tenant's turns ``filters`` match that ``subject``
        may see (in no project, or in its own), newest first (by creation, then
        ordinal); ``before``: the (created_at, ordinal) of the previous page's last."""
        params = {
            "tenant_id": tenant_id,
            "subject": subject,
            "limit": limit,
            "before_at": None if before is None else before[0],
            "before_ordinal": 0 if before is None else before[1],
            **filters.params(),
        }
        if params["key"] is None:
            return [turn_record(r) for r in self._rows("search_turns", params)]
        rows = self._walk("search_turns_by_metadata", params, "turn_id", "edge_ordinal")
        return [turn_record(r) for r in rows]

    def search_sessions(
        self,
        tenant_id: str,
        *,
        subject: str,
        filters: Filters,
        limit: int,
        before: tuple[datetime, str] | None = None,
    ) -> list[SessionListing]:
        """At most ``limit`` of the tenant's sessions ``filters`` match that
        ``subject`` may see, newest first, each with its lane head; ``before``: the
        (created_at, session_id) of the previous page's last."""
        params = {
            "tenant_id": tenant_id,
            "subject": subject,
            "limit": limit,
            "before_at": None if before is None else before[0],
            "before_id": "" if before is None else before[1],
            **filters.params(),
        }
        if params["key"] is None:
            return [_listing(r) for r in self._rows("search_sessions", params)]
        rows = self._walk("search_sessions_by_metadata", params, "session_id", "edge_id")
        return [_listing(r) for r in rows]

    def _walk(self, name: str, params: dict[str, Any], key: str, edge: str) -> list[Row]:
        """The matches of a metadata statement, batch after batch from the cursor,
        until ``limit`` are found or the pair's rows end. ``key``: a column that is
        NULL on the batch's row without a match; ``edge``: the tie-breaker of where a
        batch ended (``edge_at`` the time)."""
        limit, cursor = params["limit"], "before_ordinal" if edge == "edge_ordinal" else "before_id"
        found: list[Row] = []
        step = {**params, "batch": max(FIRST_BATCH, 4 * limit)}
        while True:
            step["limit"] = limit - len(found)
            rows = self._rows(name, step)
            found += [r for r in rows if r[key] is not None]
            if len(found) >= limit or rows[0]["scanned"] < step["batch"]:
                return found
            step["before_at"], step[cursor] = rows[0]["edge_at"], rows[0][edge]
            step["batch"] = min(step["batch"] * 4, MAX_BATCH)
