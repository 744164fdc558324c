"""Turns over HTTP: admission (idempotent by the Idempotency-Key), reads with long poll,
cancel, answers. Thin: each route calls the service (api/service/), which also
answers a session of another owner's project as a missing one (api/service/projects.py)."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api import timings
from turnkeep.api.auth import principal_of
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.resources import services_of
from turnkeep.api.service import admission, answers, cancel, paced, reads, reruns, versions
from turnkeep.api.service.ids import turn_id
from turnkeep.api.service.requests import ID_REGEX, TurnRequest
from turnkeep.api.service.wire import turn_json, turn_location
from turnkeep.models import Timeline, Turn
from turnkeep.runtime.states import TurnState

log = logging.getLogger(__name__)

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]
TurnId = Annotated[str, Path(pattern=ID_REGEX)]
RequestId = Annotated[str, Path(pattern=ID_REGEX)]

#: the Idempotency-Key header, read in the route (cheaper than a declared parameter)
_IDEMPOTENCY_KEY = {
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "The turn id; a new one is generated when absent. Reused "
            "with the same request: the stored turn (200); with another: 409",
            "schema": {"type": "string", "pattern": ID_REGEX},
        }
    ]
}

#: the 409 of a turn's admission, documented (here and on workflow nodes)
ADMISSION_CONFLICT = {
    "description": doc.STATUSES[409] + ", `project_mismatch` (the session is in another project)"
}

_WAIT = (
    "Long poll: answer once the turn has ended or waits for someone, or after this many "
    "seconds (> 0, at most TURNKEEP_MAX_WAIT; else 422)"
)


@router.post(
    "/v1/sessions/{sid}/turns",
    status_code=202,
    openapi_extra=_IDEMPOTENCY_KEY,
    responses={
        202: doc.body(Turn, "Admitted", headers=doc.LOCATION),
        200: doc.body(
            Turn, "A replay: the turn this Idempotency-Key admitted", headers=doc.LOCATION
        ),
        **doc.problems(400, 403, 404, 429),
        409: ADMISSION_CONFLICT,
    },
)
async def admit_turn(request: Request, sid: SessionId, body: TurnRequest) -> JSONResponse:
    if timings.ENABLED:
        return await _admit_timed(request, sid, body)
    tid = turn_id(request.headers.get("idempotency-key"))
    services = services_of(request)
    admitted = await services.run(admission.admit, services, principal_of(request), sid, tid, body)
    turn = admitted.turn
    return JSONResponse(
        turn_json(turn),
        status_code=202 if admitted.created else 200,
        headers={"Location": turn_location(sid, turn.turn_id)},
        background=services.after_answer(admission.after_admission, services, admitted),
    )


async def _admit_timed(request: Request, sid: SessionId, body: TurnRequest) -> JSONResponse:
    """``admit_turn`` with its pieces timed (api/timings.py): the same answer, plus a
    ``Server-Timing`` header."""
    parts: dict[str, float] = request.scope["state"]["timings"]
    entered = timings.now()
    parts["parse"] = entered - parts["_end"]
    tid = turn_id(request.headers.get("idempotency-key"))
    services = services_of(request)
    admitted = await services.run(
        admission.admit, services, principal_of(request), sid, tid, body, timings=parts
    )
    served = timings.now()
    parts["thread"] = served - entered - parts["checks"] - parts["hash"] - parts["statement"]
    turn = admitted.turn
    answer = turn_json(turn)
    parts["enqueue"] = timings.last_enqueue[0]
    response = JSONResponse(
        answer,
        status_code=202 if admitted.created else 200,
        headers={"Location": turn_location(sid, turn.turn_id)},
        background=services.after_answer(_timed_after, services, admitted),
    )
    parts["response"] = timings.now() - served
    response.headers["Server-Timing"] = timings.header(parts)
    return response


def _timed_after(services: Any, admitted: Any) -> None:
    started = timings.now()
    admission.after_admission(services, admitted)
    timings.last_enqueue[0] = timings.now() - started


@router.get(
    "/v1/sessions/{sid}/turns/{tid}",
    responses={200: doc.body(Turn, "The turn"), **doc.problems(404)},
)
async def get_turn(
    request: Request,
    sid: SessionId,
    tid: TurnId,
    wait: Annotated[float | None, Query(description=_WAIT)] = None,
) -> JSONResponse:
    services, principal = services_of(request), principal_of(request)
    if wait is None:
        turn = await services.run(reads.read, services, principal, sid, tid)
    else:
        limit = services.settings.bounds.max_wait
        if not 0 < wait <= limit:
            raise RequestInvalid("query.wait", f"must be > 0 and <= {limit:g}")
        turn = await reads.wait(services, principal, sid, tid, wait, until_input=True)
    held = pace = None
    if turn.runnable:  # held: no live worker serves its definition (one Redis read)
        held = await services.run(versions.held, services, turn)
    if turn.state is TurnState.RUNNING:  # waits for its rate limit's slot (one Redis read)
        pace = await services.run(paced.paced, services, turn)
    return JSONResponse(turn_json(turn, held=held, paced=pace))


@router.get(
    "/v1/sessions/{sid}/turns/{tid}/timeline",
    responses={
        200: doc.body(Timeline, "The turn's attempts, steps and waits, without content"),
        **doc.problems(404),
    },
)
async def get_timeline(request: Request, sid: SessionId, tid: TurnId) -> JSONResponse:
    services, principal = services_of(request), principal_of(request)
    return JSONResponse(await services.run(reads.timeline_of, services, principal, sid, tid))


@router.post(
    "/v1/sessions/{sid}/turns/{tid}/cancel",
    status_code=202,
    responses={202: doc.body(Turn, "Cancelled, or to be"), **doc.problems(403, 404, 409)},
)
async def cancel_turn(request: Request, sid: SessionId, tid: TurnId) -> JSONResponse:
    """Cancel a turn: at once when no worker is stepping it (queued, waiting, parked),
    else at its worker's next safe point. 409 ``turn_not_active`` once it ended."""
    services = services_of(request)
    done = await services.run(cancel.cancel, services, principal_of(request), sid, tid)
    # a cancellation already requested wrote nothing: nothing to publish
    after = services.after_answer(cancel.after_cancel, services, done) if done.events else None
    return JSONResponse(turn_json(done.turn), status_code=202, background=after)


@router.post(
    "/v1/sessions/{sid}/turns/{tid}/inputs/{rid}",
    responses={200: doc.body(Turn, "Answered"), **doc.problems(400, 403, 404, 409, 410)},
)
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
    done = await services.run(answers.answer, services, principal_of(request), sid, tid, rid, body)
    return JSONResponse(
        turn_json(done.turn),
        status_code=200,
        background=services.after_answer(answers.after_answer, services, done),
    )


@router.post(
    "/v1/sessions/{sid}/turns/{tid}/inputs",
    responses={200: doc.body(Turn, "Answered"), **doc.problems(400, 403, 404, 409, 410)},
)
async def answer_inputs(
    request: Request, sid: SessionId, tid: TurnId, body: answers.AnswersRequest
) -> JSONResponse:
    """Answer several open requests of the turn's wait at once (the approvals of one
    model answer, asked together: its ``pending_inputs``), all or none: each is
    checked as a lone answer is before any is recorded. The turn goes on once every
    request of its wait is answered."""
    services = services_of(request)
    pairs = [(a.request_id, a.response) for a in body.answers]
    done = await services.run(answers.answer_many, services, principal_of(request), sid, tid, pairs)
    return JSONResponse(
        turn_json(done.turn),
        status_code=200,
        background=services.after_answer(answers.after_answer, services, done),
    )


@router.post(
    "/v1/sessions/{sid}/turns/{tid}/rerun",
    status_code=202,
    openapi_extra=_IDEMPOTENCY_KEY,
    responses={
        202: doc.body(Turn, "Admitted: the rerun, queued", headers=doc.LOCATION),
        200: doc.body(Turn, "A replay: the rerun this key admitted", headers=doc.LOCATION),
        **doc.problems(400, 403, 404, 429),
        409: {
            "description": doc.STATUSES[409]
            + ", `session_exists` (with fork: the session id is taken by no fork)"
        },
    },
)
async def rerun_turn(
    request: Request, sid: SessionId, tid: TurnId, body: reruns.RerunRequest
) -> JSONResponse:
    """Re-run the turn from a step as a new turn, reusing its committed outcomes before
    ``from_step`` (never run again) and, given ``replace``, starting from an edited
    outcome of that step; in the session, or in a fork of it (docs/reruns.md)."""
    services = services_of(request)
    key = request.headers.get("idempotency-key")
    admitted = await services.run(
        reruns.rerun, services, principal_of(request), sid, tid, key, body
    )
    turn = admitted.turn
    return JSONResponse(
        turn_json(turn),
        status_code=202 if admitted.created else 200,
        headers={"Location": turn_location(turn.session_id, turn.turn_id)},
        background=services.after_answer(admission.after_admission, services, admitted),
    )
