"""Long poll of one turn: answer when it is terminal, when it waits for someone (parked
on an open input request), or when the wait is over.

Subscribes to the session's channel first, then reads the turn, so a terminal
commit published after that read wakes the poll at once. A publish can be lost, so
the turn is also re-read from Postgres at least every second. Without Redis the
poll still works, on the one-second re-read alone.
"""

from __future__ import annotations

import logging
import time

import anyio
import redis

from api.live import Lagging, LiveFeed
from api.services import Services
from runtime.states import TERMINAL_EVENTS, EventType
from store.records import TurnRecord

log = logging.getLogger(__name__)

REREAD = 1.0
#: events after which the poll re-reads the turn at once: it may have ended or parked
_WAKE_TYPES = frozenset(t.value for t in TERMINAL_EVENTS.values()) | {
    EventType.INPUT_REQUESTED.value
}


async def _subscribe(services: Services, tenant_id: str, session_id: str) -> LiveFeed | None:
    try:
        return await LiveFeed.open(services.aredis, tenant_id, session_id)
    except (redis.RedisError, TimeoutError) as exc:
        log.warning("long poll without live channel: %s", type(exc).__name__)
        return None


async def wait_for_turn(
    services: Services,
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
        return store.get_turn(tenant_id, session_id, turn_id)

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
