"""Turns: admission (idempotent by the Idempotency-Key), reads with long poll, cancel."""

from __future__ import annotations

import logging
import re
import uuid
from typing import Annotated, Any

import jsonschema
import redis
from fastapi import APIRouter, Body, Depends, Header, Path, Query
from fastapi.responses import JSONResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from api.auth import Principal, authenticate
from api.live import has_subscribers
from api.problems import Problem
from api.schemas import ID_REGEX, TurnRequest
from api.services import Services, get_services
from api.views import turn_json, turn_location
from api.waiting import wait_for_turn
from runtime.errors import UnknownAgent
from runtime.hashing import input_hash
from runtime.states import EventType
from runtime.validation import validate
from store.errors import InputNotOpen, NotFound, StoreError
from store.records import EventRecord, TurnRecord

log = logging.getLogger(__name__)

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]
TurnId = Annotated[str, Path(pattern=ID_REGEX)]
RequestId = Annotated[str, Path(pattern=ID_REGEX)]
Auth = Annotated[Principal, Depends(authenticate)]
Deps = Annotated[Services, Depends(get_services)]

_KEY = re.compile(ID_REGEX)


def _turn_id(header: str | None) -> str:
    if header is None:
        return uuid.uuid4().hex
    if not _KEY.fullmatch(header):
        raise Problem(
            400, "invalid_idempotency_key", "Idempotency-Key must match [A-Za-z0-9._-]{1,128}"
        )
    return header


def _publish_accepted(services: Services, turn: TurnRecord) -> None:
    if not has_subscribers(services.redis, turn.tenant_id, turn.session_id):
        return
    events, _ = services.store.list_events(
        turn.tenant_id, turn.session_id, after=turn.accepted_seq - 1, limit=1
    )
    if events and events[0].seq == turn.accepted_seq:
        services.publisher.committed(events[0])


def _after_admission(services: Services, turn: TurnRecord, created: bool) -> None:
    """Runs after the answer went out: publish the committed turn.accepted (read back
    from the journal, and only when someone listens), then enqueue."""
    if created:
        try:
            _publish_accepted(services, turn)
        except (redis.RedisError, StoreError) as exc:
            # readers fill the gap from the journal; the enqueue below matters more
            log.warning("publish of turn.accepted skipped: %s", type(exc).__name__)
    if not turn.state.terminal:
        # also on replay: a duplicate run_session is harmless, a missing one is slow
        services.enqueuer.enqueue(turn.tenant_id, turn.session_id)


@router.post("/v1/sessions/{sid}/turns", status_code=202)
def admit_turn(
    sid: SessionId,
    body: TurnRequest,
    principal: Auth,
    services: Deps,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> JSONResponse:
    turn_id = _turn_id(idempotency_key)
    outcomes = services.metrics.admissions
    try:
        agent = services.registry.get(body.agent)
    except UnknownAgent:
        outcomes.labels("unknown_agent").inc()
        raise
    messages = body.messages()
    budget = body.budget_json()
    schema = body.output_schema if body.output_schema is not None else agent.output_schema
    agent_hash = agent.definition_hash
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
        )
    except StoreError as exc:
        outcomes.labels(exc.code).inc()
        raise
    outcomes.labels("created" if admission.created else "replayed").inc()
    turn = admission.turn
    return JSONResponse(
        turn_json(turn),
        status_code=202 if admission.created else 200,
        headers={"Location": turn_location(sid, turn.turn_id)},
        background=BackgroundTask(_after_admission, services, turn, admission.created),
    )


@router.get("/v1/sessions/{sid}/turns/{tid}")
async def get_turn(
    sid: SessionId,
    tid: TurnId,
    principal: Auth,
    services: Deps,
    wait: Annotated[float | None, Query()] = None,
) -> JSONResponse:
    if wait is None:
        turn = await run_in_threadpool(services.store.get_turn, principal.tenant, sid, tid)
        return JSONResponse(turn_json(turn))
    limit = services.settings.max_wait
    if not 0 < wait <= limit:
        raise Problem(
            422,
            "validation_error",
            "invalid field(s): query.wait",
            extra={"errors": [{"loc": ["query", "wait"], "msg": f"must be > 0 and <= {limit:g}"}]},
        )
    turn = await wait_for_turn(services, principal.tenant, sid, tid, wait)
    return JSONResponse(turn_json(turn))


def _publish(services: Services, event: EventRecord) -> None:
    services.publisher.committed(event)


@router.post("/v1/sessions/{sid}/turns/{tid}/cancel", status_code=202)
def cancel_turn(sid: SessionId, tid: TurnId, principal: Auth, services: Deps) -> JSONResponse:
    event = services.store.request_cancel(principal.tenant, sid, tid, subject=principal.subject)
    turn = services.store.get_turn(principal.tenant, sid, tid)
    return JSONResponse(
        turn_json(turn),
        status_code=202,
        background=None if event is None else BackgroundTask(_publish, services, event),
    )


def _open_request(services: Services, tenant: str, sid: str, tid: str, rid: str) -> dict[str, Any]:
    turn = services.store.get_turn(tenant, sid, tid)
    pending = turn.pending_input
    if pending and pending.get("request_id") == rid:
        if pending.get("resolved"):
            raise InputNotOpen("the input request was already answered")
        return pending
    asked = any(
        e.type == EventType.INPUT_REQUESTED and e.data.get("request_id") == rid
        for e in services.store.turn_events(tenant, sid, tid)
    )
    if asked:
        raise InputNotOpen("the input request was already answered or has expired")
    raise NotFound("input request not found")


@router.post("/v1/sessions/{sid}/turns/{tid}/inputs/{rid}")
def answer_input(
    sid: SessionId,
    tid: TurnId,
    rid: RequestId,
    body: Annotated[dict[str, Any], Body()],
    principal: Auth,
    services: Deps,
) -> JSONResponse:
    """Answer a waiting turn's approval or input request, once; the turn goes on."""
    pending = _open_request(services, principal.tenant, sid, tid, rid)
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
    event = services.store.resolve_input(
        principal.tenant, sid, tid, rid, response=body, subject=principal.subject
    )
    turn = services.store.get_turn(principal.tenant, sid, tid)

    def after() -> None:
        _publish(services, event)
        services.enqueuer.enqueue(principal.tenant, sid)

    return JSONResponse(turn_json(turn), status_code=200, background=BackgroundTask(after))
