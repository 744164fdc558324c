"""One recovery scan: enqueue runnable sessions with no live lease and no recent progress.

Duplicate scans (two beat processes, a worker's start-up scan) are harmless: an
extra message finds the lease held, or the lane idle, and does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from store.lease import LeaseManager
from store.transitions import Store

log = logging.getLogger(__name__)

Enqueue = Callable[[str, str], None]


@dataclass(frozen=True)
class ScanReport:
    """What one scan saw and did."""

    candidates: int
    leased: int
    enqueued: int


def scan_once(
    store: Store,
    leases: LeaseManager,
    enqueue: Enqueue,
    *,
    grace: float,
    batch: int,
    max_batches: int = 20,
) -> ScanReport:
    """Enqueue stalled sessions, ``batch`` at a time, at most ``max_batches`` batches."""
    candidates = leased = enqueued = 0
    cursor = None
    for _ in range(max_batches):
        found, cursor = store.stalled_sessions(grace=grace, limit=batch, after=cursor)
        candidates += len(found)
        for session, live in zip(found, leases.live(found), strict=True):
            if live:
                leased += 1
                continue
            enqueue(*session)
            enqueued += 1
        if cursor is None:
            break
    if enqueued:
        log.info("recovery scan enqueued %d of %d stalled sessions", enqueued, candidates)
    return ScanReport(candidates=candidates, leased=leased, enqueued=enqueued)
