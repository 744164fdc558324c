"""A delegation's join: answer a parent's open ``delegation`` request once every child
has ended (runtime/delegation.py has the rules, worker/delegation.py the admitting).

``settle_parent`` answers it (``resolve_input``, once; a second answer is refused as
not open) with the children's outcomes in task order, then enqueues the parent's
session. The worker calls it after each child's terminal commit and after the parent
parks; the recovery scan calls it for every open delegation whose children have all
ended (``Store.scans.settled_delegations``), so a crash between a child's commit and the
call loses nothing. Reading before answering is safe: the last child to commit
always reads after every commit. A child whose session was deleted or expired (its
tombstone) has ended too, as ``child_deleted`` (``delegation.deleted``), whether its
rows are still there or already erased: the eraser tells its parent at once
(worker/waiters.py), and the scan counts such a child as ended. It lives here, below
both, because recovery imports nothing of the worker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from turnkeep.runtime import delegation
from turnkeep.runtime.inputs import InputKind
from turnkeep.runtime.pending import TurnWait
from turnkeep.runtime.states import TERMINAL_STATES
from turnkeep.store.errors import InputNotOpen, NotFound
from turnkeep.store.records import EventRecord, TombstoneRecord, TurnRecord

__all__ = ["JoinAnswers", "JoinReads", "JoinStore", "open_delegation", "settle_parent"]


class JoinReads(Protocol):
    """The parent and its children, read (the store's ``reads``)."""

    def get_turn(self, tenant_id: str, session_id: str, turn_id: str) -> TurnRecord: ...

    def get_tombstone(self, tenant_id: str, session_id: str) -> TombstoneRecord | None: ...


class JoinAnswers(Protocol):
    """The parent's delegation request, answered (the store's ``turns``)."""

    def resolve_input(
        self,
        tenant_id: str,
        session_id: str,
        turn_id: str,
        request_id: str,
        *,
        response: Mapping[str, Any],
        subject: str,
        expired: bool = False,
        response_hash: str | None = None,
    ) -> EventRecord: ...


class JoinStore(Protocol):
    """What the join needs of the store (``turnkeep.store.facade.Store``)."""

    @property
    def reads(self) -> JoinReads: ...

    @property
    def turns(self) -> JoinAnswers: ...


def open_delegation(turn: TurnRecord) -> TurnWait | None:
    """The delegation request ``turn`` waits on, if it waits on one."""
    pending = turn.pending_input
    if (
        pending is not None
        and pending.kind == InputKind.DELEGATION
        and not pending.resolved
        and turn.state.value in ("waiting",)
    ):
        return pending
    return None


def settle_parent(
    store: JoinStore,
    enqueue: Callable[[str, str], None],
    tenant_id: str,
    session_id: str,
    turn_id: str,
) -> bool:
    """Answer the parent's open delegation once every child has ended; True when this
    call answered it (and enqueued the parent)."""
    try:
        parent = store.reads.get_turn(tenant_id, session_id, turn_id)
    except NotFound:
        return False
    pending = open_delegation(parent)
    if pending is None:
        return False
    found: list[tuple[dict[str, Any], TurnRecord | None]] = []
    for c in pending.detail.get("children") or []:
        try:
            child: TurnRecord | None = store.reads.get_turn(
                tenant_id, c["session_id"], c["turn_id"]
            )
        except NotFound:
            child = None  # not admitted yet, or erased with its session
        if child is not None and child.state not in TERMINAL_STATES:
            return False
        found.append((c, child))
    # read only once every child is there and ended: a tombstone cancels its session's
    # turns, so a child still running is not in one
    lanes = {c["session_id"] for c, _ in found}
    gone = {s for s in lanes if store.reads.get_tombstone(tenant_id, s) is not None}
    parts = []
    for c, child in found:
        if c["session_id"] in gone:
            # nothing of an erased session is copied into its parent's journal
            usage = None if child is None else child.usage
            parts.append(delegation.deleted(c["turn_id"], c["id"], usage))
            continue
        if child is None:
            return False  # not admitted yet: the parent's step admits it on its rerun
        parts.append(
            delegation.outcome(
                c["turn_id"], c["id"], child.state.value, child.result, child.error, child.usage
            )
        )
    try:
        store.turns.resolve_input(
            tenant_id,
            session_id,
            turn_id,
            pending.request_id,
            response={"children": parts},
            subject=delegation.ANSWERED_BY,
        )
    except (InputNotOpen, NotFound):
        return False  # answered by another child's check, or the scan: once is enough
    enqueue(tenant_id, session_id)
    return True
