"""Liveness, readiness (Postgres and Redis) and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from turnkeep.api import openapi as doc
from turnkeep.api import problems
from turnkeep.api.errors import NotReady
from turnkeep.api.http.bodies import Health, Ready
from turnkeep.api.metrics import CONTENT_TYPE
from turnkeep.api.resources import services_of
from turnkeep.api.service import health

router = APIRouter()


@router.get("/healthz", response_model=None, responses={200: doc.body(Health, "Alive")})
async def healthz() -> dict[str, Any]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    responses={200: doc.body(Ready, "Ready"), 503: {"description": "Not ready: `checks` says why"}},
)
async def readyz(request: Request) -> JSONResponse:
    services = services_of(request)
    checks = await services.run(health.checks, services)
    if all(state == "ok" for state in checks.values()):
        return JSONResponse({"status": "ready", "checks": checks})
    return problems.answer(NotReady(checks)).response()


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics(request: Request) -> Response:
    """Prometheus text; needs a token like every non-public path (api/auth.py). Off the
    event loop: the backlog gauges read Redis and Postgres (at most every 2 s)."""
    services = services_of(request)
    return Response(await services.run(services.metrics.render), media_type=CONTENT_TYPE)
