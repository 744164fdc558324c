"""Following a session: its committed events from the journal, in seq order, each
once; the live channel only wakes the reader (and brings live model text). The
JSON page of the journal and the first page of an SSE stream (api/http/events.py)
are read here too; the stream itself is api/sse.py."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import redis

from turnkeep.api.auth import Principal
from turnkeep.api.live import Lagging, LiveFeed
from turnkeep.api.resources import ApiResources
from turnkeep.api.service.access import visible
from turnkeep.runtime.messages import public_event_data
from turnkeep.store.errors import ResyncRequired
from turnkeep.store.records import EventPageRecord, EventRecord


@dataclass(frozen=True)
class Delta:
    """Live model text of a step, never persisted (a stream may miss some)."""

    turn_id: str
    step: int
    text: str


async def follow(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    *,
    after: int = 0,
    until: Callable[[EventRecord], bool] | None = None,
    deltas: bool = False,
    poll: float = 1.0,
) -> AsyncGenerator[EventRecord | Delta, None]:
    """Every committed event of the session with seq > ``after``, in seq order, each
    once, read from the journal; the live channel only wakes the reader (and, with
    ``deltas``, brings live model text between commits). Without Redis the journal is
    re-read every ``poll`` seconds. Ends after an event ``until`` accepts; else runs
    until the caller stops iterating. Raises what ``Store.reads.list_events`` raises
    (``NotFound``, ``CursorAhead``, ``ResyncRequired``)."""
    await services.run(visible, services, principal, session_id)
    try:
        feed: LiveFeed | None = await LiveFeed.open(services.aredis, principal.tenant, session_id)
    except (redis.RedisError, TimeoutError):
        feed = None
    cursor = after
    try:
        while True:
            events, _ = await services.run(
                services.store.reads.list_events, principal.tenant, session_id, after=cursor
            )
            for event in events:
                cursor = event.seq
                yield event
                if until is not None and until(event):
                    return
            if len(events) == FOLLOW_PAGE:
                continue  # more to read before waiting
            if feed is None:
                await anyio.sleep(poll)
                continue
            try:
                payload = await feed.next(poll)
            except (redis.RedisError, Lagging):
                await feed.close()
                feed = None
                continue
            if payload is not None and deltas and payload.get("kind") == "delta":
                yield Delta(str(payload["turn_id"]), int(payload["step"]), str(payload["text"]))
    finally:
        if feed is not None:
            await feed.close()


#: events one journal read of ``follow`` takes (Store.reads.list_events's default page)
FOLLOW_PAGE = 500


# -- pages of the journal --------------------------------------------------------------


def read_from(
    services: ApiResources, tenant: str, sid: str, cursor: int | None, limit: int
) -> tuple[EventPageRecord, int]:
    """The first page after ``cursor`` and the cursor it was read from: with none, from
    the start of the retained journal. ``ResyncRequired`` for a cursor before it."""
    try:
        return event_page(services, tenant, sid, after=cursor or 0, limit=limit), cursor or 0
    except ResyncRequired as exc:
        if cursor is not None:
            raise
        start = exc.earliest - 1
        return event_page(services, tenant, sid, after=start, limit=limit), start


def event_page(
    services: ApiResources, tenant: str, sid: str, *, after: int, limit: int
) -> EventPageRecord:
    """The journal's page after ``after`` (a live stream's next: api/sse.py).
    ``ResyncRequired`` for a seq before the retained journal."""
    return services.store.reads.event_page(tenant, sid, after=after, limit=limit)


def page(
    services: ApiResources, tenant: str, sid: str, cursor: int | None, limit: int
) -> dict[str, Any]:
    """A JSON page of the journal after ``cursor`` (as ``read_from``)."""
    found, cursor = read_from(services, tenant, sid, cursor, limit)
    return {
        # provider metadata goes back to its provider only, never to a reader
        "events": [
            {**(j := e.to_json()), "data": public_event_data(j["data"])} for e in found.events
        ],
        "head_seq": found.head_seq,
        "earliest_seq": found.earliest_seq,
        "next_after": found.events[-1].seq if found.events else cursor,
    }
