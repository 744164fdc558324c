"""Schedules in the store (the statements of sql/schedules.sql): their rows, and the
beat's pass over the due ones (recovery/schedules.py fires them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from turnkeep.runtime.schedules import When
from turnkeep.store.db import Row
from turnkeep.store.errors import IdempotencyConflict, NotFound, SessionDeleted
from turnkeep.store.rows import first, jsonb
from turnkeep.store.statements import Statements, tenant_of


@dataclass(frozen=True)
class ScheduleRecord:
    tenant_id: str
    schedule_id: str
    agent_name: str
    cron: str | None
    every_seconds: float | None
    timezone: str
    input: dict[str, Any]
    session_id: str | None
    missed: str
    paused: bool
    #: the tick it waits for; None: a one-shot that fired
    next_at: datetime | None
    last_tick: datetime | None
    fired: int
    spec_hash: str
    created_by: str
    created_at: datetime
    updated_at: datetime
    #: the turn and step whose tool call asked for it (a follow-up); None: the API's
    origin: dict[str, Any] | None = None
    #: ticks passed over: more than the grace late, or their agent or session gone
    skipped: int = 0
    #: the refusal's code when its tick paused it (recovery/schedules.py); None otherwise
    paused_reason: str | None = None

    @property
    def when(self) -> When:
        """Its timing (a one-shot's time is its tick, ``next_at``, then ``last_tick``)."""
        once = self.cron is None and self.every_seconds is None
        at = (self.next_at or self.last_tick) if once else None
        return When(cron=self.cron, every_seconds=self.every_seconds, timezone=self.timezone, at=at)


def schedule_record(row: Row) -> ScheduleRecord:
    return ScheduleRecord(**{k: row[k] for k in ScheduleRecord.__dataclass_fields__})


class Schedules(Statements):
    """``/v1/schedules`` and the beat's pass."""

    def create_schedule(self, **spec: Any) -> tuple[ScheduleRecord, bool]:
        """Create it, idempotent by its id: (the schedule, whether this call created it).
        The same id with another spec (``spec_hash``): ``IdempotencyConflict``. A
        follow-up (``origin`` set) of a session deleted or erased: ``SessionDeleted``,
        nothing written (a stale worker's tool call, after the tombstone)."""
        origin = spec.get("origin")
        params = {
            **spec,
            "input": jsonb(dict(spec["input"])),
            "origin": jsonb(None if origin is None else dict(origin)),
        }
        with self.connector.transaction(tenant_of(params)) as tx:
            if origin is not None and first(tx.rows("lock_live_session", params)) is None:
                raise SessionDeleted()
            row = first(tx.rows("create_schedule", params))
        if row is not None:
            return schedule_record(row), True
        found = self.get_schedule(spec["tenant_id"], spec["schedule_id"])
        if found.spec_hash != spec["spec_hash"]:
            raise IdempotencyConflict(f"schedule {spec['schedule_id']!r} exists with another spec")
        return found, False

    def get_schedule(self, tenant_id: str, schedule_id: str) -> ScheduleRecord:
        row = self._one("get_schedule", {"tenant_id": tenant_id, "schedule_id": schedule_id})
        if row is None:
            raise NotFound("schedule not found")
        return schedule_record(row)

    def list_schedules(
        self, tenant_id: str, *, after: str = "", limit: int = 50
    ) -> list[ScheduleRecord]:
        rows = self._rows(
            "list_schedules", {"tenant_id": tenant_id, "after": after, "limit": limit}
        )
        return [schedule_record(r) for r in rows]

    def pause_schedule(
        self,
        tenant_id: str,
        schedule_id: str,
        *,
        paused: bool,
        next_at: datetime | None,
        reason: str | None = None,
    ) -> ScheduleRecord:
        """Pause or resume it; ``reason``: the refusal that paused it at its tick (a
        resume clears it)."""
        params = {
            "tenant_id": tenant_id,
            "schedule_id": schedule_id,
            "paused": paused,
            "next_at": next_at,
            "reason": reason if paused else None,
        }
        row = self._one("pause_schedule", params)
        if row is None:
            raise NotFound("schedule not found")
        return schedule_record(row)

    def delete_schedule(self, tenant_id: str, schedule_id: str) -> None:
        row = self._one("delete_schedule", {"tenant_id": tenant_id, "schedule_id": schedule_id})
        if row is None:
            raise NotFound("schedule not found")

    def due_schedules(self, *, limit: int) -> list[ScheduleRecord]:
        return [schedule_record(r) for r in self._rows("due_schedules", {"limit": limit})]

    def schedule_fired(
        self, schedule: ScheduleRecord, *, next_at: datetime | None, fired: bool, skipped: int = 0
    ) -> bool:
        """Move the schedule past the tick it waited for (``next_at`` None: a one-shot
        is done), its turn admitted (``fired``) and ``skipped`` ticks passed over on the
        way; False: another pass did."""
        params: Mapping[str, Any] = {
            "tenant_id": schedule.tenant_id,
            "schedule_id": schedule.schedule_id,
            "tick": schedule.next_at,
            "next_at": next_at,
            "fired": fired,
            "skipped": skipped,
        }
        return self._one("schedule_fired", params) is not None
