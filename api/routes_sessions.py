"""Sessions: the tenant's sessions, a session's summary, its turns and its
provider-neutral transcript.

A session in a project (api/projects.py) is its owner's alone: every route here
answers anyone else as for a missing session (``submit.visible``), and the listing
leaves it out.

``GET /v1/sessions`` and ``GET /v1/sessions/{sid}/turns`` are keyset pages, newest
first: ``?limit=<n>&before=<next>``, one LIMITed statement on an index each
(ix_sessions_created, ix_turns_session_ordinal), whatever the tenant or session holds.

``GET /v1/sessions/{sid}/messages`` is paged by a seq cursor and never reads a whole
session: ``?after=<seq>&limit=<n>`` reads at most ``n`` of the journal's conversation
events (``turn.accepted`` and the outcomes) after ``seq``, one LIMITed statement, and
answers their messages with ``next`` (the cursor of the next page; null at the end),
``head_seq`` and ``earliest_seq``. Without ``after`` it starts at the earliest
retained event; an ``after`` before the retention cut is 410 ``resync_required``, as
for the event stream (docs/retention.md).
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from api import openapi as doc
from api import submit
from api.auth import Principal, principal_of
from api.problems import Problem
from api.response_models import MessagePage, Session, SessionPage, TurnPage
from api.schemas import ID_REGEX
from api.services import Services, services_of
from api.transcript import transcript
from api.views import session_json, turn_json
from store.errors import ResyncRequired
from store.records import EventPage

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]

#: conversation events one /messages page reads by default, and at most
PAGE = 100
MAX_PAGE = 1000


#: sessions or turns a listing page holds by default, and at most
LIST_PAGE = 50
MAX_LIST_PAGE = 500

Cursor = Annotated[
    str | None,
    Query(max_length=200, pattern=r"^[A-Za-z0-9_\-=]+$", description="`next` of the previous page"),
]


def _bad_cursor() -> Problem:
    return Problem(
        422,
        "validation_error",
        "invalid field(s): query.before",
        extra={"errors": [{"loc": ["query", "before"], "msg": "not a cursor of this listing"}]},
    )


def _session_cursor(created_at: datetime, sid: str) -> str:
    raw = f"{created_at.isoformat()}|{sid}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _session_position(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, sep, sid = raw.partition("|")
        if not sep or not sid:
            raise ValueError(raw)
        return datetime.fromisoformat(at), sid
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise _bad_cursor() from None


def _sessions(
    services: Services, principal: Principal, before: str | None, limit: int
) -> dict[str, Any]:
    position = None if before is None else _session_position(before)
    rows = services.store.list_sessions(
        principal.tenant, subject=principal.subject, limit=limit, before=position
    )
    sessions = []
    for row in rows:
        body = session_json(row.session, None)
        if row.active_state is not None:
            body["state"], body["active_turn"] = row.active_state.value, row.active_turn
        sessions.append(body)
    last = rows[-1].session if len(rows) == limit else None
    return {
        "sessions": sessions,
        "next": None if last is None else _session_cursor(last.created_at, last.session_id),
    }


@router.get(
    "/v1/sessions",
    responses={200: doc.body(SessionPage, "A page of the tenant's sessions, newest first")},
)
async def list_sessions(
    request: Request,
    before: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_PAGE)] = LIST_PAGE,
) -> JSONResponse:
    services = services_of(request)
    principal = principal_of(request)
    return JSONResponse(await services.run(_sessions, services, principal, before, limit))


def _turns(
    services: Services, principal: Principal, sid: str, before: str | None, limit: int
) -> dict[str, Any]:
    if before is not None and not before.isdigit():
        raise _bad_cursor()
    ordinal = None if before is None else int(before)
    submit.visible(services, principal, sid)
    turns = services.store.turn_page(principal.tenant, sid, limit=limit, before=ordinal)
    return {
        "turns": [turn_json(t) for t in turns],
        "next": str(turns[-1].ordinal) if len(turns) == limit else None,
    }


@router.get(
    "/v1/sessions/{sid}/turns",
    responses={
        200: doc.body(TurnPage, "A page of the session's turns, newest first"),
        **doc.problems(404),
    },
)
async def list_turns(
    request: Request,
    sid: SessionId,
    before: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_PAGE)] = LIST_PAGE,
) -> JSONResponse:
    services = services_of(request)
    principal = principal_of(request)
    return JSONResponse(await services.run(_turns, services, principal, sid, before, limit))


def _session(services: Services, principal: Principal, sid: str) -> dict[str, Any]:
    submit.visible(services, principal, sid)
    session = services.store.get_session(principal.tenant, sid)
    active = services.store.lane_head(principal.tenant, sid)
    return session_json(session, active)


@router.get(
    "/v1/sessions/{sid}",
    responses={200: doc.body(Session, "The session"), **doc.problems(404)},
)
async def get_session(request: Request, sid: SessionId) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(await services.run(_session, services, principal_of(request), sid))


def _messages(
    services: Services, principal: Principal, sid: str, after: int | None, limit: int
) -> dict[str, Any]:
    submit.visible(services, principal, sid)
    store, tenant = services.store, principal.tenant
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
    principal = principal_of(request)
    return JSONResponse(await services.run(_messages, services, principal, sid, after, limit))
