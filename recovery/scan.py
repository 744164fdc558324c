"""One recovery scan: enqueue runnable sessions with no live lease and no recent progress.

Duplicate scans (two beat processes, a worker's start-up scan) are harmless: an
extra message finds the lease held, or the lane idle, and does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from turnkeep.runtime.inputs import InputKind
from turnkeep.runtime.timers import WOKEN
from turnkeep.store.delegation import settle_parent
from turnkeep.store.errors import InputNotOpen, NotFound
from turnkeep.store.facade import Store
from turnkeep.store.held import HeldSessions
from turnkeep.store.lease import LeaseManager

log = logging.getLogger(__name__)

Enqueue = Callable[[str, str], None]


@dataclass(frozen=True)
class ScanReport:
    """What one scan saw and did."""

    candidates: int
    leased: int
    enqueued: int
    #: expired input requests settled
    expired: int = 0
    #: delegations answered whose children had all ended
    delegations: int = 0
    #: stalled sessions left alone: held at a max_running limit (store/held.py)
    held: int = 0
    #: held sessions sent again: the oldest still waiting of each limit's scope, and
    #: every one of a tenant with no limit in force
    woken: int = 0


def scan_once(
    store: Store,
    leases: LeaseManager,
    enqueue: Enqueue,
    *,
    grace: float,
    batch: int,
    max_batches: int = 20,
    held: HeldSessions | None = None,
    tenant_default: int | None = None,
) -> ScanReport:
    """Enqueue stalled sessions, ``batch`` at a time, at most ``max_batches`` batches.
    Sessions ``held`` at a max_running limit are not: the oldest still waiting of each
    scope is sent instead, once a pass (a wake lost to a crash or a race costs one
    pass; its start wakes the next while slots are left), and every one held at a
    tenant's limit that is no longer in force (declared none, ``tenant_default``
    None)."""
    candidates = leased = enqueued = skipped = woken = 0
    expired = settle_expired_inputs(store, enqueue, limit=batch)
    delegations = sum(
        settle_parent(store, enqueue, *parent)
        for parent in store.scans.settled_delegations(limit=batch)
    )
    cursor = None
    for _ in range(max_batches):
        found, cursor = store.scans.stalled_sessions(grace=grace, limit=batch, after=cursor)
        candidates += len(found)
        waiting = [False] * len(found) if held is None else held.among(found)
        for session, live, limited in zip(found, leases.live(found), waiting, strict=True):
            if live:
                leased += 1
                continue
            if limited:
                skipped += 1
                continue
            enqueue(*session)
            enqueued += 1
        if cursor is None:
            break
    if held is not None:
        woken = wake_held(store, held, enqueue, tenant_default)
    if enqueued:
        log.info("recovery scan enqueued %d of %d stalled sessions", enqueued, candidates)
    return ScanReport(
        candidates=candidates,
        leased=leased,
        enqueued=enqueued,
        expired=expired,
        delegations=delegations,
        held=skipped,
        woken=woken,
    )


def wake_held(
    store: Store, held: HeldSessions, enqueue: Enqueue, tenant_default: int | None
) -> int:
    """Send the oldest session still waiting of each held scope, and every session of a
    tenant's scope whose limit is gone; how many were sent."""
    scopes = held.scopes()
    if not scopes:
        return 0  # the usual pass: nothing held, nothing read
    woken, declared = 0, store.max_running.declared_limits()
    for scope in scopes:
        if scope.agent is None and declared.get(scope.tenant_id, tenant_default) is None:
            sessions = held.release(scope)
        else:
            session = held.wake(scope, store.max_running.waiting_heads)
            sessions = [] if session is None else [session]
        for session in sessions:
            enqueue(scope.tenant_id, session)
            woken += 1
    return woken


def settle_expired_inputs(store: Store, enqueue: Enqueue, *, limit: int) -> int:
    """Answer expired input requests with ``{"expired": true}`` and enqueue their
    sessions: the worker gives the tool call an error result and the turn goes on.
    A person answering at the same moment wins or loses cleanly (one resolution)."""
    settled = 0
    for tenant_id, session_id, turn_id, request_id in store.scans.expired_inputs(limit=limit):
        # a timer's time has come: it is woken, not left unanswered (runtime/timers.py)
        timer = request_id.startswith(f"{InputKind.TIMER.value}-")
        try:
            store.turns.resolve_input(
                tenant_id,
                session_id,
                turn_id,
                request_id,
                response=dict(WOKEN) if timer else {"expired": True},
                subject="recovery",
                expired=True,
            )
        except (NotFound, InputNotOpen):
            continue
        enqueue(tenant_id, session_id)
        settled += 1
    return settled
