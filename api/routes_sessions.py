"""Sessions: the session summary and its provider-neutral transcript."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse

from api.auth import principal_of
from api.schemas import ID_REGEX
from api.services import Services, services_of
from api.transcript import transcript
from api.views import session_json
from store.records import EventRecord

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]

PAGE = 1000


def _session(services: Services, tenant: str, sid: str) -> dict[str, Any]:
    session = services.store.get_session(tenant, sid)
    active = services.store.lane_head(tenant, sid)
    return session_json(session, active)


@router.get("/v1/sessions/{sid}")
async def get_session(request: Request, sid: SessionId) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(await services.run(_session, services, principal_of(request).tenant, sid))


def _messages(services: Services, tenant: str, sid: str) -> dict[str, Any]:
    events: list[EventRecord] = []
    after = 0
    while True:
        page, head = services.store.list_events(tenant, sid, after=after, limit=PAGE)
        events.extend(page)
        if not page or page[-1].seq >= head or len(page) < PAGE:
            break
        after = page[-1].seq
    return {"messages": transcript(events)}


@router.get("/v1/sessions/{sid}/messages")
async def get_messages(request: Request, sid: SessionId) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(await services.run(_messages, services, principal_of(request).tenant, sid))
