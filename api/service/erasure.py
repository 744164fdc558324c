"""Deleting a session (docs/erasure.md): the verb every surface calls.

One short transaction fences the session off and leaves its tombstone
(``Store.erasure.tombstone``); from its commit on every read of the session answers 410
``session_deleted`` and nothing admits to it again. Then, after the answer, its
followers are told and its erasure is sent to the workers (``turnkeep.erase_session``,
worker/erasure.py), which deletes what it held in bounded batches. A DELETE of a
session deleted already answers its tombstone as it stands: idempotent, and the way
to know the erasure finished (``erased_at``).
"""

from __future__ import annotations

from typing import Any

from turnkeep.api.auth import Principal
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.access import may_write, seen
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.store.erasure import Reason
from turnkeep.store.records import Tombstoned, TombstoneRecord


def delete(services: ApiResources, principal: Principal, session_id: str) -> Tombstoned:
    """Delete the session (blocking): its tombstone, written now or before. A reader
    may not (403); a session of another tenant, or in another owner's project, is
    answered as a missing one (404), deleted or not."""
    may_write(principal)
    seen(services, principal, session_id)
    hit(FaultPoint.BEFORE_TOMBSTONE)
    done = services.store.erasure.tombstone(
        principal.tenant, session_id, reason=Reason.DELETED, deleted_by=principal.subject
    )
    hit(FaultPoint.AFTER_TOMBSTONE)
    return done


def after_delete(services: ApiResources, done: Tombstoned) -> None:
    """Tell the session's followers (they stop, answered 410) and send its erasure,
    once: a DELETE again (a client waiting for ``erased_at``) sends nothing more. A lost
    send is the erasure sweep's: it finds the tombstone unfinished and sends it again."""
    gone = done.tombstone
    if done.created:
        services.publisher.deleted(gone.tenant_id, gone.session_id)
        services.producer.erase(gone.tenant_id, gone.session_id)


def tombstone_json(gone: TombstoneRecord) -> dict[str, Any]:
    """A tombstone as the wire shows it (turnkeep/erasure.py ``Tombstone``)."""
    return {
        "session_id": gone.session_id,
        "reason": gone.reason,
        "deleted_by": gone.deleted_by,
        "deleted_at": gone.deleted_at.isoformat(),
        "erased_at": None if gone.erased_at is None else gone.erased_at.isoformat(),
        "erased_rows": gone.erased_rows,
    }
