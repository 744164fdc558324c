"""Projects over HTTP (api/service/projects.py says what a project is and who sees it).

``POST /v1/projects`` creates one owned by the token's subject (201; a replay 200;
another request for the id 409), ``GET /v1/projects`` pages the caller's own, newest
first (``?limit=<n>&after=<next>``), ``GET`` and ``PATCH /v1/projects/{pid}`` read
it and replace its overrides. Anyone but the owner gets 404 ``not_found`` on a
project, byte for byte what a missing one gets.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service import projects
from turnkeep.api.service.requests import ID_REGEX
from turnkeep.models import Project, ProjectPage

router = APIRouter()

ProjectId = Annotated[str, Path(pattern=ID_REGEX)]

#: projects a listing page holds by default, and at most
LIST_PAGE = 50
MAX_LIST_PAGE = 500

Cursor = Annotated[
    str | None,
    Query(max_length=400, pattern=r"^[A-Za-z0-9_\-=]+$", description="`next` of the previous page"),
]

_IDEMPOTENCY_KEY = {
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "The project's id when the body names none; a new one is "
            "generated when both are absent. The same request again: 200; another: 409",
            "schema": {"type": "string", "pattern": ID_REGEX},
        }
    ]
}
_LOCATION = {
    "Location": {
        "description": "where the project is read",
        "required": True,
        "schema": {"type": "string"},
    }
}


def location(pid: str) -> str:
    return f"/v1/projects/{pid}"


@router.post(
    "/v1/projects",
    status_code=201,
    openapi_extra=_IDEMPOTENCY_KEY,
    responses={
        201: doc.body(Project, "Created", headers=_LOCATION),
        200: doc.body(Project, "A replay: the project of that id, as it stands", headers=_LOCATION),
        **doc.problems(400, 403),
        409: {
            "description": "`idempotency_conflict`: the id is taken (by this request with "
            "other overrides, or by another project)"
        },
    },
)
async def create_project(request: Request, body: projects.ProjectCreate) -> JSONResponse:
    """Create a project owned by the caller (the token's subject)."""
    services = services_of(request)
    key = request.headers.get("idempotency-key")
    done = await services.run(projects.create, services, principal_of(request), key, body)
    return JSONResponse(
        projects.project_json(done.project),
        status_code=201 if done.created else 200,
        headers={"Location": location(done.project.project_id)},
    )


@router.get(
    "/v1/projects",
    responses={200: doc.body(ProjectPage, "A page of the caller's projects, newest first")},
)
async def list_projects(
    request: Request,
    after: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_PAGE)] = LIST_PAGE,
) -> JSONResponse:
    services = services_of(request)
    body = await services.run(projects.page, services, principal_of(request), after, limit)
    return JSONResponse(body)


@router.get(
    "/v1/projects/{pid}",
    responses={200: doc.body(Project, "The project"), **doc.problems(404)},
)
async def get_project(request: Request, pid: ProjectId) -> JSONResponse:
    services = services_of(request)
    found = await services.run(projects.read, services, principal_of(request), pid)
    return JSONResponse(projects.project_json(found))


@router.patch(
    "/v1/projects/{pid}",
    responses={200: doc.body(Project, "Updated"), **doc.problems(400, 403, 404)},
)
async def update_project(
    request: Request, pid: ProjectId, body: projects.ProjectUpdate
) -> JSONResponse:
    """Replace the project's overrides. Turns admitted from now on pin the new ones;
    turns admitted before keep theirs."""
    services = services_of(request)
    found = await services.run(projects.update, services, principal_of(request), pid, body)
    return JSONResponse(projects.project_json(found))
