"""``client.schedules``: standing orders to admit turns at times (``/v1/schedules…``,
docs/schedules.md): create, read, list, pause, resume, delete. The calls are built here
without I/O; ``SchedulesApi`` and ``AsyncSchedulesApi`` send them."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from turnkeep.client import calls
from turnkeep.client.calls import ApiCall, AsyncSend, Messages, Send
from turnkeep.schedules import Schedule, SchedulePage

_schedule = calls.reader(Schedule)


def _path(schedule_id: str, tail: str = "") -> str:
    return f"/v1/schedules/{calls.segment(schedule_id)}{tail}"


def body(
    agent: str,
    messages: Messages,
    cron: str | None,
    every_seconds: float | None,
    timezone: str,
    schedule_id: str | None,
    session_id: str | None,
    missed: str,
    at: datetime | None = None,
) -> dict[str, Any]:
    """``POST /v1/schedules``'s body: what is not given is left to the API."""
    made: dict[str, Any] = {
        "agent": agent,
        "input": calls.messages(messages),
        "timezone": timezone,
        "missed": missed,
    }
    optional = {
        "cron": cron,
        "every_seconds": every_seconds,
        "schedule_id": schedule_id,
        "session_id": session_id,
        "at": None if at is None else at.isoformat(),
    }
    made.update({k: v for k, v in optional.items() if v is not None})
    return made


def create(given: Mapping[str, Any], idempotency_key: str | None) -> ApiCall[Schedule]:
    headers = calls.key(idempotency_key or given.get("schedule_id"))
    return ApiCall("POST", "/v1/schedules", _schedule, json=dict(given), headers=headers)


def get(schedule_id: str) -> ApiCall[Schedule]:
    return ApiCall("GET", _path(schedule_id), _schedule)


def listing(limit: int, after: str | None) -> ApiCall[SchedulePage]:
    params = calls.page(limit, after or None)
    return ApiCall("GET", "/v1/schedules", calls.reader(SchedulePage), params=params)


def pause(schedule_id: str, paused: bool) -> ApiCall[Schedule]:
    return ApiCall("POST", _path(schedule_id, "/pause" if paused else "/resume"), _schedule)


def delete(schedule_id: str) -> ApiCall[None]:
    return ApiCall("DELETE", _path(schedule_id), calls.nothing)


class SchedulesApi:
    """``client.schedules`` of the sync client."""

    def __init__(self, send: Send) -> None:
        self._send = send

    def create(
        self,
        agent: str,
        messages: Messages,
        *,
        cron: str | None = None,
        every_seconds: float | None = None,
        timezone: str = "UTC",
        schedule_id: str | None = None,
        session_id: str | None = None,
        missed: str = "run_once",
        idempotency_key: str | None = None,
        at: datetime | None = None,
    ) -> Schedule:
        """The agent's turn with ``messages`` on every tick (a cron expression in
        ``timezone``, every ``every_seconds``, or once ``at`` an aware time); the same id
        and spec again: the same schedule."""
        made = body(
            agent, messages, cron, every_seconds, timezone, schedule_id, session_id, missed, at
        )
        return self._send(create(made, idempotency_key))

    def get(self, schedule_id: str) -> Schedule:
        return self._send(get(schedule_id))

    def list(self, *, limit: int = 50, after: str | None = None) -> SchedulePage:
        """A page of the tenant's schedules, oldest first."""
        return self._send(listing(limit, after))

    def pause(self, schedule_id: str) -> Schedule:
        return self._send(pause(schedule_id, True))

    def resume(self, schedule_id: str) -> Schedule:
        """Resume it from its next tick after now (ticks passed while paused never run)."""
        return self._send(pause(schedule_id, False))

    def delete(self, schedule_id: str) -> None:
        self._send(delete(schedule_id))


class AsyncSchedulesApi:
    """``client.schedules`` of the async client: ``SchedulesApi``'s methods, awaited."""

    def __init__(self, send: AsyncSend) -> None:
        self._send = send

    async def create(
        self,
        agent: str,
        messages: Messages,
        *,
        cron: str | None = None,
        every_seconds: float | None = None,
        timezone: str = "UTC",
        schedule_id: str | None = None,
        session_id: str | None = None,
        missed: str = "run_once",
        idempotency_key: str | None = None,
        at: datetime | None = None,
    ) -> Schedule:
        made = body(
            agent, messages, cron, every_seconds, timezone, schedule_id, session_id, missed, at
        )
        return await self._send(create(made, idempotency_key))

    async def get(self, schedule_id: str) -> Schedule:
        return await self._send(get(schedule_id))

    async def list(self, *, limit: int = 50, after: str | None = None) -> SchedulePage:
        return await self._send(listing(limit, after))

    async def pause(self, schedule_id: str) -> Schedule:
        return await self._send(pause(schedule_id, True))

    async def resume(self, schedule_id: str) -> Schedule:
        return await self._send(pause(schedule_id, False))

    async def delete(self, schedule_id: str) -> None:
        await self._send(delete(schedule_id))
