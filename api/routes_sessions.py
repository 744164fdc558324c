"""Sessions: the session summary and its provider-neutral transcript.

``GET /v1/sessions/{sid}/messages`` is paged by a seq cursor and never reads a whole
session: ``?after=<seq>&limit=<n>`` reads at most ``n`` of the journal's conversation
events (``turn.accepted`` and the outcomes) after ``seq``, one LIMITed statement, and
answers their messages with ``next`` (the cursor of the next page; null at the end),
``head_seq`` and ``earliest_seq``. Without ``after`` it starts at the earliest
retained event; an ``after`` before the retention cut is 410 ``resync_required``, as
for the event stream (docs/retention.md).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from api import openapi as doc
from api.auth import principal_of
from api.response_models import MessagePage, Session
from api.schemas import ID_REGEX
from api.services import Services, services_of
from api.transcript import transcript
from api.views import session_json
from store.errors import ResyncRequired
from store.records import EventPage

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]

#: conversation events one /messages page reads by default, and at most
PAGE = 100
MAX_PAGE = 1000


def _session(services: Services, tenant: str, sid: str) -> dict[str, Any]:
    session = services.store.get_session(tenant, sid)
    active = services.store.lane_head(tenant, sid)
    return session_json(session, active)


@router.get(
    "/v1/sessions/{sid}",
    responses={200: doc.body(Session, "The session"), **doc.problems(404)},
)
async def get_session(request: Request, sid: SessionId) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(await services.run(_session, services, principal_of(request).tenant, sid))


def _messages(
    services: Services, tenant: str, sid: str, after: int | None, limit: int
) -> dict[str, Any]:
    store = services.store
    try:
        page: EventPage = store.conversation_page(tenant, sid, after=after or 0, limit=limit)
    except ResyncRequired as exc:
        if after is not None:
            raise
        # no cursor: the transcript as retained, from the earliest event on
        page = store.conversation_page(tenant, sid, after=exc.earliest - 1, limit=limit)
    events = page.events
    return {
        "messages": transcript(events),
        "next": events[-1].seq if len(events) == limit else None,
        "head_seq": page.head_seq,
        "earliest_seq": page.earliest_seq,
    }


@router.get(
    "/v1/sessions/{sid}/messages",
    responses={
        200: doc.body(MessagePage, "A page of the transcript"),
        **doc.problems(404, 409, 410),
    },
)
async def get_messages(
    request: Request,
    sid: SessionId,
    after: Annotated[
        int | None, Query(ge=0, le=10**18, description="the seq to read after (`next`)")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = PAGE,
) -> JSONResponse:
    services = services_of(request)
    tenant = principal_of(request).tenant
    return JSONResponse(await services.run(_messages, services, tenant, sid, after, limit))
