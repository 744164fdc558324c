"""One run of the attachment sweep: rows an API process left ``pending`` or ``deleting``.

Beat runs it every ``TURNKEEP_ATTACHMENT_SWEEP_INTERVAL`` (docs/fork-and-attachments.md).
An upload or a deletion is several statements in autocommit; a process that died
between them leaves a row no turn may reference and no reader sees as content. Once
such a row has not moved for ``TURNKEEP_ATTACHMENT_SWEEP_GRACE`` seconds nobody is
coming back for it, and ``sweep_attachments`` deletes it (across tenants, oldest first,
``SKIP LOCKED``: a row a request is finishing right now is left to that request).

Duplicate runs (two beats) are harmless: a row is deleted once, the other run skips it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from turnkeep.store.attachments import AttachmentState
from turnkeep.store.facade import Store

log = logging.getLogger(__name__)

#: statements one run sends at most; the next run goes on where this one stopped
MAX_BATCHES = 100


@dataclass(frozen=True)
class AttachmentSweepReport:
    """What one run deleted."""

    #: rows left pending that were deleted
    pending: int
    #: rows left deleting that were deleted
    deleting: int
    #: the run stopped at ``max_batches`` with rows maybe left over
    truncated: bool = False


def sweep_once(
    store: Store, *, grace: float, batch: int, max_batches: int = MAX_BATCHES
) -> AttachmentSweepReport:
    """Delete every attachment left pending or deleting for over ``grace`` seconds,
    ``batch`` rows a statement, at most ``max_batches`` statements."""
    pending = deleting = 0
    full = False
    for _ in range(max_batches):
        swept = store.attachments.sweep_attachments(grace=grace, limit=batch)
        pending += sum(1 for *_, state in swept if state is AttachmentState.PENDING)
        deleting += sum(1 for *_, state in swept if state is AttachmentState.DELETING)
        # a short batch: nothing older than the grace is left (but what SKIP LOCKED
        # passed over, which its request is finishing)
        full = len(swept) == batch
        if not full:
            break
    if pending or deleting:
        log.info("attachment sweep deleted %d pending and %d deleting rows", pending, deleting)
    if full:
        log.warning(
            "attachment sweep stopped after %d statements (the next run goes on)", max_batches
        )
    return AttachmentSweepReport(pending=pending, deleting=deleting, truncated=full)
