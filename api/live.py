"""A subscription to one session's live channel (store/keys.py, store/channel.py).

The channel is a hint, never the truth: a publish can be lost, so every reader also
re-reads the journal in Postgres. ``open`` returns only once Redis has confirmed the
subscription, so a reader that subscribes and then reads Postgres can never miss an
event committed after that read.
"""

from __future__ import annotations

import time
from contextlib import suppress
from typing import Any

import anyio
import redis.asyncio as aredis

from store.channel import decode
from store.keys import events_channel

SUBSCRIBE_TIMEOUT = 5.0


class LiveFeed:
    """Decoded channel payloads: ``{"kind": "event", "event": {...}}`` or a delta."""

    def __init__(self, pubsub: aredis.client.PubSub) -> None:
        self._pubsub = pubsub
        self._closed = False

    @classmethod
    async def open(cls, client: aredis.Redis, tenant_id: str, session_id: str) -> LiveFeed:
        """Subscribe and wait for Redis's confirmation. Raises redis errors."""
        pubsub = client.pubsub()
        feed = cls(pubsub)
        try:
            await pubsub.subscribe(events_channel(tenant_id, session_id))
            deadline = time.monotonic() + SUBSCRIBE_TIMEOUT
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("no subscription confirmation from redis")
                msg = await pubsub.get_message(timeout=remaining)
                if msg is not None and msg.get("type") == "subscribe":
                    return feed
        except BaseException:
            await feed.close()
            raise

    async def next(self, timeout: float) -> dict[str, Any] | None:
        """The next payload, or None when ``timeout`` seconds passed without one."""
        msg = await self._pubsub.get_message(
            ignore_subscribe_messages=True, timeout=max(0.0, timeout)
        )
        if msg is None or msg.get("type") != "message":
            return None
        try:
            return decode(msg["data"])
        except ValueError:
            return None

    async def close(self) -> None:
        """Unsubscribe and give the connection back; safe in a cancelled scope, idempotent."""
        if self._closed:
            return
        self._closed = True
        # the connection may already be gone: then there is nothing to give back
        with anyio.CancelScope(shield=True), anyio.move_on_after(2), suppress(Exception):
            await self._pubsub.aclose()  # type: ignore[no-untyped-call]
