"""The journal of a session: a JSON page, or SSE resumable from Last-Event-ID.

Both say the earliest retained seq (the JSON page's ``earliest_seq``; for SSE see
api/sse.py). A cursor before the retention cut (``after + 1 < earliest_seq``) is 410
``resync_required`` with ``requested``, ``earliest`` and ``latest`` (docs/retention.md);
one beyond the head is 409 ``cursor_ahead``. No cursor at all starts at the earliest
retained event: a reader that has seen nothing has no gap.

A session in a project (api/service/projects.py) answers anyone but its owner as a
missing one does (``access.visible``, before anything else is read or counted).

A tenant holds at most ``TURNKEEP_MAX_STREAMS_PER_TENANT`` SSE streams open on one API
process; the next is 429 ``quota_exceeded`` (api/service/bounds.py). JSON pages are not counted.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Annotated

import redis
from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from turnkeep.api import openapi as doc
from turnkeep.api.auth import principal_of
from turnkeep.api.errors import InvalidCursor, LiveChannelUnavailable
from turnkeep.api.live import LiveFeed
from turnkeep.api.resources import services_of
from turnkeep.api.service import follow
from turnkeep.api.service.access import visible
from turnkeep.api.service.requests import ID_REGEX
from turnkeep.api.sse import EARLIEST_HEADER, PAGE, EventStreamResponse, SessionStream
from turnkeep.models import EventPage

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]

_CURSOR = re.compile(r"^[0-9]{1,18}$")

#: read by ``Authenticate`` (api/stream_tokens.py), never by the route
_STREAM_TOKEN = {
    "parameters": [
        {
            "name": "stream_token",
            "in": "query",
            "required": False,
            "description": "A stream token of this session, in place of the Authorization "
            "header (an EventSource cannot send one); read only when there is none",
            "schema": {"type": "string"},
        }
    ],
    "security": [{doc.BEARER: []}, {doc.STREAM_TOKEN: []}],
}
_EVENTS = {
    **doc.body(EventPage, "A page of the journal (JSON), or its event stream (SSE)"),
    "content": {"text/event-stream": doc.EVENT_STREAM},
    "headers": {
        EARLIEST_HEADER: {
            "description": "the earliest retained seq, when an event stream opens",
            "schema": {"type": "string", "pattern": "^[0-9]+$"},
        }
    },
}


def _cursor(last_event_id: str | None, after: str | None) -> int | None:
    """Last-Event-ID wins over ?after= (a reconnecting EventSource resends the URL);
    None for neither."""
    raw = last_event_id if last_event_id is not None else after
    if raw is None:
        return None
    raw = raw.strip()
    if not _CURSOR.fullmatch(raw):
        raise InvalidCursor("the cursor must be a non-negative integer seq")
    return int(raw)


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "").lower()
    return "application/json" in accept and "text/event-stream" not in accept


@router.get(
    "/v1/sessions/{sid}/events",
    description="A JSON page with `Accept: application/json` (and not "
    "`text/event-stream`); else an event stream: the journal from the cursor on, then "
    "live. The cursor is `Last-Event-ID`, else `after`; without one, the earliest "
    "retained event. An event stream counts against the tenant's stream quota (429).",
    openapi_extra=_STREAM_TOKEN,
    responses={200: _EVENTS, **doc.problems(400, 404, 409, 410, 429)},
)
async def get_events(
    request: Request,
    sid: SessionId,
    after: Annotated[
        str | None, Query(description="the seq to read after (a non-negative integer)")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> Response:
    cursor = _cursor(last_event_id, after)
    services, principal = services_of(request), principal_of(request)
    tenant = principal.tenant
    await services.run(visible, services, principal, sid)
    if _wants_json(request):
        body = await services.run(follow.page, services, tenant, sid, cursor, limit)
        return JSONResponse(body)
    release = services.streams.take(tenant, services.settings.bounds.max_streams_per_tenant)
    # subscribe first, then read: nothing committed after this read can be missed
    try:
        feed = await LiveFeed.open(
            services.aredis, tenant, sid, backlog=services.settings.sse.backlog
        )
    except (redis.RedisError, TimeoutError) as exc:
        release()
        raise LiveChannelUnavailable() from exc
    except BaseException:
        release()
        raise
    try:
        # a cursor before the retention cut raises ResyncRequired here: 410, no stream
        first, start = await services.run(follow.read_from, services, tenant, sid, cursor, PAGE)
    except BaseException:
        release()
        await feed.close()
        raise
    stream = SessionStream(
        read_page=partial(follow.event_page, services),
        feed=feed,
        tenant_id=tenant,
        session_id=sid,
        cursor=start,
        first=first.events,
        earliest=first.earliest_seq,
        heartbeat=services.settings.sse.heartbeat,
        run=services.run,
    )
    return EventStreamResponse(stream, on_close=release)
