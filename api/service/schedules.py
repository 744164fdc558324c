"""Schedules: turns admitted on a cron expression or an interval (runtime/schedules.py;
store/schedules.py keeps them, recovery/schedules.py fires them; docs/flow-control.md).

A schedule is its tenant's: every read and write is scoped by the token's tenant, and
another tenant's schedule is missing (404). Creating one is idempotent by its id (the
body's ``schedule_id``, else the Idempotency-Key, else a new one): the same spec again
answers the stored schedule, another spec under the id is 409."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from turnkeep.api.auth import Principal
from turnkeep.api.errors import RequestInvalid
from turnkeep.api.resources import ApiResources
from turnkeep.api.service import ids
from turnkeep.api.service.access import may_write
from turnkeep.api.service.requests import ID_REGEX, InputMessage
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.schedules import Missed, ScheduleInvalid, When
from turnkeep.store.schedules import ScheduleRecord

#: a schedule id goes into its ticks' turn and session ids (runtime/schedules.py)
SCHEDULE_ID_REGEX = r"^[A-Za-z0-9_-]{1,96}$"


class ScheduleRequest(BaseModel):
    """``POST /v1/schedules``: exactly one of ``cron`` and ``every_seconds``."""

    model_config = ConfigDict(extra="forbid")

    schedule_id: str | None = Field(default=None, pattern=SCHEDULE_ID_REGEX)
    agent: str = Field(min_length=1, max_length=128)
    input: Annotated[list[InputMessage], Field(min_length=1, max_length=100)]
    #: a five-field cron expression (croniter's), in ``timezone``
    cron: str | None = Field(default=None, min_length=1, max_length=200)
    #: or a fixed interval from the schedule's creation
    every_seconds: float | None = Field(default=None, allow_inf_nan=False)
    #: or once, at this time (with its offset)
    at: datetime | None = None
    timezone: str = Field(default="UTC", min_length=1, max_length=64)
    #: every tick's turn in this session; absent: a new session per tick
    session_id: str | None = Field(default=None, pattern=ID_REGEX)
    missed: Missed = Missed.RUN_ONCE


def schedule_json(s: ScheduleRecord) -> dict[str, Any]:
    at = s.when.at
    return {
        "schedule_id": s.schedule_id,
        "agent": s.agent_name,
        "cron": s.cron,
        "every_seconds": s.every_seconds,
        "at": None if at is None else at.isoformat(),
        "timezone": s.timezone,
        "input": list(s.input.get("messages") or []),
        "session_id": s.session_id,
        "missed": s.missed,
        "paused": s.paused,
        "paused_reason": s.paused_reason,
        "next_at": None if s.next_at is None else s.next_at.isoformat(),
        "last_tick": None if s.last_tick is None else s.last_tick.isoformat(),
        "fired": s.fired,
        "skipped": s.skipped,
        "created_by": s.created_by,
        "created_at": s.created_at.isoformat(),
        "origin": s.origin,
    }


def create(
    services: ApiResources, principal: Principal, key: str | None, body: ScheduleRequest
) -> tuple[ScheduleRecord, bool]:
    """(the schedule, whether this request created it)."""
    may_write(principal)
    schedule_id = ids.new_id(key, body.schedule_id, "body.schedule_id")
    if len(schedule_id) > 96 or "." in schedule_id:
        raise RequestInvalid("body.schedule_id", "at most 96 of [A-Za-z0-9_-]")
    agent = services.registry.get(body.agent)  # UnknownAgent: 422
    when = When(
        cron=body.cron, every_seconds=body.every_seconds, timezone=body.timezone, at=body.at
    )
    try:
        when.check()
    except ScheduleInvalid as exc:
        raise RequestInvalid(exc.where, exc.message) from None
    messages = [m.model_dump() for m in body.input]
    spec = {
        "agent": agent.name,
        "cron": body.cron,
        "every_seconds": body.every_seconds,
        "timezone": body.timezone,
        # only when given: the hashes of the schedules made before one-shots stay as they were
        **({} if body.at is None else {"at": when.first(datetime.now(UTC)).isoformat()}),
        "messages": messages,
        "session_id": body.session_id,
        "missed": body.missed.value,
    }
    now = datetime.now(UTC)
    return services.store.schedules.create_schedule(
        tenant_id=principal.tenant,
        schedule_id=schedule_id,
        agent_name=agent.name,
        cron=body.cron,
        every_seconds=body.every_seconds,
        timezone=body.timezone,
        input={"messages": messages},
        session_id=body.session_id,
        missed=body.missed.value,
        next_at=when.first(now),
        spec_hash=sha256_hex(spec),
        created_by=principal.subject,
        created_at=now,
    )


def pause(
    services: ApiResources, principal: Principal, sid: str, *, paused: bool
) -> ScheduleRecord:
    """Pause or resume; a resumed schedule waits for its next tick after now."""
    may_write(principal)
    s = services.store.schedules.get_schedule(principal.tenant, sid)
    when = s.when
    # a one-shot keeps its time (it fires on the next pass should it have passed)
    resumed = s.next_at if when.once else when.next_after(datetime.now(UTC), anchor=s.created_at)
    next_at = None if paused else resumed
    return services.store.schedules.pause_schedule(
        principal.tenant, sid, paused=paused, next_at=next_at
    )


def delete(services: ApiResources, principal: Principal, sid: str) -> None:
    may_write(principal)
    services.store.schedules.delete_schedule(principal.tenant, sid)


def listed(
    services: ApiResources, principal: Principal, *, after: str, limit: int
) -> list[ScheduleRecord]:
    """The tenant's schedules by id, at most ``limit`` after ``after``."""
    return services.store.schedules.list_schedules(principal.tenant, after=after, limit=limit)


def get(services: ApiResources, principal: Principal, sid: str) -> ScheduleRecord:
    """The tenant's schedule ``sid`` (``NotFound``: another tenant's, or none)."""
    return services.store.schedules.get_schedule(principal.tenant, sid)
