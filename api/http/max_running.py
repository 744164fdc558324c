"""A tenant's max_running over HTTP (api/service/max_running.py says what it is):
``GET /v1/limits`` reads the caller's tenant's, ``PUT /v1/limits`` declares or clears
it (a tenant's admin only: 403 ``forbidden_role`` for any other role)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service import max_running
from turnkeep.api.service.max_running import LimitsRequest
from turnkeep.max_running import TenantMaxRunning

router = APIRouter()


@router.get("/v1/limits", responses={200: doc.body(TenantMaxRunning, "The tenant's limits")})
async def get_limits(request: Request) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(await services.run(max_running.get, services, principal_of(request)))


@router.put(
    "/v1/limits",
    responses={200: doc.body(TenantMaxRunning, "Declared"), **doc.problems(400, 403)},
)
async def put_limits(request: Request, body: LimitsRequest) -> JSONResponse:
    """Declare the tenant's max_running (null clears it): at most that many of its turns
    run at once, the rest stay queued; workers take it up within a few seconds."""
    services = services_of(request)
    declared = await services.run(max_running.put, services, principal_of(request), body)
    return JSONResponse(declared)
