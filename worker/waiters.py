"""A session another turn waits on has gone (deleted, or past its TTL): its waiters are
told now, never left to a timeout (docs/erasure.md, "Waits on a session that has
gone").

Two things wait on another session: a delegating parent on its children's lanes
(docs/delegation.md), and an experiment on its cases' and judges' sessions
(docs/evaluation.md). ``session_gone`` is the one hook the eraser calls
(worker/erasure.py), once the tombstone is there and before any row of the session
goes: every parent whose open delegation names the session is answered
(store/delegation.py ``settle_parent``, where a child whose session has a tombstone
is ``child_deleted``), and the experiment the session belongs to is sent a pass
(recovery/experiments.py, which settles the case ``deleted``).

Both are safe to run twice, and neither is the only way there: a crash between the
tombstone and this hook is the recovery scan's (``scan_delegations`` counts a child
whose session has a tombstone as ended) and beat's experiment pass's (a case whose
session has a tombstone is settled ``deleted`` whatever its turn's rows say).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from turnkeep.runtime.evaluation import case_ids
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.store.delegation import JoinReads, JoinStore, settle_parent

Send = Callable[[str, str], None]


class WaitersReads(JoinReads, Protocol):
    """The join's reads, and who waits on a session (the store's ``reads``)."""

    def waiting_on_session(self, tenant_id: str, session_id: str) -> list[tuple[str, str]]: ...


class WaitersStore(JoinStore, Protocol):
    """What telling the waiters needs of the store (``turnkeep.store.facade.Store``)."""

    @property
    def reads(self) -> WaitersReads: ...


def session_gone(
    store: WaitersStore, enqueue: Send, advance: Send, tenant_id: str, session_id: str
) -> int:
    """Tell whatever waits on ``session_id`` (tombstoned) that it has gone; how many
    waiters were told."""
    hit(FaultPoint.BEFORE_WAITERS_TOLD)
    told = 0
    for parent_session, parent_turn in store.reads.waiting_on_session(tenant_id, session_id):
        told += settle_parent(store, enqueue, tenant_id, parent_session, parent_turn)
    case = case_ids.parse(session_id)
    if case is not None:
        advance(tenant_id, case[1])
        told += 1
    hit(FaultPoint.AFTER_WAITERS_TOLD)
    return told
