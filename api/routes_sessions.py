"""Sessions: the session summary and its provider-neutral transcript."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path

from api.auth import Principal, authenticate
from api.schemas import ID_REGEX
from api.services import Services, get_services
from api.transcript import transcript
from api.views import session_json
from store.records import EventRecord

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]
Auth = Annotated[Principal, Depends(authenticate)]
Deps = Annotated[Services, Depends(get_services)]

PAGE = 1000


@router.get("/v1/sessions/{sid}")
def get_session(sid: SessionId, principal: Auth, services: Deps) -> dict[str, Any]:
    session = services.store.get_session(principal.tenant, sid)
    active = services.store.lane_head(principal.tenant, sid)
    return session_json(session, active)


@router.get("/v1/sessions/{sid}/messages")
def get_messages(sid: SessionId, principal: Auth, services: Deps) -> dict[str, Any]:
    events: list[EventRecord] = []
    after = 0
    while True:
        page, head = services.store.list_events(principal.tenant, sid, after=after, limit=PAGE)
        events.extend(page)
        if not page or page[-1].seq >= head or len(page) < PAGE:
            break
        after = page[-1].seq
    return {"messages": transcript(events)}
