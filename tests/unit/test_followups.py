"""Follow-up turns, pure and over a store stand-in (runtime/followups.py,
worker/followup_schedules.py, runtime/agents/tools.py ``schedule_turn``), and the
one-shot timing they ride on (runtime/schedules.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.agents.tools import ToolContext, followup_tool
from turnkeep.runtime.errors import UnknownAgent
from turnkeep.runtime.followups import followup_id, messages_of
from turnkeep.runtime.schedules import Firing, Missed, ScheduleInvalid, When, firings
from turnkeep.store.errors import IdempotencyConflict
from turnkeep.store.schedules import ScheduleRecord
from turnkeep.worker.followup_schedules import StoreFollowUps

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


class Schedules:
    """``create_schedule`` / ``get_schedule`` as store/schedules.py answers them."""

    def __init__(self) -> None:
        self.rows: dict[str, ScheduleRecord] = {}

    def create_schedule(self, **spec: Any) -> tuple[ScheduleRecord, bool]:
        found = self.rows.get(spec["schedule_id"])
        if found is not None:
            if found.spec_hash != spec["spec_hash"]:
                raise IdempotencyConflict("exists with another spec")
            return found, False
        row = ScheduleRecord(
            **spec, paused=False, last_tick=None, fired=0, updated_at=spec["created_at"]
        )
        self.rows[row.schedule_id] = row
        return row, True

    def get_schedule(self, tenant_id: str, schedule_id: str) -> ScheduleRecord:
        return self.rows[schedule_id]


def _context(store: Schedules, step: int = 2) -> ToolContext:
    book = StoreFollowUps(
        lambda: store,
        lambda: AgentRegistry([]),
        tenant_id="t",
        session_id="s",
        turn_id="u.1",
        step=step,
        agent="reminder",
        submitted_by="alice",
    )
    return ToolContext(
        tenant_id="t",
        session_id="s",
        turn_id="u.1",
        step_number=step,
        idempotency_key=f"t/s/u.1/{step}",
        deadline=0.0,
        cancelled=lambda: False,
        _followups=book,
    )


def test_a_call_makes_one_schedule_and_a_run_again_gets_the_first_ones() -> None:
    store = Schedules()
    made = _context(store).schedule_turn(T0 + timedelta(hours=1), "check again")
    assert made.at == T0 + timedelta(hours=1)
    row = store.rows[made.schedule_id]
    assert (row.cron, row.every_seconds, row.next_at, row.session_id) == (
        None,
        None,
        T0 + timedelta(hours=1),
        "s",
    )
    assert row.origin == {"session_id": "s", "turn_id": "u.1", "step": 2}
    assert row.created_by == "alice" and row.agent_name == "reminder"
    assert row.input == {"messages": [{"role": "user", "content": "check again"}]}
    # the call run again (a crash, a retry) asks a later time: the first run's stands
    again = _context(store).schedule_turn(T0 + timedelta(hours=2), "check again")
    assert again == made and len(store.rows) == 1
    # another key of the same call, or another call, is another follow-up
    other = _context(store).schedule_turn(T0, "and this", key="second")
    assert other.schedule_id != made.schedule_id
    assert _context(store, step=4).schedule_turn(T0, "x").schedule_id not in (
        made.schedule_id,
        other.schedule_id,
    )


def test_what_a_follow_up_refuses() -> None:
    ctx = _context(Schedules())
    with pytest.raises(ValueError, match="time zone"):
        ctx.schedule_turn(datetime(2026, 12, 5, 12, 0), "naive")
    with pytest.raises(ValueError, match="at most"):
        ctx.schedule_turn(datetime.now(UTC) + timedelta(days=400), "too far")
    with pytest.raises(ValueError, match="role user or system"):
        ctx.schedule_turn(T0, [{"role": "tool", "content": "x"}])
    with pytest.raises(UnknownAgent):
        ctx.schedule_turn(T0, "x", agent="nobody")
    bare = replace(ctx, _followups=None)
    with pytest.raises(RuntimeError, match="cannot schedule"):
        bare.schedule_turn(T0, "x")
    assert messages_of([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert followup_id("t/s/u.1/2", "followup").startswith("followup-")
    assert "." not in followup_id("t/s/u.1/2", "followup")


def test_the_declared_follow_up_tool_schedules_with_what_the_model_asked() -> None:
    store = Schedules()
    tool = followup_tool(max_seconds=600)
    assert tool.parameters["properties"]["in_seconds"]["maximum"] == 600
    before = datetime.now(UTC)
    result = tool.fn(_context(store), {"in_seconds": 90, "message": "ping"})
    row = store.rows[result["schedule_id"]]
    assert row.input == {"messages": [{"role": "user", "content": "ping"}]}
    assert datetime.fromisoformat(result["at"]) == row.next_at
    assert 89 <= (row.next_at - before).total_seconds() <= 91


def test_a_one_shot_ticks_once() -> None:
    once = When(at=T0)
    once.check()
    assert once.once and once.first(T0 - timedelta(days=1)) == T0
    assert once.first(T0 + timedelta(days=1)) == T0  # past: the next pass fires it
    assert once.next_after(T0 - timedelta(hours=1), anchor=T0) is None
    back = T0 + timedelta(minutes=5)
    late = firings(once, T0, back, anchor=T0, missed=Missed.RUN_ONCE, grace=60)
    assert late == [Firing(T0, fire=True, next_at=None)]
    skipped = firings(once, T0, back, anchor=T0, missed=Missed.SKIP, grace=60)
    assert skipped == [Firing(T0, fire=False, next_at=None, skipped=1)]
    on_time = firings(once, T0, T0 + timedelta(seconds=1), anchor=T0, missed=Missed.SKIP, grace=60)
    assert on_time == [Firing(T0, fire=True, next_at=None)]
    for bad in (When(at=T0, cron="* * * * *"), When(), When(at=datetime(2026, 1, 1))):
        with pytest.raises(ScheduleInvalid):
            bad.check()
