"""Sessions: the tenant's sessions, a session's summary, its turns and its
provider-neutral transcript, and its deletion (docs/erasure.md).

A session in a project (api/service/projects.py) is its owner's alone: every route
here answers anyone else as for a missing session (``access.visible``), and the
listing leaves it out. The reads are api/service/reads.py's.

``GET /v1/sessions`` and ``GET /v1/sessions/{sid}/turns`` are keyset pages, newest
first: ``?limit=<n>&after=<next>``, one LIMITed statement on an index each
(ix_sessions_created, ix_turns_session_ordinal), whatever the tenant or session holds.
``GET /v1/sessions`` also takes the search's filters (api/service/search.py).

``GET /v1/sessions/{sid}/messages`` is paged by a seq cursor and never reads a whole
session: ``?after=<seq>&limit=<n>`` reads at most ``n`` of the journal's conversation
events (``turn.accepted`` and the outcomes) after ``seq``, one LIMITed statement, and
answers their messages with ``next`` (the cursor of the next page; null at the end),
``head_seq`` and ``earliest_seq``. Without ``after`` it starts at the earliest
retained event; an ``after`` before the retention cut is 410 ``resync_required``, as
for the event stream (docs/retention.md).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.resources import services_of
from turnkeep.api.service import erasure, inbox, reads, search
from turnkeep.api.service.requests import ID_REGEX
from turnkeep.erasure import Tombstone
from turnkeep.inbox import InboxPage
from turnkeep.models import MessagePage, Session, SessionPage, TurnPage

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


@router.get(
    "/v1/sessions",
    responses={200: doc.body(SessionPage, "A page of the tenant's sessions, newest first")},
)
async def list_sessions(
    request: Request, query: Annotated[search.SessionQuery, Query()]
) -> JSONResponse:
    """The tenant's sessions, newest first; with filters, those they match (the query
    language: api/service/search.py). A parameter the route does not know is a 422."""
    services = services_of(request)
    principal = principal_of(request)
    return JSONResponse(await services.run(search.sessions, services, principal, query))


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
    after: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_PAGE)] = LIST_PAGE,
) -> JSONResponse:
    services = services_of(request)
    principal = principal_of(request)
    body = await services.run(reads.turns_page, services, principal, sid, after, limit)
    return JSONResponse(body)


@router.get(
    "/v1/sessions/{sid}",
    responses={200: doc.body(Session, "The session"), **doc.problems(404)},
)
async def get_session(request: Request, sid: SessionId) -> JSONResponse:
    services = services_of(request)
    return JSONResponse(await services.run(reads.session, services, principal_of(request), sid))


@router.delete(
    "/v1/sessions/{sid}",
    status_code=202,
    responses={
        202: doc.body(Tombstone, "Deleted: its erasure is under way"),
        200: doc.body(Tombstone, "Deleted and erased (a DELETE again)"),
        **doc.problems(403, 404),
    },
)
async def delete_session(request: Request, sid: SessionId) -> JSONResponse:
    """Delete the session (docs/erasure.md): its active turns are cancelled (a running
    one's worker has its next write refused) and everything it held is erased in
    bounded batches; its tombstone stays. From this answer on every read of it is 410
    ``session_deleted``, and no admission re-creates it. Idempotent: a DELETE again
    answers the same tombstone, 200 once ``erased_at`` is set."""
    services = services_of(request)
    done = await services.run(erasure.delete, services, principal_of(request), sid)
    gone = done.tombstone
    after = services.after_answer(erasure.after_delete, services, done) if done.created else None
    status = 200 if gone.erased else 202
    return JSONResponse(erasure.tombstone_json(gone), status_code=status, background=after)


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
    return JSONResponse(await services.run(reads.messages, services, principal, sid, after, limit))


@router.get(
    "/v1/inbox",
    responses={200: doc.body(InboxPage, "The open requests the caller may answer")},
)
async def open_inputs(
    request: Request,
    state: Annotated[Literal["open"], Query(description="only open requests")] = "open",
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    after: Annotated[
        str | None, Query(max_length=200, pattern=r"^[0-9]+\.[A-Za-z0-9._-]+$")
    ] = None,
) -> JSONResponse:
    """The inbox: every open request the caller may answer across the tenant's sessions
    (approvals, questions, reconciliations, …; not those only the runtime answers), by
    session and admission, with its binding and expiry."""
    services, principal = services_of(request), principal_of(request)
    page = await services.run(inbox.inbox, services, principal, after=after, limit=limit)
    return JSONResponse(page)
