"""Attachments over HTTP: upload, metadata, content, delete (api/service/attachments.py).

``POST /v1/sessions/{sid}/attachments`` takes at most ``MAX_UPLOAD_BODY`` bytes of
body: the routes of this router check the declared length and the bytes received
(``BoundedRoute``) before FastAPI parses anything, 413 ``payload_too_large`` beyond.

The attachments of a project's session are its owner's alone (api/service/projects.py):
anyone else is answered as for a missing session or attachment (``_owned``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute

from turnkeep.api import openapi as doc
from turnkeep.api.auth import Principal, principal_of
from turnkeep.api.errors import UploadTooLarge
from turnkeep.api.resources import ApiResources, services_of
from turnkeep.api.service import attachments
from turnkeep.api.service.access import may_write, visible
from turnkeep.api.service.attachments import CONTENT_TYPES, MAX_ATTACHMENT_BYTES, MAX_UPLOAD_BODY
from turnkeep.api.service.ids import turn_id
from turnkeep.api.service.requests import ID_REGEX
from turnkeep.models import Attachment
from turnkeep.runtime.numerals import ascii_int


class BoundedRoute(APIRoute):
    """A route whose request body is refused above ``MAX_UPLOAD_BODY`` bytes before it
    is parsed (the app's BodyLimit has buffered it already, up to its own bound)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def bounded(request: Request) -> Response:
            declared = ascii_int(request.headers.get("content-length"))
            if declared is not None and declared > MAX_UPLOAD_BODY:
                raise UploadTooLarge(MAX_UPLOAD_BODY)
            if len(await request.body()) > MAX_UPLOAD_BODY:
                raise UploadTooLarge(MAX_UPLOAD_BODY)
            return await handler(request)

        return bounded


router = APIRouter(route_class=BoundedRoute)


def _owned(
    services: ApiResources,
    principal: Principal,
    sid: str,
    *,
    missing: str = "attachment not found",
    write: bool = False,
) -> None:
    """Refuse (as the route does a missing one) a session of another owner's project;
    a write refuses a reader first, as it always did."""
    if write:
        may_write(principal)
    visible(services, principal, sid, missing=missing)


SessionId = Annotated[str, Path(pattern=ID_REGEX)]
AttachmentId = Annotated[str, Path(pattern=ID_REGEX)]

_IDEMPOTENCY_KEY = {
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "description": "The attachment id; a new one is generated when absent. Reused "
            "with the same file: the stored attachment (200); with another: 409",
            "schema": {"type": "string", "pattern": ID_REGEX},
        }
    ]
}
_LOCATION = {
    "Location": {
        "description": "where the attachment is read",
        "required": True,
        "schema": {"type": "string"},
    }
}
_UPLOAD_PROBLEMS: dict[int | str, dict[str, Any]] = {
    **doc.problems(400, 403, 404),
    409: {
        "description": "`idempotency_conflict`: the Idempotency-Key's attachment has other "
        "content, or is being deleted"
    },
    413: {
        "description": f"`payload_too_large`: the body is above {MAX_UPLOAD_BODY} bytes "
        "(or `TURNKEEP_MAX_BODY_BYTES`); `attachment_too_large`: the content is above "
        f"{MAX_ATTACHMENT_BYTES} bytes decoded"
    },
    415: {"description": "`unsupported_attachment_type`: " + ", ".join(CONTENT_TYPES)},
}
_BINARY = {"schema": {"type": "string", "format": "binary"}}


@router.post(
    "/v1/sessions/{sid}/attachments",
    status_code=201,
    openapi_extra=_IDEMPOTENCY_KEY,
    responses={
        201: doc.body(Attachment, "Uploaded: ready", headers=_LOCATION),
        200: doc.body(
            Attachment, "A replay: the attachment this Idempotency-Key uploaded", headers=_LOCATION
        ),
        **_UPLOAD_PROBLEMS,
    },
)
async def upload_attachment(
    request: Request, sid: SessionId, body: attachments.AttachmentUpload
) -> JSONResponse:
    """Upload a file to an existing session (404 for none): JSON with its bytes as
    base64, at most 192 KiB decoded. Answered once it is ready for a turn to name."""
    aid = turn_id(request.headers.get("idempotency-key"))
    services, principal = services_of(request), principal_of(request)
    await services.run(_owned, services, principal, sid, missing="session not found", write=True)
    done = await services.run(attachments.upload, services, principal, sid, aid, body)
    return JSONResponse(
        attachments.attachment_json(done.attachment),
        status_code=201 if done.created else 200,
        headers={"Location": attachments.location(sid, aid)},
    )


@router.get(
    "/v1/sessions/{sid}/attachments/{aid}",
    responses={200: doc.body(Attachment, "The attachment's metadata"), **doc.problems(404)},
)
async def get_attachment(request: Request, sid: SessionId, aid: AttachmentId) -> JSONResponse:
    services, principal = services_of(request), principal_of(request)
    await services.run(_owned, services, principal, sid)
    found = await services.run(attachments.read, services, principal, sid, aid)
    return JSONResponse(attachments.attachment_json(found))


@router.get(
    "/v1/sessions/{sid}/attachments/{aid}/content",
    response_class=Response,
    responses={
        200: {
            "description": "The attachment's bytes, as its content_type",
            "content": {kind: _BINARY for kind in CONTENT_TYPES},
        },
        404: {"description": "`not_found`: no such attachment for this tenant"},
        409: {"description": "`attachment_not_ready`: its upload has not completed"},
    },
)
async def get_attachment_content(request: Request, sid: SessionId, aid: AttachmentId) -> Response:
    services, principal = services_of(request), principal_of(request)
    await services.run(_owned, services, principal, sid)
    # an attachment not ready yet: AttachmentNotReady, its 409
    found, data = await services.run(attachments.content, services, principal, sid, aid)
    return Response(
        data,
        headers={
            "Content-Type": found.content_type,
            "Content-Disposition": f"attachment; filename*=UTF-8''{quote(found.filename)}",
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.delete(
    "/v1/sessions/{sid}/attachments/{aid}",
    status_code=204,
    response_class=Response,
    responses={204: {"description": "Deleted"}, **doc.problems(403, 404)},
)
async def delete_attachment(request: Request, sid: SessionId, aid: AttachmentId) -> Response:
    """Delete an attachment; a retry finishes a deletion that was cut short. Turns that
    named it keep its id in their input."""
    services, principal = services_of(request), principal_of(request)
    await services.run(_owned, services, principal, sid, write=True)
    await services.run(attachments.delete, services, principal, sid, aid)
    return Response(status_code=204)
