"""``GET /v1/turns``: the tenant's turns across its sessions, filtered and paged newest
first (api/service/search.py has the query language; docs/search.md). The sessions'
search is ``GET /v1/sessions`` with the same filters (api/http/sessions.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service import search
from turnkeep.models import TurnPage

router = APIRouter()


@router.get(
    "/v1/turns",
    responses={200: doc.body(TurnPage, "A page of the matching turns, newest first")},
)
async def search_turns(
    request: Request, query: Annotated[search.TurnQuery, Query()]
) -> JSONResponse:
    """The tenant's turns the filters match, across its sessions, newest first; a
    parameter the route does not know is a 422."""
    services, principal = services_of(request), principal_of(request)
    return JSONResponse(await services.run(search.turns, services, principal, query))
