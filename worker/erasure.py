"""A session's erasure, as the task ``turnkeep.erase_session`` runs it (docs/erasure.md).

The API's DELETE writes the tombstone and sends this task; beat's erasure sweep
(recovery/erasure.py) sends it for a session past its TTL (whose tombstone is written
here, first) and for an erasure nobody finished. Each run goes on from where the
last stopped: every batch is one statement in its own transaction (store/erasure.py),
at most ``TURNKEEP_ERASURE_BATCH`` rows of one table, children before parents, and the
session row goes last, in the statement that marks the tombstone erased. A run that
dies between two batches leaves a tombstoned session with fewer rows, which no read
shows (every read answers 410 from the tombstone on); the next run deletes the rest.
Two runs at once are harmless: a row is deleted once, the other passes over it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from turnkeep.runtime.obs import logs
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.store import erasure_registry
from turnkeep.store.erasure import Reason
from turnkeep.store.erasure_registry import ATTACHMENT_BATCH as ATTACHMENT_BATCH
from turnkeep.store.erasure_registry import Part
from turnkeep.store.errors import NotFound
from turnkeep.store.records import Tombstoned, TombstoneRecord

log = logging.getLogger(__name__)

#: rounds of batches and the last statement one run makes before leaving the rest to
#: the sweep (a row written late, or a snapshot older than the tombstone still open)
ROUNDS = 20
#: seconds between two rounds
ROUND_PAUSE = 0.25


class Announcer(Protocol):
    """Where a session's followers hear it was deleted (``turnkeep.store.channel.Publisher``)."""

    def deleted(self, tenant_id: str, session_id: str) -> None: ...


class Keys(Protocol):
    """The session's Redis keys (``turnkeep.store.session_keys.SessionKeys``)."""

    def erase(self, tenant_id: str, session_id: str) -> int: ...


class Tombstones(Protocol):
    """The session's tombstone, read (the store's ``reads``)."""

    def get_tombstone(self, tenant_id: str, session_id: str) -> TombstoneRecord | None: ...


class ErasesRows(Protocol):
    """The tombstone and the batches (the store's ``erasure``)."""

    def tombstone(
        self,
        tenant_id: str,
        session_id: str,
        *,
        reason: Reason,
        deleted_by: str | None,
        expired_only: bool = False,
    ) -> Tombstoned: ...

    def erase_rows(self, tenant_id: str, session_id: str, part: Part, *, batch: int) -> int: ...

    def finish_erasure(self, tenant_id: str, session_id: str) -> TombstoneRecord | None: ...


class Erasing(Protocol):
    """What the eraser needs of the store (``turnkeep.store.facade.Store``; a script in the
    unit tests, a timed one in the bench)."""

    @property
    def reads(self) -> Tombstones: ...

    @property
    def erasure(self) -> ErasesRows: ...


@dataclass(frozen=True)
class ErasureReport:
    """What one run did."""

    #: the erasure has finished (its tombstone's ``erased_at`` is set)
    erased: bool
    #: rows this run deleted, and the statements it sent to delete them
    rows: int = 0
    batches: int = 0
    #: this run wrote the tombstone of a session past its TTL
    expired: bool = False


def erase_session(
    store: Erasing,
    announcer: Announcer,
    tenant_id: str,
    session_id: str,
    *,
    batch: int,
    gone: Callable[[str, str], object] | None = None,
    keys: Keys | None = None,
) -> ErasureReport:
    """Erase what the session holds, or go on erasing it. A session with no tombstone
    is erased only if it is past its TTL (its tombstone written here first); else the
    run does nothing. ``gone`` tells the turns that wait on the session
    (worker/waiters.py ``session_gone``) before any of its rows goes. Its Redis keys go
    first (a credential waiting for its tool) and once more after its rows (a stale
    writer's)."""
    with logs.bound(tenant=tenant_id, session=session_id):
        tombstone = store.reads.get_tombstone(tenant_id, session_id)
        expired = False
        if tombstone is None:
            try:
                hit(FaultPoint.BEFORE_TOMBSTONE)
                done = store.erasure.tombstone(
                    tenant_id, session_id, reason=Reason.EXPIRED, deleted_by=None, expired_only=True
                )
                hit(FaultPoint.AFTER_TOMBSTONE)
            except NotFound:
                return ErasureReport(erased=False)  # a turn came first, or no session
            announcer.deleted(tenant_id, session_id)
            tombstone, expired = done.tombstone, done.created
        if keys is not None:
            keys.erase(tenant_id, session_id)
        if tombstone.erased:
            return ErasureReport(erased=True, expired=expired)
        if gone is not None:
            # before the batches: a delegating parent reads its children's usage
            gone(tenant_id, session_id)
        report = _erase(store, tenant_id, session_id, batch=batch)
        if keys is not None and report.erased:
            keys.erase(tenant_id, session_id)
        return ErasureReport(
            erased=report.erased, rows=report.rows, batches=report.batches, expired=expired
        )


def _erase(store: Erasing, tenant_id: str, session_id: str, *, batch: int) -> ErasureReport:
    rows = batches = 0
    finished: TombstoneRecord | None = None
    for n in range(ROUNDS):
        if n:
            time.sleep(ROUND_PAUSE)
        for part, size in erasure_registry.batches(batch):
            while True:
                deleted = store.erasure.erase_rows(tenant_id, session_id, part, batch=size)
                rows, batches = rows + deleted, batches + 1
                if deleted:  # a batch committed; the next is not sent
                    hit(FaultPoint.BETWEEN_ERASE_BATCHES)
                if deleted < size:
                    break
        finished = store.erasure.finish_erasure(tenant_id, session_id)
        if finished is None or finished.erased:
            break
    erased = finished is not None and finished.erased
    if erased:
        log.info("session erased: %d rows in %d statements", rows, batches)
    else:
        log.warning("session erasure not finished yet; the erasure sweep goes on with it")
    return ErasureReport(erased=erased, rows=rows, batches=batches)
