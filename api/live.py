"""A subscription to one session's live channel (store/keys.py, store/channel.py).

The channel is a hint, never the truth: a publish can be lost, so every reader also
re-reads the journal in Postgres. ``open`` returns only once Redis has confirmed the
subscription, so a reader that subscribes and then reads Postgres can never miss an
event committed after that read.

The backlog is bounded. Once subscribed, a pump task reads the channel into this
feed's buffer whatever the reader is doing, so a reader that is slow (an SSE client
reading slower than its session writes: the stream waits on its socket) never makes
Redis hold its messages in the connection's output buffer, and this process holds at
most ``backlog`` of them (events and deltas alike). One more and the reader is
*lagging*: the buffer is dropped, the channel given up, and ``next`` raises
``Lagging``; the reader ends or falls back to Postgres, where every committed event
is (api/sse.py ends the stream with ``stream.resume``, and the client resumes from
its last delivered seq).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from contextlib import suppress
from typing import Any

import anyio
import redis.asyncio as aredis

from turnkeep.runtime.signals import Signal
from turnkeep.store.channel import decode
from turnkeep.store.keys import events_channel

SUBSCRIBE_TIMEOUT = 5.0
#: payloads a feed buffers at most for its reader (``TURNKEEP_SSE_BACKLOG`` for SSE)
BACKLOG = 1000
#: seconds one read of the pump waits before it reads again
PUMP_WAIT = 5.0


class Lagging(Signal):
    """Raised by ``LiveFeed.next`` once its reader fell more than ``backlog`` payloads
    behind the channel: what it missed is in the journal, not in this feed (a signal:
    the stream resumes from the journal, api/sse.py)."""

    def __init__(self, backlog: int) -> None:
        super().__init__(f"the reader fell more than {backlog} live messages behind")
        self.backlog = backlog


class LiveFeed:
    """Decoded channel messages, one at a time (a batch unpacked, store/channel.py):
    ``{"kind": "event", "event": {...}}``, a delta, or ``deleted``."""

    def __init__(self, pubsub: aredis.client.PubSub, *, backlog: int = BACKLOG) -> None:
        self._pubsub = pubsub
        self._closed = False
        self.backlog = backlog
        self._buffer: deque[dict[str, Any]] = deque()
        #: set whenever the pump has something for ``next``: a payload, lag or a failure
        self._ready = asyncio.Event()
        self._lagging = False
        self._failure: Exception | None = None
        self._pump_task: asyncio.Task[None] | None = None

    @classmethod
    async def open(
        cls, client: aredis.Redis, tenant_id: str, session_id: str, *, backlog: int = BACKLOG
    ) -> LiveFeed:
        """Subscribe, wait for Redis's confirmation, start the pump. Raises redis errors."""
        pubsub = client.pubsub()
        feed = cls(pubsub, backlog=backlog)
        try:
            await pubsub.subscribe(events_channel(tenant_id, session_id))
            deadline = time.monotonic() + SUBSCRIBE_TIMEOUT
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("no subscription confirmation from redis")
                msg = await pubsub.get_message(timeout=remaining)
                if msg is not None and msg.get("type") == "subscribe":
                    break
        except BaseException:
            await feed.close()
            raise
        feed._pump_task = asyncio.create_task(feed._pump())
        return feed

    async def _pump(self) -> None:
        """Read the channel into the buffer until lagging, a failure, or ``close``."""
        try:
            while True:
                msg = await self._pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=PUMP_WAIT
                )
                if msg is None or msg.get("type") != "message":
                    continue
                try:
                    payloads = decode(msg["data"])
                except ValueError:
                    continue
                if len(self._buffer) + len(payloads) > self.backlog:
                    self._lagging = True
                    self._buffer.clear()
                    # stop Redis sending more to a reader that will not take them
                    with suppress(Exception):
                        await self._pubsub.unsubscribe()
                    return
                self._buffer.extend(payloads)  # a batch's messages, in its order
                self._ready.set()
        except Exception as exc:
            self._failure = exc
        finally:
            self._ready.set()

    @property
    def lagging(self) -> bool:
        return self._lagging

    async def next(self, timeout: float) -> dict[str, Any] | None:
        """The next payload, or None when ``timeout`` seconds passed without one.

        ``Lagging`` once the reader fell more than ``backlog`` payloads behind; the
        pump's redis error once the buffered payloads are taken.
        """
        if not self._buffer and not self._lagging and self._failure is None:
            self._ready.clear()
            with anyio.move_on_after(max(0.0, timeout)):
                await self._ready.wait()
        if self._lagging:
            raise Lagging(self.backlog)
        if self._buffer:
            return self._buffer.popleft()
        if self._failure is not None:
            raise self._failure
        return None

    async def close(self) -> None:
        """Stop the pump, unsubscribe and give the connection back; safe in a cancelled
        scope, idempotent."""
        if self._closed:
            return
        self._closed = True
        # the connection may already be gone: then there is nothing to give back
        with anyio.CancelScope(shield=True), anyio.move_on_after(2), suppress(Exception):
            task = self._pump_task
            if task is not None and not task.done():
                task.cancel()
                with suppress(asyncio.CancelledError):
                    await task
            await self._pubsub.aclose()  # type: ignore[no-untyped-call]
