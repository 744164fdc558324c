"""The journal of a session: a JSON page, or SSE resumable from Last-Event-ID."""

from __future__ import annotations

import re
from typing import Annotated, Any

import redis
from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response

from api.auth import principal_of
from api.live import LiveFeed
from api.problems import Problem, unavailable
from api.schemas import ID_REGEX
from api.services import Services, services_of
from api.sse import PAGE, EventStreamResponse, SessionStream

router = APIRouter()

SessionId = Annotated[str, Path(pattern=ID_REGEX)]

_CURSOR = re.compile(r"^[0-9]{1,18}$")


def _cursor(last_event_id: str | None, after: str | None) -> int:
    """Last-Event-ID wins over ?after= (a reconnecting EventSource resends the URL)."""
    raw = last_event_id if last_event_id is not None else after
    if raw is None:
        return 0
    raw = raw.strip()
    if not _CURSOR.fullmatch(raw):
        raise Problem(400, "invalid_cursor", "the cursor must be a non-negative integer seq")
    return int(raw)


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "").lower()
    return "application/json" in accept and "text/event-stream" not in accept


def _page(services: Services, tenant: str, sid: str, cursor: int, limit: int) -> dict[str, Any]:
    events, head = services.store.list_events(tenant, sid, after=cursor, limit=limit)
    return {
        "events": [e.to_json() for e in events],
        "head_seq": head,
        "next_after": events[-1].seq if events else cursor,
    }


@router.get("/v1/sessions/{sid}/events")
async def get_events(
    request: Request,
    sid: SessionId,
    after: Annotated[str | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> Response:
    cursor = _cursor(last_event_id, after)
    services, tenant = services_of(request), principal_of(request).tenant
    if _wants_json(request):
        body = await services.run(_page, services, tenant, sid, cursor, limit)
        return JSONResponse(body)
    # subscribe first, then read: nothing committed after this read can be missed
    try:
        feed = await LiveFeed.open(services.aredis, tenant, sid)
    except (redis.RedisError, TimeoutError) as exc:
        raise unavailable("the live channel is unavailable") from exc
    try:
        first, _ = await services.run(
            services.store.list_events, tenant, sid, after=cursor, limit=PAGE
        )
    except BaseException:
        await feed.close()
        raise
    stream = SessionStream(
        store=services.store,
        feed=feed,
        tenant_id=tenant,
        session_id=sid,
        cursor=cursor,
        first=first,
        heartbeat=services.settings.sse_heartbeat,
        run=services.run,
    )
    return EventStreamResponse(stream)
