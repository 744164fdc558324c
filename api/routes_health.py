"""Liveness, readiness (Postgres and Redis) and Prometheus metrics."""

from __future__ import annotations

import logging
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse, Response
from sqlalchemy import text

from api.auth import Principal, authenticate
from api.metrics import CONTENT_TYPE
from api.problems import unavailable
from api.services import Services, get_services

log = logging.getLogger(__name__)

router = APIRouter()

Deps = Annotated[Services, Depends(get_services)]


@router.get("/healthz")
async def healthz() -> dict[str, Any]:
    return {"status": "ok"}


def _check_postgres(services: Services) -> str:
    try:
        with services.store.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:
        log.warning("readiness: postgres failed: %s", type(exc).__name__)
        return "failed"
    return "ok"


def _check_redis(services: Services) -> str:
    try:
        services.redis.ping()
    except Exception as exc:
        log.warning("readiness: redis failed: %s", type(exc).__name__)
        return "failed"
    return "ok"


@router.get("/readyz")
def readyz(services: Deps) -> JSONResponse:
    checks = {"postgres": _check_postgres(services), "redis": _check_redis(services)}
    failed = sorted(name for name, state in checks.items() if state != "ok")
    if not failed:
        return JSONResponse({"status": "ready", "checks": checks})
    problem = unavailable("not ready: " + ", ".join(failed))
    problem.extra = {"checks": checks}
    return problem.response()


@router.get("/metrics")
def metrics(_: Annotated[Principal, Depends(authenticate)], services: Deps) -> Response:
    return Response(services.metrics.render(), media_type=CONTENT_TYPE)
