"""The event stream of one session: replay from the journal, then live, gap-free.

Order of operations, and why there is never a gap nor a duplicate:

1. subscribe to the session's channel and wait for Redis to confirm (api/live.py);
2. replay committed events with ``seq > cursor`` from Postgres, page by page, until a
   short page: everything committed before the subscription is now sent;
3. go live. Every event sent moves ``last``. A live event with ``seq <= last`` is a
   duplicate and skipped; one with ``seq > last + 1`` means publishes were lost (or are
   late): the gap is filled from Postgres first. A heartbeat also re-reads Postgres,
   so a lost final publish is delivered within one heartbeat.

Committed events are framed ``id: <seq>`` / ``event: <type>`` / ``data: <json>``.
Model text deltas are speculative: ``event: model.delta`` with no id, never numbered.

The journal keeps a retention window (docs/retention.md). The earliest retained seq
is stream metadata, sent as the heartbeat is: in the ``Turnkeep-Earliest-Seq``
response header when the stream opens, and in every heartbeat comment
(``: heartbeat earliest_seq=<seq>``). A cursor before it is answered 410
``resync_required`` before the stream opens.

A stream ends on its own, with one final frame that has no id, in two cases:

- ``event: stream.resume``, data ``{"reason": "lagging", "after": <seq>}``: the reader
  fell more than ``TURNKEEP_SSE_BACKLOG`` live messages behind (api/live.py), so
  rather than buffer without limit the stream stops; ``after`` is the last seq it
  delivered. Reconnect with ``Last-Event-ID: <after>`` (an EventSource does so by
  itself): the journal fills the gap, every later event exactly once.
- ``event: stream.resync_required``, data ``{"requested", "earliest", "latest"}``:
  while it caught up, the retention cut passed its position (a reader that lagged
  behind the prune); reconnecting from there would be 410, so resync first.
- ``event: stream.session_deleted``, data ``{"deleted_at", "erased_at"}``: the session
  was deleted or expired (docs/erasure.md); reconnecting is 410 ``session_deleted``.
  The tombstone's commit is told on the channel, so the stream ends at once.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import redis
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from turnkeep.api.live import Lagging, LiveFeed
from turnkeep.runtime.messages import public_event_data
from turnkeep.store.channel import DELETED
from turnkeep.store.errors import ResyncRequired, SessionDeleted, Unavailable
from turnkeep.store.records import EventPageRecord, EventRecord

log = logging.getLogger(__name__)

PAGE = 500
#: the event names of a stream's final frames (see the module docstring): wire names
STREAM_RESUME = "stream.resume"
STREAM_RESYNC = "stream.resync_required"
STREAM_DELETED = "stream.session_deleted"
#: the response header that carries the earliest retained seq when the stream opens
EARLIEST_HEADER = "Turnkeep-Earliest-Seq"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def event_frame(event: dict[str, Any]) -> str:
    # provider metadata goes back to its provider only, never to a reader
    event = {**event, "data": public_event_data(event.get("data") or {})}
    return f"id: {event['seq']}\nevent: {event['type']}\ndata: {_dumps(event)}\n\n"


def delta_frame(payload: dict[str, Any]) -> str:
    data = {k: payload.get(k) for k in ("turn_id", "step", "text")}
    return f"event: model.delta\ndata: {_dumps(data)}\n\n"


def heartbeat_frame(earliest: int) -> str:
    """A comment: keeps proxies from closing an idle stream and says the earliest seq."""
    return f": heartbeat earliest_seq={earliest}\n\n"


def resume_frame(after: int) -> str:
    data = {"reason": "lagging", "after": after}
    return f"event: {STREAM_RESUME}\ndata: {_dumps(data)}\n\n"


def resync_frame(exc: ResyncRequired) -> str:
    data = {"requested": exc.requested, "earliest": exc.earliest, "latest": exc.latest}
    return f"event: {STREAM_RESYNC}\ndata: {_dumps(data)}\n\n"


def deleted_frame(exc: SessionDeleted) -> str:
    data = exc.fields()
    return f"event: {STREAM_DELETED}\ndata: {_dumps(data)}\n\n"


class SessionStream:
    """One client's stream. ``first`` is the page the endpoint already read (after
    subscribing) to check the session and the cursor before answering 200;
    ``earliest`` the earliest retained seq that read saw."""

    def __init__(
        self,
        *,
        read_page: Callable[..., EventPageRecord],
        feed: LiveFeed,
        tenant_id: str,
        session_id: str,
        cursor: int,
        first: list[EventRecord],
        heartbeat: float,
        earliest: int = 1,
        run: Callable[..., Awaitable[Any]] = run_in_threadpool,
    ) -> None:
        #: the journal's page after a seq, blocking (api/service/follow.py ``event_page``)
        self.read_page = read_page
        self.feed = feed
        self.tenant_id = tenant_id
        self.session_id = session_id
        self.last = cursor
        self.first = first
        self.heartbeat = heartbeat
        self.earliest = earliest
        #: how a blocking store read is awaited (the API passes ``ApiResources.run``)
        self.run = run

    async def _page(self) -> list[EventRecord]:
        page: EventPageRecord = await self.run(
            self.read_page,
            self.tenant_id,
            self.session_id,
            after=self.last,
            limit=PAGE,
        )
        self.earliest = page.earliest_seq
        return page.events

    async def _catch_up(self, page: list[EventRecord] | None = None) -> AsyncIterator[str]:
        """Send every committed event after ``last``, reading until a short page."""
        while True:
            if page is None:
                page = await self._page()
            for event in page:
                if event.seq <= self.last:
                    continue
                self.last = event.seq
                yield event_frame(event.to_json())
            if len(page) < PAGE:
                return
            page = None

    async def _on_live(self, payload: dict[str, Any]) -> AsyncIterator[str]:
        kind = payload.get("kind")
        if kind == "delta":
            yield delta_frame(payload)
            return
        if kind == DELETED:
            # the session's tombstone committed: the journal read says so (410)
            async for frame in self._catch_up():
                yield frame
        event = payload.get("event")
        if kind != "event" or not isinstance(event, dict):
            return
        seq = int(event.get("seq", 0))
        if seq <= self.last:
            return  # already sent (replayed, or filled from Postgres)
        if seq == self.last + 1:
            self.last = seq
            yield event_frame(event)
            return
        # publishes were lost or reordered: the journal has everything up to seq
        async for frame in self._catch_up():
            yield frame

    async def frames(self) -> AsyncIterator[str]:
        try:
            async for frame in self._catch_up(self.first):
                yield frame
            next_beat = time.monotonic() + self.heartbeat
            while True:
                payload = await self.feed.next(next_beat - time.monotonic())
                if payload is not None:
                    async for frame in self._on_live(payload):
                        yield frame
                if time.monotonic() >= next_beat:
                    yield heartbeat_frame(self.earliest)
                    async for frame in self._catch_up():
                        yield frame
                    next_beat = time.monotonic() + self.heartbeat
        except Lagging:
            # the reader is too slow for the live channel: it resumes from the journal
            log.info("stream of a lagging reader ended at seq %d", self.last)
            yield resume_frame(self.last)
        except ResyncRequired as exc:
            yield resync_frame(exc)
        except SessionDeleted as exc:
            yield deleted_frame(exc)
        except (redis.RedisError, Unavailable) as exc:
            # the client resumes from its Last-Event-ID; nothing is lost
            log.warning("stream ended early: %s", type(exc).__name__)
        finally:
            await self.feed.close()


class EventStreamResponse(StreamingResponse):
    """A StreamingResponse that always gives its subscription back, and calls
    ``on_close`` (the stream's slot, api/service/bounds.py), however it ends (client
    disconnect cancels the body iterator while it may sit at a yield)."""

    def __init__(
        self, stream: SessionStream, *, on_close: Callable[[], None] | None = None
    ) -> None:
        super().__init__(
            stream.frames(),
            media_type="text/event-stream",
            headers={
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                EARLIEST_HEADER: str(stream.earliest),
            },
        )
        self._feed = stream.feed
        self._on_close = on_close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            try:
                await self._feed.close()
            finally:
                if self._on_close is not None:
                    self._on_close()
