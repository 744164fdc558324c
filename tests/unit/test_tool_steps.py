"""``ctx.step`` (runtime/agents/tools.py ToolContext.step, worker/tool_steps.py): a step
runs its function unless a run of the same call recorded it, records its result once
(first writer wins), refuses a reused name and a result JSON cannot hold; without a
store it keeps results in memory for the one context. No services: the store is a
dict here (tests/integration/test_tool_steps.py runs the real one)."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.tools import (
    Effect,
    StepNameInvalid,
    StepNameReused,
    StepResultNotJSON,
    ToolContext,
    ToolStepError,
    tool,
)
from turnkeep.runtime.errors import RuntimeErrorBase
from turnkeep.runtime.messages import ToolCall
from turnkeep.runtime.obs import faults, logs
from turnkeep.store.records import ToolStepRecord
from turnkeep.worker.tool_steps import StoreStepLog
from turnkeep.worker.tools import Ran, run_tool


class DictSteps:
    """The two store methods a step log uses, over a dict (first writer wins)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str, int, str], ToolStepRecord] = {}
        self.reads = 0
        #: results another run records just before this one's record lands
        self.racing: dict[str, Any] = {}

    def get_tool_step(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, name: str
    ) -> ToolStepRecord | None:
        self.reads += 1
        return self.rows.get((tenant_id, session_id, turn_id, step, name))

    def record_tool_step(
        self, tenant_id: str, session_id: str, turn_id: str, step: int, name: str, result: Any
    ) -> tuple[ToolStepRecord, bool]:
        key = (tenant_id, session_id, turn_id, step, name)
        if name in self.racing:
            self.rows.setdefault(key, self._row(key, self.racing.pop(name)))
        if key in self.rows:
            return self.rows[key], False
        self.rows[key] = self._row(key, result)
        return self.rows[key], True

    @staticmethod
    def _row(key: tuple[str, str, str, int, str], result: Any) -> ToolStepRecord:
        t, s, u, step, name = key
        return ToolStepRecord(t, s, u, step, name, result, datetime.now(UTC))


def context() -> ToolContext:
    return ToolContext(
        tenant_id="t",
        session_id="s",
        turn_id="u",
        step_number=2,
        idempotency_key="t/s/u/2",
        deadline=time.monotonic() + 60,
        cancelled=lambda: False,
    )


def _stored(steps: DictSteps) -> ToolContext:
    log = StoreStepLog(lambda: steps, tenant_id="t", session_id="s", turn_id="u", step=2)
    return ToolContext(
        tenant_id="t",
        session_id="s",
        turn_id="u",
        step_number=2,
        idempotency_key="t/s/u/2",
        deadline=time.monotonic() + 60,
        cancelled=lambda: False,
        _steps=log,
    )


def counting(value: Any) -> tuple[list[int], Any]:
    runs: list[int] = []

    def fn() -> Any:
        runs.append(1)
        return value

    return runs, fn


def test_in_memory_a_step_runs_once_and_returns_its_result_as_json_holds_it() -> None:
    ctx = context()
    runs, fn = counting({"ids": (1, 2), "n": None})
    assert ctx.step("charge", fn) == {"ids": [1, 2], "n": None}
    assert runs == [1]
    assert ctx.step("refund", lambda: None) is None
    # the memory is the context's: another context (another run) has none of it
    other_runs, again = counting("x")
    assert context().step("charge", again) == "x" and other_runs == [1]


def test_a_name_used_twice_in_one_call_is_a_typed_error_and_fn_does_not_run() -> None:
    ctx = context()
    ctx.step("charge", lambda: 1)
    runs, fn = counting(2)
    with pytest.raises(StepNameReused, match="'charge'"):
        ctx.step("charge", fn)
    assert runs == []
    assert issubclass(StepNameReused, ToolStepError)
    assert issubclass(ToolStepError, RuntimeErrorBase)


@pytest.mark.parametrize("name", ["", "x" * 201, 7])
def test_a_name_must_be_a_short_string(name: Any) -> None:
    with pytest.raises(StepNameInvalid):
        context().step(name, lambda: 1)


@pytest.mark.parametrize("value", [object(), {"x": math.nan}, {"k": {1, 2}}, "a\x00b", {"\x00": 1}])
def test_a_result_json_cannot_hold_is_a_typed_error_and_nothing_is_recorded(value: Any) -> None:
    steps = DictSteps()
    ctx = _stored(steps)
    with pytest.raises(StepResultNotJSON):
        ctx.step("charge", lambda: value)
    assert steps.rows == {}
    # nothing was recorded, so the name is free again: the tool may try the step again
    assert ctx.step("charge", lambda: "ok") == "ok"


def test_a_step_whose_fn_raised_gives_its_name_back() -> None:
    ctx = context()

    def boom() -> Any:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        ctx.step("charge", boom)
    assert ctx.step("charge", lambda: 3) == 3


def test_a_rerun_of_the_call_gets_recorded_steps_back_without_running_them() -> None:
    steps = DictSteps()
    first_runs, first = counting({"paid": 5})
    assert _stored(steps).step("pay", first) == {"paid": 5}
    # the rerun (a new context for the same call): the recorded step is not run again
    rerun = _stored(steps)
    again_runs, again = counting({"paid": 6})
    assert rerun.step("pay", again) == {"paid": 5}
    assert first_runs == [1] and again_runs == []
    assert len(steps.rows) == 1


def test_a_run_that_loses_the_race_returns_the_winners_result() -> None:
    steps = DictSteps()
    steps.racing["pay"] = {"by": "the other run"}
    assert _stored(steps).step("pay", lambda: {"by": "this run"}) == {"by": "the other run"}


@pytest.fixture
def armed() -> Iterator[Any]:
    yield faults.arm
    faults.arm("")


def test_the_record_is_between_the_two_fault_points(armed: Any) -> None:
    steps = DictSteps()
    armed("before_tool_step_record=raise")
    runs, fn = counting(1)
    with pytest.raises(faults.FaultInjected, match="before_tool_step_record"):
        _stored(steps).step("pay", fn)
    assert runs == [1] and steps.rows == {}
    armed("after_tool_step_record=raise")
    with pytest.raises(faults.FaultInjected, match="after_tool_step_record"):
        _stored(steps).step("pay", fn)
    assert runs == [1, 1] and len(steps.rows) == 1


@tool(name="twice", effect=Effect.IDEMPOTENT)
def twice(ctx: ToolContext, args: dict[str, Any]) -> Any:
    return [ctx.step("a", lambda: 1), ctx.step("a", lambda: 2)]


@tool(name="once", effect=Effect.IDEMPOTENT)
def once(ctx: ToolContext, args: dict[str, Any]) -> Any:
    return ctx.step("a", lambda: {"at": time.monotonic()})


AGENT = AgentDefinition(
    name="stepper", version="1", provider="demo", model="m", instructions="", tools=(twice, once)
)


def _run(name: str, steps: DictSteps) -> Ran:
    outcome = run_tool(
        AGENT,
        ToolCall(id="call_1", name=name, arguments={}),
        tenant_id="t",
        session_id="s",
        turn_id="u",
        step=2,
        cancelled=lambda: False,
        steps=steps,
    )
    assert isinstance(outcome, Ran)
    return outcome


def test_run_tool_reports_a_reused_name_as_the_calls_error() -> None:
    ran = _run("twice", DictSteps())
    assert ran.message.is_error and ran.meta["error"] == "tool_failed"
    assert ran.message.content.startswith("error: StepNameReused: ")


def test_run_tool_keys_steps_by_the_calls_idempotency_key() -> None:
    steps = DictSteps()
    first = _run("once", steps)
    assert _run("once", steps).message.content == first.message.content
    assert list(steps.rows) == [("t", "s", "u", 2, "a")]


@tool(name="whoami", effect=Effect.READ)
def whoami(ctx: ToolContext, args: dict[str, Any]) -> Any:
    return {"ids": dict(logs.current()), "thread": threading.current_thread().name}


def test_a_tool_runs_on_its_own_thread_with_the_steps_log_ids() -> None:
    # what a tool logs is the step's: the ids bound around the call go with it
    agent = AgentDefinition(
        name="who", version="1", provider="demo", model="m", instructions="", tools=(whoami,)
    )
    with logs.bound(tenant="t", session="s", turn="u", step=4, fence=9):
        outcome = run_tool(
            agent,
            ToolCall(id="call_1", name="whoami", arguments={}),
            tenant_id="t",
            session_id="s",
            turn_id="u",
            step=4,
            cancelled=lambda: False,
            steps=DictSteps(),
        )
    assert isinstance(outcome, Ran)
    seen = json.loads(str(outcome.message.content))
    assert seen["thread"] == "tool-whoami"
    assert seen["ids"] == {"tenant": "t", "session": "s", "turn": "u", "step": 4, "fence": 9}
