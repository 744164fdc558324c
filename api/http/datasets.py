"""Datasets over HTTP (api/service/datasets.py says what a dataset is).

``POST /v1/datasets/{name}/versions`` makes a version from cases, as JSON
(``{"cases": [...]}``) or JSON Lines (``Content-Type: application/x-ndjson``, one case
a line); ``POST /v1/datasets/{name}/cases`` one from real turns. Both answer 201 with
the new version, or 200 with the one that already holds exactly those cases.
``GET /v1/datasets`` lists the tenant's datasets, ``GET /v1/datasets/{name}`` a
dataset's versions, ``GET …/versions/{version}`` one with its cases. A reader may read,
not write; another tenant's dataset is 404, as a missing one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.resources import services_of
from turnkeep.api.service import datasets
from turnkeep.api.service.datasets import DatasetCreate, FromTurns
from turnkeep.evaluation import (
    DATASET_NAME,
    MAX_DATASET_VERSION,
    DatasetList,
    DatasetVersion,
    DatasetVersions,
)

#: the media types a version's cases may come in as JSON Lines
JSON_LINES = ("application/x-ndjson", "application/jsonl")

DatasetName = Annotated[str, Path(pattern=DATASET_NAME)]
Version = Annotated[int, Path(ge=1, le=MAX_DATASET_VERSION)]


def _as_json(body: bytes) -> bytes:
    """A JSON Lines body as the JSON one (``{"cases": [...]}``); a line that is no
    JSON is 422 naming it (blank lines are skipped)."""
    cases = []
    for n, line in enumerate(body.decode("utf-8", errors="replace").splitlines()):
        if not line.strip():
            continue
        try:
            cases.append(json.loads(line))
        except ValueError:
            raise RequestInvalid(f"body.cases.{len(cases)}", f"line {n + 1} is not JSON") from None
    return json.dumps({"cases": cases}).encode()


class JsonLinesRoute(APIRoute):
    """A route whose JSON body ``{"cases": [...]}`` may also come as JSON Lines: the
    request is handed on as the JSON one, so validation and errors are the same."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            media = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if media in JSON_LINES:
                body = _as_json(await request.body())
                headers = [(k, v) for k, v in request.scope["headers"] if k != b"content-type"]
                scope = {
                    **request.scope,
                    "headers": [*headers, (b"content-type", b"application/json")],
                }

                async def receive() -> dict[str, Any]:
                    return {"type": "http.request", "body": body, "more_body": False}

                request = Request(scope, receive)
            return await handler(request)

        return handle


router = APIRouter()
lines_router = APIRouter(route_class=JsonLinesRoute)

_JSON_LINES_BODY = {
    "requestBody": {
        "content": {
            media: {
                "schema": {"type": "array", "items": {"$ref": doc.REF.format(model="CaseSpec")}},
            }
            for media in JSON_LINES[:1]
        }
    }
}


def _created(body: dict[str, Any], created: bool) -> JSONResponse:
    location = f"/v1/datasets/{body['dataset']}/versions/{body['version']}"
    return JSONResponse(body, status_code=201 if created else 200, headers={"Location": location})


@lines_router.post(
    "/v1/datasets/{name}/versions",
    status_code=201,
    openapi_extra=_JSON_LINES_BODY,
    responses={
        201: doc.body(DatasetVersion, "Created", headers=doc.LOCATION),
        200: doc.body(DatasetVersion, "The version holding these cases", headers=doc.LOCATION),
        **doc.problems(400, 403, 409),
    },
)
async def create_version(request: Request, name: DatasetName, body: DatasetCreate) -> JSONResponse:
    """A new version of the dataset with these cases (each an input and its
    assertions); the same cases again answer the version that holds them."""
    services = services_of(request)
    made, created = await services.run(
        datasets.create_version, services, principal_of(request), name, body
    )
    return _created(made, created)


@router.post(
    "/v1/datasets/{name}/cases",
    status_code=201,
    responses={
        201: doc.body(DatasetVersion, "Created", headers=doc.LOCATION),
        200: doc.body(DatasetVersion, "The version holding these cases", headers=doc.LOCATION),
        # a named turn's session was deleted: 410 session_deleted, as every read of it
        **doc.problems(400, 403, 404, 409, 410),
    },
)
async def add_turns(request: Request, name: DatasetName, body: FromTurns) -> JSONResponse:
    """A new version: the cases of ``base`` (default: the newest version) and one case
    per real turn, its input and the assertions given or derived from what it did."""
    services = services_of(request)
    made, created = await services.run(
        datasets.add_turns, services, principal_of(request), name, body
    )
    return _created(made, created)


@router.get("/v1/datasets", responses={200: doc.body(DatasetList, "The tenant's datasets")})
async def list_datasets(request: Request) -> JSONResponse:
    """The tenant's datasets by name, each with its newest version."""
    services = services_of(request)
    return JSONResponse(await services.run(datasets.listing, services, principal_of(request)))


@router.get(
    "/v1/datasets/{name}",
    responses={200: doc.body(DatasetVersions, "Its versions"), **doc.problems(404)},
)
async def dataset_versions(request: Request, name: DatasetName) -> JSONResponse:
    """Every version of the dataset, newest first (their cases: ``…/versions/{v}``)."""
    services = services_of(request)
    return JSONResponse(
        await services.run(datasets.versions, services, principal_of(request), name)
    )


@router.get(
    "/v1/datasets/{name}/versions/{version}",
    responses={200: doc.body(DatasetVersion, "The version and its cases"), **doc.problems(404)},
)
async def dataset_version(request: Request, name: DatasetName, version: Version) -> JSONResponse:
    """One version with its cases (a ``never_appears`` secret sealed: never answered)."""
    services = services_of(request)
    return JSONResponse(
        await services.run(datasets.get_version, services, principal_of(request), name, version)
    )
