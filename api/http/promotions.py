"""Promotion over HTTP (api/service/promotions.py, docs/evaluation.md "Promotion"):
``POST /v1/agents/{name}/versions/{version}/promote`` makes a version of a gated agent
the default for the tenant's new turns once its policy's checks pass (an admin's;
refused: 409 ``promotion_refused`` listing each failed check), and ``GET
/v1/agents/{name}/promotions`` shows the default, the policy and the journal."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service import promotions
from turnkeep.api.service.requests import NO_NUL
from turnkeep.evaluation import AgentPromotions, Promotion

router = APIRouter()

AgentName = Annotated[str, Path(min_length=1, max_length=128, pattern=NO_NUL)]
Version = Annotated[str, Path(min_length=1, max_length=128, pattern=NO_NUL)]


@router.post(
    "/v1/agents/{name}/versions/{version}/promote",
    responses={200: doc.body(Promotion, "Promoted: the journal's entry"), **doc.problems(403, 409)},
)
async def promote(request: Request, name: AgentName, version: Version) -> JSONResponse:
    """Check the version against the agent's promotion policy (pass rates on the named
    datasets, no regression against the current default, every none-of assertion
    clean, optionally a recovery drill); record the outcome either way."""
    services, principal = services_of(request), principal_of(request)
    return JSONResponse(await services.run(promotions.promote, services, principal, name, version))


@router.get(
    "/v1/agents/{name}/promotions",
    responses={200: doc.body(AgentPromotions, "The default and the journal")},
)
async def agent_promotions(request: Request, name: AgentName) -> JSONResponse:
    """The version the tenant's new turns get, the declared policy, and every promotion
    (accepted or refused), newest first."""
    services, principal = services_of(request), principal_of(request)
    return JSONResponse(await services.run(promotions.journal, services, principal, name))
