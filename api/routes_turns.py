"""Turns: admission (idempotent by the Idempotency-Key), reads with long poll, cancel."""

from __future__ import annotations

import logging
import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

import jsonschema
from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.responses import JSONResponse

from api.auth import Principal, principal_of
from api.problems import Problem
from api.schemas import ID_REGEX, TurnRequest
from api.services import Services, services_of
from api.views import turn_json, turn_location
from api.waiting import wait_for_turn
from runtime import inputs, plan
from runtime.errors import UnknownAgent
from runtime.faults import FaultPoint, hit
from runtime.hashing import input_hash, sha256_hex
from runtime.multitask import Multitask
from runtime.states import EventType
from runtime.validation import validate
from store.errors import InputExpired, InputForbidden, InputNotOpen, NotFound, StoreError
from store.records import Admission, EventRecord, TurnRecord

log = logging.getLogger(__name__)

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]
TurnId = Annotated[str, Path(pattern=ID_REGEX)]
RequestId = Annotated[str, Path(pattern=ID_REGEX)]

_KEY = re.compile(ID_REGEX)


def _turn_id(header: str | None) -> str:
    if header is None:
        return uuid.uuid4().hex
    if not _KEY.fullmatch(header):
        raise Problem(
            400, "invalid_idempotency_key", "Idempotency-Key must match [A-Za-z0-9._-]{1,128}"
        )
    return header


def _admit(
    services: Services, principal: Principal, sid: str, turn_id: str, body: TurnRequest
) -> Admission:
    """Hash and admit, on a blocking thread: one statement, one round trip (``reject``
    and ``interrupt``: one short transaction, see ``Store.admit``)."""
    metrics = services.metrics
    try:
        agent = services.registry.get(body.agent)
    except UnknownAgent:
        metrics.admitted("unknown_agent")
        raise
    messages = body.messages()
    budget = body.budget_json()
    schema = body.output_schema if body.output_schema is not None else agent.output_schema
    agent_hash = services.agent_hash(agent)
    interrupt = body.multitask is Multitask.INTERRUPT
    if interrupt:
        hit(FaultPoint.BEFORE_INTERRUPT)
    try:
        admission = services.store.admit(
            tenant_id=principal.tenant,
            session_id=sid,
            turn_id=turn_id,
            agent_name=agent.name,
            agent_hash=agent_hash,
            input_hash=input_hash(
                messages=messages, agent_hash=agent_hash, output_schema=schema, budget=budget
            ),
            input={"messages": messages},
            output_schema=schema,
            budget=budget,
            submitted_by=principal.subject,
            multitask=body.multitask,
        )
    except StoreError as exc:
        metrics.admitted(exc.code)
        raise
    if interrupt:
        hit(FaultPoint.AFTER_INTERRUPT)
    metrics.admitted("created" if admission.created else "replayed")
    return admission


def _after_admission(services: Services, admission: Admission) -> None:
    """Once the answer went out: publish the committed ``turn.accepted`` and the
    cancellations an interrupt wrote (as the store returned them, no read-back), then
    enqueue: the lane moves on to the new turn once the turns before it have ended."""
    turn = admission.turn
    if admission.event is not None:
        # a failed publish is logged by the publisher: readers fill the gap from the journal
        services.publisher.committed(admission.event, *admission.interrupted)
    if not turn.state.terminal:
        # also on replay: a duplicate run_session is harmless, a missing one is slow
        services.producer.enqueue(turn.tenant_id, turn.session_id)


#: the Idempotency-Key header, read in the route (cheaper than a declared parameter)
_IDEMPOTENCY_KEY = {
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "The turn id; a new one is generated when absent",
            "schema": {"type": "string", "pattern": ID_REGEX},
        }
    ]
}


@router.post("/v1/sessions/{sid}/turns", status_code=202, openapi_extra=_IDEMPOTENCY_KEY)
async def admit_turn(request: Request, sid: SessionId, body: TurnRequest) -> JSONResponse:
    turn_id = _turn_id(request.headers.get("idempotency-key"))
    services = services_of(request)
    admission = await services.run(_admit, services, principal_of(request), sid, turn_id, body)
    turn = admission.turn
    return JSONResponse(
        turn_json(turn),
        status_code=202 if admission.created else 200,
        headers={"Location": turn_location(sid, turn.turn_id)},
        background=services.after_answer(_after_admission, services, admission),
    )


@router.get("/v1/sessions/{sid}/turns/{tid}")
async def get_turn(
    request: Request,
    sid: SessionId,
    tid: TurnId,
    wait: Annotated[float | None, Query()] = None,
) -> JSONResponse:
    services, tenant = services_of(request), principal_of(request).tenant
    if wait is None:
        turn = await services.run(services.store.get_turn, tenant, sid, tid)
        return JSONResponse(turn_json(turn))
    limit = services.settings.max_wait
    if not 0 < wait <= limit:
        raise Problem(
            422,
            "validation_error",
            "invalid field(s): query.wait",
            extra={"errors": [{"loc": ["query", "wait"], "msg": f"must be > 0 and <= {limit:g}"}]},
        )
    turn = await wait_for_turn(services, tenant, sid, tid, wait)
    return JSONResponse(turn_json(turn))


def _cancel(
    services: Services, principal: Principal, sid: str, tid: str
) -> tuple[TurnRecord, tuple[EventRecord, ...]]:
    hit(FaultPoint.BEFORE_CANCEL)
    events = services.store.request_cancel(principal.tenant, sid, tid, subject=principal.subject)
    hit(FaultPoint.AFTER_CANCEL)
    return services.store.get_turn(principal.tenant, sid, tid), events


def _after_cancel(services: Services, turn: TurnRecord, events: tuple[EventRecord, ...]) -> None:
    services.publisher.committed(*events)
    if turn.state.terminal:
        # settled here, not by a worker: the lane's next turn may run now
        services.producer.enqueue(turn.tenant_id, turn.session_id)


@router.post("/v1/sessions/{sid}/turns/{tid}/cancel", status_code=202)
async def cancel_turn(request: Request, sid: SessionId, tid: TurnId) -> JSONResponse:
    """Cancel a turn: at once when no worker is stepping it (queued, waiting, parked),
    else at its worker's next safe point. 409 ``turn_not_active`` once it ended."""
    services = services_of(request)
    turn, events = await services.run(_cancel, services, principal_of(request), sid, tid)
    # a cancellation already requested wrote nothing: nothing to publish
    after = services.after_answer(_after_cancel, services, turn, events) if events else None
    return JSONResponse(turn_json(turn), status_code=202, background=after)


def _open_request(
    services: Services, principal: Principal, sid: str, tid: str, rid: str
) -> tuple[TurnRecord, dict[str, Any]]:
    """The turn and its open request ``rid``, or the typed refusal: 404 for a request
    this tenant never saw, 410 once it expired, 409 once it was answered."""
    turn = services.store.get_turn(principal.tenant, sid, tid)
    pending = turn.pending_input
    if pending and pending.get("request_id") == rid:
        if pending.get("resolved"):
            if (pending.get("response") or {}).get("expired"):
                raise InputExpired("the input request expired unanswered")
            raise InputNotOpen("the input request was already answered")
        if inputs.expired(pending):
            raise InputExpired("the input request expired unanswered")
        return turn, pending
    events = services.store.turn_events(principal.tenant, sid, tid)
    if not any(
        e.type == EventType.INPUT_REQUESTED and e.data.get("request_id") == rid for e in events
    ):
        raise NotFound("input request not found")
    if (plan.answer(events, rid) or {}).get("expired"):
        raise InputExpired("the input request expired unanswered")
    raise InputNotOpen("the input request was already answered or is no longer open")


def _answer(
    services: Services, principal: Principal, sid: str, tid: str, rid: str, body: dict[str, Any]
) -> tuple[TurnRecord, EventRecord]:
    turn, pending = _open_request(services, principal, sid, tid, rid)
    bound = pending.get("answered_by") or {"subject": turn.submitted_by}
    if not inputs.may_answer(bound, subject=principal.subject, role=principal.role):
        raise InputForbidden("this principal may not answer the request")
    try:
        validate(body, pending["response_schema"])
    except jsonschema.ValidationError as exc:
        where = (
            "body." + ".".join(str(p) for p in exc.absolute_path) if exc.absolute_path else "body"
        )
        raise Problem(
            422,
            "validation_error",
            f"invalid field(s): {where}",
            extra={"errors": [{"loc": where.split("."), "msg": exc.message}]},
        ) from None
    response, digest = body, sha256_hex(body)
    if inputs.secret(str(pending.get("kind"))):
        # credentials wait in Redis for the tool; Postgres keeps only their hash
        expires = datetime.fromisoformat(str(pending["expires_at"]))
        ttl = (expires - datetime.now(UTC)).total_seconds()
        services.secrets.put(principal.tenant, sid, tid, rid, body, ttl=ttl)
        response = {"secret": True}
    hit(FaultPoint.BEFORE_ANSWER)
    event = services.store.resolve_input(
        principal.tenant,
        sid,
        tid,
        rid,
        response=response,
        response_hash=digest,
        subject=principal.subject,
    )
    hit(FaultPoint.AFTER_ANSWER)
    return services.store.get_turn(principal.tenant, sid, tid), event


def _after_answer(services: Services, event: EventRecord) -> None:
    services.publisher.committed(event)
    services.producer.enqueue(event.tenant_id, event.session_id)


@router.post("/v1/sessions/{sid}/turns/{tid}/inputs/{rid}")
async def answer_input(
    request: Request,
    sid: SessionId,
    tid: TurnId,
    rid: RequestId,
    body: Annotated[dict[str, Any], Body()],
) -> JSONResponse:
    """Answer a parked turn's open request (approval, question, reconciliation, budget
    extension, external auth), once, as its bound response schema says; the turn goes
    on. 404 unknown, 403 not yours to answer, 409 answered, 410 expired, 422 invalid."""
    services = services_of(request)
    turn, event = await services.run(_answer, services, principal_of(request), sid, tid, rid, body)
    return JSONResponse(
        turn_json(turn),
        status_code=200,
        background=services.after_answer(_after_answer, services, event),
    )
