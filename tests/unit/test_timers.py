"""Durable timers as a tool sees them (runtime/timers.py, ToolContext.sleep_until,
wait_tool): a time ahead asks to sleep, a time past or a woken call goes on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from turnkeep.runtime.agents import ToolContext, wait_tool
from turnkeep.runtime.timers import MAX_SLEEP_SECONDS, SleepRequested


def _ctx(**kw: object) -> ToolContext:
    return ToolContext(
        tenant_id="t",
        session_id="s",
        turn_id="u",
        step_number=2,
        idempotency_key="t/s/u/2",
        deadline=0.0,
        cancelled=lambda: False,
        **kw,  # type: ignore[arg-type]
    )


def test_a_time_ahead_asks_to_sleep_and_a_woken_call_goes_on():
    at = datetime.now(UTC) + timedelta(seconds=30)
    with pytest.raises(SleepRequested) as asked:
        _ctx().sleep_until(at)
    assert asked.value.until == at and 29 < asked.value.seconds() <= 30
    _ctx(woken=True).sleep_until(at)  # returns
    _ctx().sleep_until(datetime.now(UTC) - timedelta(seconds=1))  # past: returns


def test_a_naive_or_too_distant_time_is_refused():
    with pytest.raises(ValueError, match="aware"):
        _ctx().sleep_until(datetime.now())
    with pytest.raises(ValueError, match="at most"):
        _ctx().sleep_until(datetime.now(UTC) + timedelta(seconds=MAX_SLEEP_SECONDS + 60))


def test_the_wait_tool_sleeps_for_its_seconds_then_says_so():
    tool = wait_tool(name="nap", max_seconds=60)
    assert tool.parameters["properties"]["seconds"]["maximum"] == 60
    with pytest.raises(SleepRequested):
        tool.fn(_ctx(), {"seconds": 5})
    assert tool.fn(_ctx(woken=True), {"seconds": 5}) == {"waited_seconds": 5.0}
