"""One run of the journal prune: each session keeps at most ``retain`` newest events.

Beat runs it every ``TURNKEEP_RETENTION_INTERVAL`` (docs/retention.md). It walks the
sessions that keep more than ``retain`` events a keyset page at a time and runs one
bounded statement per session (``prune_events``: at most ``batch`` events deleted, and
``sessions.earliest_seq`` moved past them in the same statement), so no run holds a
lock for long and a session far over its retention is brought down over a few runs.
The statement itself keeps what is still needed (an active turn's events, the
context window); this module only decides which sessions to visit.

The same statement deletes the recorded tool steps (``ctx.step``, table ``tool_steps``)
of the session's turns that ended over ``TURNKEEP_TOOL_STEPS_GRACE`` seconds ago, so a
long session's storage is bounded by its retention, tool memos included.

Duplicate runs (two beats) are harmless: ``earliest_seq`` only goes up, and a range
already deleted is not deleted twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from turnkeep.runtime.obs import logs
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.store.errors import NotFound
from turnkeep.store.facade import Store
from turnkeep.store.retention import TOOL_STEPS_GRACE, SessionCursor

log = logging.getLogger(__name__)

#: sessions per keyset page of the walk
PAGE = 500
#: pages one run walks at most; the next run starts over from the first page
MAX_PAGES = 100


@dataclass(frozen=True)
class RetentionReport:
    """What one run saw and did."""

    #: sessions over their retention that were visited
    sessions: int
    #: of those, the ones that had events deleted
    pruned: int
    #: events deleted in all
    deleted: int
    #: the walk stopped at ``max_pages`` with sessions left over
    truncated: bool = False
    #: recorded tool steps of long-ended turns deleted with the events
    steps_deleted: int = 0


def prune_once(
    store: Store,
    *,
    retain: int,
    batch: int,
    window_rows: int,
    steps_grace: float = TOOL_STEPS_GRACE,
    page: int = PAGE,
    max_pages: int = MAX_PAGES,
) -> RetentionReport:
    """Prune every session over ``retain`` events once, at most ``batch`` events each
    (and as many recorded tool steps of turns ended over ``steps_grace`` seconds ago)."""
    sessions = pruned = deleted = steps = 0
    cursor: SessionCursor | None = None
    for _ in range(max_pages):
        found, cursor = store.retention.retention_candidates(
            retain=retain, limit=page, after=cursor
        )
        for tenant_id, session_id in found:
            sessions += 1
            try:
                with logs.bound(tenant=tenant_id, session=session_id):
                    hit(FaultPoint.BEFORE_PRUNE)
                    done = store.retention.prune(
                        tenant_id,
                        session_id,
                        retain=retain,
                        batch=batch,
                        window_rows=window_rows,
                        steps_grace=steps_grace,
                    )
                    hit(FaultPoint.AFTER_PRUNE)
            except NotFound:
                continue
            steps += done.steps_deleted
            if done.deleted:
                pruned += 1
                deleted += done.deleted
        if cursor is None:
            break
    if deleted:
        log.info("journal prune deleted %d events of %d sessions", deleted, pruned)
    if cursor is not None:
        log.warning("journal prune stopped after %d pages (the next run starts over)", max_pages)
    return RetentionReport(
        sessions=sessions,
        pruned=pruned,
        deleted=deleted,
        truncated=cursor is not None,
        steps_deleted=steps,
    )
