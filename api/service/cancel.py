"""Cancellation: a request, not a state (DESIGN.md). A turn no worker is stepping
(queued, waiting, parked) is settled at once by the statement itself; a running one
stops at its worker's next safe point."""

from __future__ import annotations

from dataclasses import dataclass

from turnkeep.api.auth import Principal
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.access import may_write, visible
from turnkeep.runtime.inputs import InputKind
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.payloads import InputRequested
from turnkeep.runtime.states import EventType
from turnkeep.store.errors import StoreError
from turnkeep.store.records import EventRecord, TurnRecord


@dataclass(frozen=True)
class Cancelled:
    turn: TurnRecord
    #: what the statement committed (nothing when the request was already recorded)
    events: tuple[EventRecord, ...]


def cancel(services: ApiResources, principal: Principal, session_id: str, tid: str) -> Cancelled:
    """Cancel a turn: at once when no worker is stepping it (queued, waiting, parked),
    else at its worker's next safe point. ``TurnNotActive`` once it ended."""
    may_write(principal)
    visible(services, principal, session_id, missing="turn not found")
    hit(FaultPoint.BEFORE_CANCEL)
    events = services.store.turns.request_cancel(
        principal.tenant, session_id, tid, subject=principal.subject
    )
    hit(FaultPoint.AFTER_CANCEL)
    return Cancelled(services.store.reads.get_turn(principal.tenant, session_id, tid), events)


def after_cancel(services: ApiResources, done: Cancelled) -> None:
    services.publisher.committed(*done.events)
    if done.turn.state.terminal and done.events:
        # settled here, not by a worker: the lane's next turn may run now
        services.producer.enqueue(done.turn.tenant_id, done.turn.session_id)
        cancel_children(services, done.turn)


def cancel_children(services: ApiResources, turn: TurnRecord) -> None:
    """A parent cancelled while it waited on its delegated children: they are cancelled
    too (best effort: a child also stops by itself once it sees its parent ended)."""
    store, tenant = services.store, turn.tenant_id
    for e in store.reads.turn_events(tenant, turn.session_id, turn.turn_id):
        if e.type != EventType.INPUT_REQUESTED:
            continue
        request = InputRequested.from_json(e.data)
        if request.kind != InputKind.DELEGATION:
            continue
        for child in (request.detail or {}).get("children") or []:
            try:
                events = store.turns.request_cancel(
                    tenant, child["session_id"], child["turn_id"], subject=turn.submitted_by
                )
            except StoreError:
                continue  # ended already, or never admitted
            services.publisher.committed(*events)
            services.producer.enqueue(tenant, child["session_id"])
