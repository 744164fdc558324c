"""Reads: a turn, its timeline, a session, a session's turns and the transcript, and
the long poll of one turn (the sessions' listing: api/service/search.py). Each checks
who may see the session first (``access.visible``), which answers a deleted session 410
(docs/erasure.md); the long poll checks again when it answers, so a session deleted
while it waited is 410 too.

The long poll (``wait``) answers when the turn is terminal, when it waits for
someone (parked on an open input request), or when the wait is over. It subscribes
to the session's channel first, then reads the turn, so a terminal commit published
after that read wakes the poll at once. A publish can be lost, so the turn is also
re-read from Postgres at least every second. Without Redis the poll still works, on
the one-second re-read alone.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

import anyio
import redis

from turnkeep.api.auth import Principal
from turnkeep.api.live import Lagging, LiveFeed
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import pages
from turnkeep.api.service.access import visible
from turnkeep.api.service.timeline import timeline
from turnkeep.api.service.transcript import transcript
from turnkeep.api.service.wire import session_json, turn_json
from turnkeep.runtime.numerals import ascii_int
from turnkeep.runtime.states import TERMINAL_EVENTS, EventType
from turnkeep.store.errors import NotFound, ResyncRequired
from turnkeep.store.records import EventPageRecord, TurnRecord

log = logging.getLogger(__name__)

REREAD = 1.0
#: events after which the poll re-reads the turn at once: it may have ended or parked
_WAKE_TYPES = frozenset(t.value for t in TERMINAL_EVENTS.values()) | {
    EventType.INPUT_REQUESTED.value
}


async def _subscribe(services: ApiResources, tenant_id: str, session_id: str) -> LiveFeed | None:
    try:
        return await LiveFeed.open(services.aredis, tenant_id, session_id)
    except (redis.RedisError, TimeoutError) as exc:
        log.warning("long poll without live channel: %s", type(exc).__name__)
        return None


async def wait_for_turn(
    services: ApiResources,
    tenant_id: str,
    session_id: str,
    turn_id: str,
    wait: float,
    *,
    until_input: bool = False,
) -> TurnRecord:
    """The turn once terminal (or, ``until_input``, parked on an open input request),
    or as it is when ``wait`` seconds have passed."""
    deadline = time.monotonic() + wait
    store = services.store

    def read() -> TurnRecord:
        return store.reads.get_turn(tenant_id, session_id, turn_id)

    feed = await _subscribe(services, tenant_id, session_id)
    try:
        turn = await services.run(read)
        while not (turn.state.terminal or (until_input and turn.awaiting_input)):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            next_read = time.monotonic() + min(REREAD, remaining)
            while feed is not None and time.monotonic() < next_read:
                try:
                    payload = await feed.next(next_read - time.monotonic())
                except (redis.RedisError, Lagging):
                    # on the one-second re-read alone from here
                    await feed.close()
                    feed = None
                    break
                event = (payload or {}).get("event") or {}
                if event.get("turn_id") == turn_id and event.get("type") in _WAKE_TYPES:
                    break
            if feed is None:
                # no live channel: sleep until the next re-read
                await anyio.sleep(max(0.0, next_read - time.monotonic()))
            turn = await services.run(read)
        return turn
    finally:
        if feed is not None:
            await feed.close()


# -- a turn ---------------------------------------------------------------------------


def read(services: ApiResources, principal: Principal, session_id: str, tid: str) -> TurnRecord:
    visible(services, principal, session_id, missing="turn not found")
    try:
        return services.store.reads.get_turn(principal.tenant, session_id, tid)
    except NotFound:  # its session erased since the check: 410, as for a later read
        raise services.store.reads.missing(principal.tenant, session_id, "turn not found") from None


def turns_of(services: ApiResources, principal: Principal, session_id: str) -> list[TurnRecord]:
    """Every turn of the session in admission order; none for a session the principal
    may not see, as for a missing one (A2A's task listing)."""
    try:
        visible(services, principal, session_id)
    except NotFound:
        return []
    return services.store.reads.list_turns(principal.tenant, session_id)


async def wait(
    services: ApiResources,
    principal: Principal,
    session_id: str,
    tid: str,
    seconds: float,
    *,
    until_input: bool = False,
) -> TurnRecord:
    """The turn once terminal (``until_input``: or waiting for someone's answer), or as
    it is after ``seconds``."""
    check = functools.partial(visible, services, principal, session_id, missing="turn not found")
    await services.run(check)
    try:
        turn = await wait_for_turn(
            services, principal.tenant, session_id, tid, seconds, until_input=until_input
        )
    except NotFound:
        await services.run(check)  # erased while it waited: 410
        raise
    # deleted while it waited (its turns were cancelled by the tombstone): 410, never
    # what the session held
    await services.run(check)
    return turn


def timeline_of(
    services: ApiResources, principal: Principal, session_id: str, tid: str
) -> dict[str, Any]:
    """The turn's timeline (timeline.py), read off its journal events."""
    turn = read(services, principal, session_id, tid)
    events = services.store.reads.turn_events(principal.tenant, session_id, tid)
    return timeline(turn, events)


# -- a session ------------------------------------------------------------------------


def turns_page(
    services: ApiResources, principal: Principal, sid: str, before: str | None, limit: int
) -> dict[str, Any]:
    """A page of the session's turns, newest first (the cursor is a turn's ordinal)."""
    ordinal = None if before is None else ascii_int(before)
    if before is not None and ordinal is None:
        raise pages.bad_cursor()
    visible(services, principal, sid)
    turns = services.store.reads.turn_page(principal.tenant, sid, limit=limit, before=ordinal)
    return {
        "turns": [turn_json(t) for t in turns],
        "next": str(turns[-1].ordinal) if len(turns) == limit else None,
    }


def session(services: ApiResources, principal: Principal, sid: str) -> dict[str, Any]:
    visible(services, principal, sid)
    found = services.store.reads.get_session(principal.tenant, sid)
    active = services.store.reads.lane_head(principal.tenant, sid)
    return session_json(found, active)


def messages(
    services: ApiResources, principal: Principal, sid: str, after: int | None, limit: int
) -> dict[str, Any]:
    """A page of the transcript (transcript.py); without a cursor, from the earliest
    retained event on."""
    visible(services, principal, sid)
    store, tenant = services.store, principal.tenant
    try:
        page: EventPageRecord = store.reads.conversation_page(
            tenant, sid, after=after or 0, limit=limit
        )
    except ResyncRequired as exc:
        if after is not None:
            raise
        page = store.reads.conversation_page(tenant, sid, after=exc.earliest - 1, limit=limit)
    events = page.events
    return {
        "messages": transcript(events),
        "next": events[-1].seq if len(events) == limit else None,
        "head_seq": page.head_seq,
        "earliest_seq": page.earliest_seq,
    }
