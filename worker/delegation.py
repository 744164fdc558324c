"""Delegation in the worker: admitting a call's children, and answering the parent.

The rules and the ids are runtime/delegation.py's. Here:

- ``admit_children``: each task's child turn through the one admission every turn
  takes (store/admission.py: the session's TTL, the same input building and hash
  recipe as the API's, then ``Store.turns.admit``), idempotent by its derived id, then each
  lane enqueued (ids only).
  A crash between two admissions leaves some children admitted; the parent's step is
  run again and the same ids replay: never a second child.
- ``after_child_ended``: a child turn ended; answer its parent's ``delegation``
  request should it be the last (store/delegation.py ``settle_parent``, the join the
  recovery scan also runs, which is why it lives below both).
- ``cancel_children``: a parent that ended (cancelled, failed) cancels the children
  still active; a child also stops by itself when its parent has ended.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from turnkeep.runtime import delegation
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.delegation import Child
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.payloads import InputRequested
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.states import TERMINAL_STATES
from turnkeep.store import admission
from turnkeep.store.delegation import JoinAnswers, JoinStore, settle_parent
from turnkeep.store.errors import SessionDeleted, StoreError
from turnkeep.store.records import EventRecord, TurnRecord

log = logging.getLogger(__name__)


class DelegationTurns(JoinAnswers, admission.AdmitsTurn, Protocol):
    """The children admitted and cancelled, the parent answered (the store's ``turns``)."""

    def request_cancel(
        self, tenant_id: str, session_id: str, turn_id: str, *, subject: str
    ) -> tuple[EventRecord, ...]: ...


class DelegationStore(JoinStore, admission.Admits, Protocol):
    """What delegation needs of the store (``turnkeep.store.facade.Store``)."""

    @property
    def turns(self) -> DelegationTurns: ...


def child_input(
    parent: TurnRecord, step: int, child: Child, depth: int, tools: Sequence[str]
) -> TurnInput:
    """What a child turn is admitted with: the task as its user message, and where it
    came from (its parent, its depth, the tools it may use)."""
    return TurnInput(
        messages=[{"role": "user", "content": child.task.prompt}],
        delegation={
            "parent": {
                "session_id": parent.session_id,
                "turn_id": parent.turn_id,
                "step": step,
                "task_id": child.task.id,
            },
            "depth": depth,
            "tools": list(tools),
        },
    )


def admit_children(
    store: DelegationStore,
    settings: Settings,
    enqueue: Any,
    parent: TurnRecord,
    step: int,
    children: Sequence[Child],
    *,
    agent_name: str,
    agent_hash: str,
    depth: int,
    tools: Sequence[str],
    budget: Mapping[str, Any],
    output_schema: Mapping[str, Any] | None,
    agent_version: str = "",
    on_deploy: str = "upgrade",
) -> None:
    gone: set[str] = set()
    for child in children:
        hit(FaultPoint.BEFORE_CHILD_ADMIT)
        # the one admission every turn takes (store/admission.py): the session's TTL,
        # the input's one recipe and hash
        try:
            admission.admit(
                store,
                settings,
                admission.Ask(
                    source=admission.Source.CHILD,
                    tenant_id=parent.tenant_id,
                    session_id=child.session_id,
                    turn_id=child.turn_id,
                    by=parent.submitted_by,
                    agent_name=agent_name,
                    agent_hash=agent_hash,
                    turn_input=child_input(parent, step, child, depth, tools),
                    output_schema=output_schema,
                    budget=budget,
                    # a child's lane belongs to its parent's project: as hidden from others
                    project_id=TurnInput.from_json(parent.input).project_id,
                    agent_version=agent_version,
                    on_deploy=on_deploy,
                ),
            )
        except SessionDeleted:
            # its lane was deleted before this (re-run) step admitted it: nothing of it
            # is re-created, and the join counts a tombstoned child as ended with
            # child_deleted (settle_parent): the parent is neither wedged nor failed
            gone.add(child.session_id)
    # each lane once, after every child is committed (a parent's children may share one)
    for lane in dict.fromkeys(c.session_id for c in children if c.session_id not in gone):
        enqueue(parent.tenant_id, lane)


def parent_of(turn: TurnRecord) -> tuple[str, str] | None:
    """(session, turn) of a child turn's parent; None for a turn nobody delegated."""
    return TurnInput.from_json(turn.input).parent


def after_child_ended(store: DelegationStore, enqueue: Any, turn: TurnRecord) -> None:
    """A child turn ended: tell its parent, should it be the last (best effort: the
    recovery scan tells it otherwise)."""
    parent = parent_of(turn)
    if parent is None:
        return
    try:
        settle_parent(store, enqueue, turn.tenant_id, *parent)
    except StoreError as exc:
        log.warning("the parent of a delegated turn was not told: %s", type(exc).__name__)


def cancel_children(store: DelegationStore, tenant_id: str, request: InputRequested) -> int:
    """Ask every still-active child of a delegation request to stop; how many were."""
    asked = 0
    for c in request.detail.get("children") or []:
        try:
            child = store.reads.get_turn(tenant_id, c["session_id"], c["turn_id"])
            if child.state in TERMINAL_STATES:
                continue
            store.turns.request_cancel(
                tenant_id, c["session_id"], c["turn_id"], subject=delegation.ANSWERED_BY
            )
            asked += 1
        except StoreError:
            continue  # ended meanwhile, or not admitted: nothing to stop
    return asked
