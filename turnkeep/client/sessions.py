"""``client.sessions``: a tenant's sessions (``/v1/sessions…``): read and list them,
follow their events (SSE, reconnecting from the last seq yielded), fork one, delete one
(docs/erasure.md). The calls are built here without I/O; ``SessionsApi`` sends them
through the sync client, ``AsyncSessionsApi`` through the async one."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import anyio
import httpx

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Config, Send
from turnkeep.client.sse import RETRYABLE
from turnkeep.erasure import Tombstone
from turnkeep.models import Delta, Event, EventPage, Fork, Session, SessionPage, StreamToken

#: seconds between two DELETEs of ``wait_erased`` (each answers the tombstone as it is)
ERASED_POLL = 0.5


def _path(session_id: str, tail: str = "") -> str:
    return f"/v1/sessions/{session_id}{tail}"


def get(session_id: str) -> ApiCall[Session]:
    return ApiCall("GET", _path(session_id), calls.reader(Session))


def listing(limit: int, after: str | None) -> ApiCall[SessionPage]:
    params = calls.page(limit, after)
    return ApiCall("GET", "/v1/sessions", calls.reader(SessionPage), params=params)


def events_path(session_id: str) -> str:
    return _path(session_id, "/events")


def event_page(session_id: str, after: int, limit: int) -> ApiCall[EventPage]:
    return ApiCall(
        "GET",
        events_path(session_id),
        calls.reader(EventPage),
        params={"after": after, "limit": limit},
        headers={"Accept": "application/json"},
    )


def stream_token(session_id: str) -> ApiCall[StreamToken]:
    return ApiCall("POST", _path(session_id, "/stream-tokens"), calls.reader(StreamToken))


def fork(
    session_id: str, at_seq: int, new_session_id: str | None, idempotency_key: str | None
) -> ApiCall[Fork]:
    body: dict[str, Any] = {"at_seq": at_seq}
    if new_session_id is not None:
        body["session_id"] = new_session_id
    headers = calls.key(idempotency_key or new_session_id)
    return ApiCall(
        "POST", _path(session_id, "/fork"), calls.reader(Fork), json=body, headers=headers
    )


def delete(session_id: str) -> ApiCall[Tombstone]:
    """``DELETE /v1/sessions/{sid}``: 202 and the tombstone (its erasure under way), or
    200 once it is erased; a DELETE again answers the same tombstone."""
    return ApiCall("DELETE", _path(session_id), calls.reader(Tombstone))


class SessionsApi:
    """``client.sessions`` of the sync client (``http`` follows the event streams)."""

    def __init__(self, send: Send, config: Config, http: httpx.Client) -> None:
        self._send = send
        self._config = config
        self._http = http

    def get(self, session_id: str) -> Session:
        return self._send(get(session_id))

    def event_page(self, session_id: str, after: int = 0, limit: int = 500) -> EventPage:
        """At most ``limit`` committed events after ``after``, as one JSON page."""
        return self._send(event_page(session_id, after, limit))

    def events(self, session_id: str, after: int = 0) -> Iterator[Event]:
        """The session's committed events with ``seq > after``, live, without end;
        reconnects from the last seq yielded whenever the stream drops."""
        for item in self.stream(session_id, after):
            if isinstance(item, Event):
                yield item

    def stream(
        self, session_id: str, after: int = 0, *, deltas: bool = False
    ) -> Iterator[Event | Delta]:
        """As ``events``, with the live model text (``Delta``) in between when
        ``deltas``: speculative, lost on a reconnect, superseded by the committed
        ``model.completed``."""
        cursor = self._config.cursor(after)
        path = events_path(session_id)
        while True:
            why: object = "the stream ended"
            try:
                with self._http.stream(
                    "GET", path, headers=cursor.headers(), timeout=self._config.stream_timeouts()
                ) as response:
                    if response.status_code >= 400:
                        response.read()
                    cursor.opened(response)
                    for line in response.iter_lines():
                        if (item := cursor.line(line, deltas)) is not None:
                            yield item
            except RETRYABLE as exc:
                why = exc
            time.sleep(cursor.dropped(why))

    def stream_token(self, session_id: str) -> StreamToken:
        """A short-lived token to follow this session's events from a browser
        (``?stream_token=``); 503 ``stream_tokens_not_configured`` without a secret."""
        return self._send(stream_token(session_id))

    def fork(
        self,
        session_id: str,
        at_seq: int,
        *,
        new_session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Fork:
        """A new session whose history is this one's up to ``at_seq`` (the source is
        untouched); the same fork again answers the same new session."""
        return self._send(fork(session_id, at_seq, new_session_id, idempotency_key))

    def delete(self, session_id: str) -> Tombstone:
        """Delete the session: everything it held is erased, its tombstone stays; from
        now on every read of it raises ``ApiError`` 410 ``session_deleted``.
        Idempotent: the tombstone, with ``erased_at`` once the erasure finished."""
        return self._send(delete(session_id))

    def wait_erased(self, session_id: str, timeout: float) -> Tombstone:
        """The tombstone once its erasure finished (``erased_at``), or as it is after
        ``timeout`` seconds."""
        until = time.monotonic() + timeout
        while True:
            gone = self.delete(session_id)
            if gone.erased_at is not None or time.monotonic() >= until:
                return gone
            time.sleep(min(ERASED_POLL, max(0.0, until - time.monotonic())))

    # last: past this line ``list`` in an annotation would name the method
    def list(self, *, limit: int = 50, after: str | None = None) -> SessionPage:
        """A page of the tenant's sessions, newest first (``after``: the last ``next``);
        ``client.search.sessions`` filters them."""
        return self._send(listing(limit, after))


class AsyncSessionsApi:
    """``client.sessions`` of the async client: ``SessionsApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend, config: Config, http: httpx.AsyncClient) -> None:
        self._send = send
        self._config = config
        self._http = http

    async def get(self, session_id: str) -> Session:
        return await self._send(get(session_id))

    async def event_page(self, session_id: str, after: int = 0, limit: int = 500) -> EventPage:
        return await self._send(event_page(session_id, after, limit))

    async def events(self, session_id: str, after: int = 0) -> AsyncGenerator[Event, None]:
        async for item in self.stream(session_id, after):
            if isinstance(item, Event):
                yield item

    async def stream(
        self, session_id: str, after: int = 0, *, deltas: bool = False
    ) -> AsyncGenerator[Event | Delta, None]:
        cursor = self._config.cursor(after)
        path = events_path(session_id)
        while True:
            why: object = "the stream ended"
            try:
                async with self._http.stream(
                    "GET", path, headers=cursor.headers(), timeout=self._config.stream_timeouts()
                ) as response:
                    if response.status_code >= 400:
                        await response.aread()
                    cursor.opened(response)
                    async for line in response.aiter_lines():
                        if (item := cursor.line(line, deltas)) is not None:
                            yield item
            except RETRYABLE as exc:
                why = exc
            await anyio.sleep(cursor.dropped(why))

    async def stream_token(self, session_id: str) -> StreamToken:
        return await self._send(stream_token(session_id))

    async def fork(
        self,
        session_id: str,
        at_seq: int,
        *,
        new_session_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> Fork:
        return await self._send(fork(session_id, at_seq, new_session_id, idempotency_key))

    async def delete(self, session_id: str) -> Tombstone:
        return await self._send(delete(session_id))

    async def wait_erased(self, session_id: str, timeout: float) -> Tombstone:
        until = time.monotonic() + timeout
        while True:
            gone = await self.delete(session_id)
            if gone.erased_at is not None or time.monotonic() >= until:
                return gone
            await anyio.sleep(min(ERASED_POLL, max(0.0, until - time.monotonic())))

    async def list(self, *, limit: int = 50, after: str | None = None) -> SessionPage:
        return await self._send(listing(limit, after))
