"""Participant bindings of the chat bridges over HTTP (api/service/bindings.py says
what one is): ``POST /v1/bridges/bindings`` binds a sender (201), ``GET`` lists the
tenant's, ``DELETE /v1/bridges/bindings/{binding_id}`` revokes one. A tenant's admin
only (403 ``forbidden_role`` for any other role)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service import bindings
from turnkeep.api.service.bindings import BindingRequest
from turnkeep.api.service.requests import ID_REGEX
from turnkeep.models import Binding, BindingList

router = APIRouter()

BindingId = Annotated[str, Path(pattern=ID_REGEX)]


@router.post(
    "/v1/bridges/bindings",
    status_code=201,
    responses={201: doc.body(Binding, "Bound"), **doc.problems(400, 403, 404, 409)},
)
async def create_binding(request: Request, body: BindingRequest) -> JSONResponse:
    """Bind a bridge's sender to a subject of the tenant. 404
    ``bridge_workspace_not_found`` when the workspace is not assigned to this tenant;
    409 ``binding_taken`` when that sender has a live binding (revoke it first)."""
    services = services_of(request)
    created = await services.run(bindings.create, services, principal_of(request), body)
    return JSONResponse(created, status_code=201)


@router.get(
    "/v1/bridges/bindings",
    responses={200: doc.body(BindingList, "The tenant's bindings"), **doc.problems(403)},
)
async def list_bindings(request: Request) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(await services.run(bindings.listing, services, principal_of(request)))


@router.delete(
    "/v1/bridges/bindings/{binding_id}",
    responses={200: doc.body(Binding, "Revoked"), **doc.problems(403, 404)},
)
async def revoke_binding(request: Request, binding_id: BindingId) -> JSONResponse:
    """Revoke a live binding: its sender's next message admits nothing."""
    services = services_of(request)
    revoked = await services.run(bindings.revoke, services, principal_of(request), binding_id)
    return JSONResponse(revoked)
