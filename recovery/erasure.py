"""One run of the erasure sweep (docs/erasure.md): it only reads and enqueues.

Beat runs it every ``TURNKEEP_ERASURE_INTERVAL``. Two work lists, across tenants, each
one LIMITed statement on a partial index: sessions past their TTL (``expires_at``)
that no tombstone marks yet, and tombstoned sessions whose erasure has not moved for
``TURNKEEP_ERASURE_GRACE`` seconds (its eraser died between two batches, or its task
was lost with the broker, or an API process died between the tombstone and the
enqueue). Each gets a ``turnkeep.erase_session`` task (worker/erasure.py), which
writes an expired session's tombstone itself, under the session's lock, and goes on
with an erasure from where it stopped.

Duplicate runs (two beats) are harmless: a second task for one session finds the
tombstone there and its rows going; each row is deleted once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from turnkeep.store.erasure import SWEEP_PAGE

log = logging.getLogger(__name__)

Enqueue = Callable[[str, str], object]


class Lists(Protocol):
    """The sweep's two work lists (the store's ``erasure`` part,
    ``turnkeep.store.erasure.Erasure``)."""

    def expired_sessions(self, *, limit: int = SWEEP_PAGE) -> list[tuple[str, str]]: ...

    def stalled_erasures(
        self, *, grace: float, limit: int = SWEEP_PAGE
    ) -> list[tuple[str, str]]: ...


@dataclass(frozen=True)
class ErasureSweepReport:
    """What one run enqueued."""

    #: sessions past their TTL, sent to be tombstoned and erased
    expired: int
    #: erasures nobody finished, sent to go on
    stalled: int


def sweep_once(
    store: Lists, enqueue: Enqueue, *, grace: float, limit: int = SWEEP_PAGE
) -> ErasureSweepReport:
    """Enqueue the erasure of every session past its TTL and of every erasure stalled
    for ``grace`` seconds (at most ``limit`` of each; the next run sends the rest)."""
    expired = store.expired_sessions(limit=limit)
    stalled = store.stalled_erasures(grace=grace, limit=limit)
    for tenant_id, session_id in (*expired, *stalled):
        enqueue(tenant_id, session_id)
    if expired or stalled:
        log.info(
            "erasure sweep sent %d expired sessions and %d stalled erasures",
            len(expired),
            len(stalled),
        )
    return ErasureSweepReport(expired=len(expired), stalled=len(stalled))
