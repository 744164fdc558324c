"""Workflow nodes: one turn per (run, node), with ids a retried node finds again, and
its completion by long poll or by an HMAC-signed webhook from the Postgres outbox.

``POST /v1/workflows/{run_id}/nodes/{node_id}/turns`` admits the node's turn through
the service's admission (api/service/workflows.py, then api/service/admission.py). Its
session and turn ids are derived from the tenant, the run and the node (``node_ids``),
so a workflow engine that retries a node gets the same turn: 202 when admitted, 200
with the stored node on a replay of the same body, 409 ``idempotency_conflict`` for
another input or another ``callback_url``.
A ``callback_url`` (http or https) asks for a webhook once the turn settles, whatever
settles it (runtime/webhooks.py has the wire format, worker/webhooks.py the delivery);
it needs ``TURNKEEP_WEBHOOK_SECRET`` (else 400 ``webhook_not_configured``, nothing
admitted). The webhook row is written in the admission's transaction.

``GET /v1/workflows/{run_id}/nodes/{node_id}`` answers the node as its turn stands:
``running`` (queued, running, or an answered request not yet picked up), ``waiting``
(for a person: ``pending_input`` is the open request, answered at
``POST /v1/sessions/{session_id}/turns/{turn_id}/inputs/{request_id}``) or ``done``
(completed, failed or cancelled: ``result`` or ``error``), with its webhook's delivery
state. ``?wait=S`` long-polls until the node is done or S seconds passed (a waiting
node answers ``waiting`` when the wait is over). The node's session is an ordinary
one: its events stream at ``/v1/sessions/{session_id}/events``.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import Field, field_validator

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.http.bodies import Node
from turnkeep.api.http.turns import ADMISSION_CONFLICT
from turnkeep.api.resources import services_of
from turnkeep.api.service import admission as admitting
from turnkeep.api.service import reads
from turnkeep.api.service import workflows as nodes
from turnkeep.api.service.requests import TurnRequest
from turnkeep.api.service.wire import turn_json
from turnkeep.runtime.multitask import Multitask
from turnkeep.runtime.states import PARKED_STATES
from turnkeep.store.records import TurnRecord, WebhookRecord

router = APIRouter()

#: run and node ids: printable ASCII without spaces (hashed into the turn's ids, so
#: a workflow engine's own run ids fit as they are)
NODE_REGEX = r"^[!-~]{1,256}$"
RunId = Annotated[str, Path(pattern=NODE_REGEX)]
NodeId = Annotated[str, Path(pattern=NODE_REGEX)]


class NodeRequest(TurnRequest):
    """``POST /v1/workflows/{run_id}/nodes/{node_id}/turns``: a turn's body and an
    optional ``callback_url`` for the completion webhook."""

    #: a node's session has one turn: ``enqueue`` only (the document says so too)
    multitask: Multitask = Field(Multitask.ENQUEUE, json_schema_extra={"enum": ["enqueue"]})

    @field_validator("multitask")
    @classmethod
    def _one_turn(cls, value: Multitask) -> Multitask:
        if value is not Multitask.ENQUEUE:
            raise ValueError("a workflow node's session has one turn: multitask does not apply")
        return value


def node_location(run_id: str, node_id: str) -> str:
    return f"/v1/workflows/{quote(run_id, safe='')}/nodes/{quote(node_id, safe='')}"


def node_state(turn: TurnRecord) -> str:
    """``done``, ``waiting`` (for a person's answer) or ``running``."""
    if turn.state.terminal:
        return "done"
    if turn.state in PARKED_STATES and not (turn.pending_input and turn.pending_input.resolved):
        return "waiting"
    return "running"


def _webhook_json(wh: WebhookRecord | None) -> dict[str, Any] | None:
    if wh is None:
        return None
    return {
        "url": wh.url,
        "delivery_id": wh.delivery_id,
        "status": "delivered" if wh.delivered else "pending",
        "attempts": wh.attempts,
        "delivered_at": None if wh.delivered_at is None else wh.delivered_at.isoformat(),
        "next_attempt_at": None if wh.delivered else wh.next_attempt_at.isoformat(),
        "last_status": wh.last_status,
        "last_error": wh.last_error,
    }


def node_json(
    run_id: str, node_id: str, turn: TurnRecord, wh: WebhookRecord | None
) -> dict[str, Any]:
    view = turn_json(turn)
    state = node_state(turn)
    return {
        "run_id": run_id,
        "node_id": node_id,
        "session_id": turn.session_id,
        "turn_id": turn.turn_id,
        "state": state,
        "turn_state": turn.state.value,
        "pending_input": view["pending_input"] if state == "waiting" else None,
        "result": turn.result,
        "error": turn.error,
        "agent": turn.agent_name,
        "created_at": view["created_at"],
        "updated_at": view["updated_at"],
        "webhook": _webhook_json(wh),
    }


# -- routes -------------------------------------------------------------------------------


@router.post(
    "/v1/workflows/{run_id}/nodes/{node_id}/turns",
    status_code=202,
    responses={
        202: doc.body(Node, "Admitted", headers=doc.LOCATION),
        200: doc.body(Node, "A replay: the node's turn, as started", headers=doc.LOCATION),
        **doc.problems(400, 403, 404, 429),
        409: ADMISSION_CONFLICT,
    },
)
async def admit_node_turn(
    request: Request, run_id: RunId, node_id: NodeId, body: NodeRequest
) -> JSONResponse:
    services = services_of(request)
    admission, wh = await services.run(
        nodes.admit_node, services, principal_of(request), run_id, node_id, body
    )
    return JSONResponse(
        node_json(run_id, node_id, admission.turn, wh),
        status_code=202 if admission.created else 200,
        headers={"Location": node_location(run_id, node_id)},
        background=services.after_answer(admitting.after_admission, services, admission),
    )


@router.get(
    "/v1/workflows/{run_id}/nodes/{node_id}",
    responses={200: doc.body(Node, "The node"), **doc.problems(404)},
)
async def get_node(
    request: Request,
    run_id: RunId,
    node_id: NodeId,
    wait: Annotated[float | None, Query()] = None,
) -> JSONResponse:
    services, principal = services_of(request), principal_of(request)
    if wait is not None:
        limit = services.settings.bounds.max_wait
        if not 0 < wait <= limit:
            raise RequestInvalid("query.wait", f"must be > 0 and <= {limit:g}")
        sid, tid = nodes.node_ids(principal.tenant, run_id, node_id)
        turn = await reads.wait(services, principal, sid, tid, wait)
        wh = await services.run(nodes.node_webhook, services, principal.tenant, sid, tid)
    else:
        turn, wh = await services.run(nodes.read_node, services, principal, run_id, node_id)
    return JSONResponse(node_json(run_id, node_id, turn, wh))
