"""Schedules over HTTP (api/service/schedules.py says what a schedule is).

``POST /v1/schedules`` creates one (201; a replay 200; another spec under the id 409),
``GET /v1/schedules`` lists the tenant's by id (``?limit=&after=``), ``GET`` and
``DELETE /v1/schedules/{id}`` read and delete one, ``POST …/pause`` and ``…/resume``
stop and start its ticks. Another tenant's schedule is 404, as a missing one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service import schedules
from turnkeep.api.service.schedules import SCHEDULE_ID_REGEX, ScheduleRequest, schedule_json
from turnkeep.schedules import Schedule, SchedulePage

router = APIRouter()

ScheduleId = Annotated[str, Path(pattern=SCHEDULE_ID_REGEX)]

_IDEMPOTENCY_KEY = {
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "The schedule's id when the body names none; a new one is "
            "generated when both are absent. The same request again: 200; another: 409",
            "schema": {"type": "string", "pattern": SCHEDULE_ID_REGEX},
        }
    ]
}


def _location(sid: str) -> dict[str, str]:
    return {"Location": f"/v1/schedules/{sid}"}


@router.post(
    "/v1/schedules",
    status_code=201,
    openapi_extra=_IDEMPOTENCY_KEY,
    responses={
        201: doc.body(Schedule, "Created", headers=doc.LOCATION),
        200: doc.body(Schedule, "A replay: the schedule of that id", headers=doc.LOCATION),
        **doc.problems(400, 403, 409),
    },
)
async def create_schedule(request: Request, body: ScheduleRequest) -> JSONResponse:
    """A schedule: the agent's turn with this input on every tick (a cron expression in
    a time zone, or an interval), in one session or a new one per tick."""
    services = services_of(request)
    key = request.headers.get("idempotency-key")
    made, created = await services.run(schedules.create, services, principal_of(request), key, body)
    return JSONResponse(
        schedule_json(made),
        status_code=201 if created else 200,
        headers=_location(made.schedule_id),
    )


@router.get("/v1/schedules", responses={200: doc.body(SchedulePage, "The tenant's schedules")})
async def list_schedules(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    after: Annotated[str, Query(pattern=r"^[A-Za-z0-9_-]{0,96}$")] = "",
) -> JSONResponse:
    """The tenant's schedules by id, ``limit`` after ``after`` (``next``: the last id)."""
    services, principal = services_of(request), principal_of(request)
    rows = await services.run(schedules.listed, services, principal, after=after, limit=limit)
    page = [schedule_json(s) for s in rows]
    nxt = rows[-1].schedule_id if len(rows) == limit else None
    return JSONResponse({"schedules": page, "next": nxt})


@router.get(
    "/v1/schedules/{schedule_id}",
    responses={200: doc.body(Schedule, "The schedule"), **doc.problems(404)},
)
async def get_schedule(request: Request, schedule_id: ScheduleId) -> JSONResponse:
    services, principal = services_of(request), principal_of(request)
    found = await services.run(schedules.get, services, principal, schedule_id)
    return JSONResponse(schedule_json(found))


@router.post(
    "/v1/schedules/{schedule_id}/pause",
    responses={200: doc.body(Schedule, "Paused: no tick fires"), **doc.problems(403, 404)},
)
async def pause_schedule(request: Request, schedule_id: ScheduleId) -> JSONResponse:
    services = services_of(request)
    done = await services.run(
        schedules.pause, services, principal_of(request), schedule_id, paused=True
    )
    return JSONResponse(schedule_json(done))


@router.post(
    "/v1/schedules/{schedule_id}/resume",
    responses={
        200: doc.body(Schedule, "Resumed from its next tick after now"),
        **doc.problems(403, 404),
    },
)
async def resume_schedule(request: Request, schedule_id: ScheduleId) -> JSONResponse:
    services = services_of(request)
    done = await services.run(
        schedules.pause, services, principal_of(request), schedule_id, paused=False
    )
    return JSONResponse(schedule_json(done))


@router.delete(
    "/v1/schedules/{schedule_id}",
    status_code=204,
    responses={204: {"description": "Deleted: no tick fires again"}, **doc.problems(403, 404)},
)
async def delete_schedule(request: Request, schedule_id: ScheduleId) -> Response:
    services = services_of(request)
    await services.run(schedules.delete, services, principal_of(request), schedule_id)
    return Response(status_code=204)
