"""Parallel tool calls (issue 25): the read and idempotent calls of one model answer run
side by side, each committed as its own fenced step in call order, on the real Store
over the in-memory connector (tests/unit/fakes.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.fakes import Crash, FakeResources
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.agents.tools import Effect, ToolContext, tool
from turnkeep.runtime.budget import Limits
from turnkeep.runtime.messages import ModelRequest, ModelResponse, Role, ToolCall
from turnkeep.runtime.obs import faults
from turnkeep.runtime.providers.demo_model import demo_script
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.worker.lane import RunOutcome, run_session

T, S = "t1", "s1"
_PARAMS = {"type": "object", "properties": {"n": {"type": "integer"}}}
#: (tool, n, idempotency key, start, end) of every run
runs: list[tuple[str, int, str, float, float]] = []
_lock = threading.Lock()
#: seconds each call sleeps
PAUSE = 0.3


#: run at the start of a call, by (tool, n)
hooks: dict[tuple[str, int], Any] = {}


def _slow(name: str) -> Any:
    def fn(ctx: ToolContext, args: dict[str, Any]) -> Any:
        hook = hooks.pop((name, int(args["n"])), None)
        if hook is not None:
            hook()
        began = time.monotonic()
        # the later calls finish first: commits must still come in call order
        # (an Event's wait: the fixture makes time.sleep return at once, for the
        # checkpoint's backoff)
        threading.Event().wait(PAUSE * (1.5 - 0.25 * int(args["n"])))
        with _lock:
            runs.append((name, int(args["n"]), ctx.idempotency_key, began, time.monotonic()))
        return {"n": args["n"]}

    return fn


look = tool(name="look", effect=Effect.READ, parameters=_PARAMS)(_slow("look"))
mark = tool(name="mark", effect=Effect.IDEMPOTENT, parameters=_PARAMS)(_slow("mark"))
pay = tool(name="pay", effect=Effect.EFFECTFUL, parameters=_PARAMS, approval="never")(_slow("pay"))


def _calls(names: str) -> Any:
    def script(request: ModelRequest) -> ModelResponse:
        users = [i for i, m in enumerate(request.messages) if m.role is Role.USER]
        results = [m for m in request.messages[users[-1] :] if m.role is Role.TOOL]
        if not results:
            calls = tuple(
                ToolCall(id=f"call_{i}", name=n, arguments={"n": i})
                for i, n in enumerate(names.split(","))
            )
            return ModelResponse(text="calling", tool_calls=calls)
        return ModelResponse(text="|".join(m.content for m in results))

    return script


for _names in ("look,look,look", "look,pay,mark", "mark,mark,mark,mark"):
    demo_script(f"unit-par-{_names}")(_calls(_names))


def agent(names: str, **kw: Any) -> AgentDefinition:
    return AgentDefinition(
        name=f"par-{names}",
        version="1",
        provider="demo",
        model=f"unit-par-{names}",
        instructions="x",
        tools=(look, mark, pay),
        **kw,
    )


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(faults, "_armed", {})
    monkeypatch.setattr("turnkeep.worker.checkpoint.time.sleep", lambda s: None)
    runs.clear()
    hooks.clear()
    yield


def ctx_of(a: AgentDefinition) -> FakeResources:
    # eight worker threads: the worker-wide bound on calls side by side
    settings = Settings(worker={"max_attempts": 3, "concurrency": 8})
    ctx = FakeResources(agents=AgentRegistry([a]), settings=settings)
    ctx.store.admit(T, S, "u1", a, "go")
    return ctx


def outcomes(ctx: FakeResources) -> list[tuple[str, int | None]]:
    return [(e.type, e.step) for e in ctx.store.journal(T, S) if e.step is not None]


def test_three_read_calls_run_side_by_side_and_commit_in_call_order() -> None:
    a = agent("look,look,look")
    ctx = ctx_of(a)
    began = time.monotonic()
    assert run_session(ctx, T, S) is RunOutcome.RAN
    took = time.monotonic() - began
    turn = ctx.store.turn(T, S, "u1")
    assert turn.state is TurnState.COMPLETED
    # sequentially 0.45 + 0.375 + 0.3 s; side by side about the longest
    assert took < 0.8, took
    assert max(r[3] for r in runs) < min(r[4] for r in runs)  # all started before any ended
    assert outcomes(ctx) == [
        (EventType.MODEL_COMPLETED, 1),
        (EventType.TOOL_COMPLETED, 2),
        (EventType.TOOL_COMPLETED, 3),
        (EventType.TOOL_COMPLETED, 4),
        (EventType.MODEL_COMPLETED, 5),
    ]
    assert turn.result is not None and turn.result["text"] == '{"n": 0}|{"n": 1}|{"n": 2}'
    ctx.store.check_invariants()


def test_a_crash_between_the_batchs_commits_runs_only_the_uncommitted_calls_again() -> None:
    a = agent("mark,mark,mark,mark")
    ctx = ctx_of(a)
    ctx.store.crash_before("append", 4)  # model, then two of the four outcomes committed
    with pytest.raises(Crash):
        run_session(ctx, T, S)
    first = {r[2] for r in runs}
    assert len(first) == 4  # all four ran in the first attempt
    committed = [s for t, s in outcomes(ctx) if t == EventType.TOOL_COMPLETED]
    assert committed == [2, 3]
    runs.clear()
    assert run_session(ctx, T, S) is RunOutcome.RAN
    assert sorted(r[1] for r in runs) == [2, 3]  # only the uncommitted ran again
    assert {r[2] for r in runs} <= first  # under the same idempotency keys
    assert ctx.store.turn(T, S, "u1").state is TurnState.COMPLETED
    ctx.store.check_invariants()


def test_an_effectful_call_runs_alone_and_ends_the_batch() -> None:
    a = agent("look,pay,mark")
    ctx = ctx_of(a)
    assert run_session(ctx, T, S) is RunOutcome.RAN
    assert ctx.store.turn(T, S, "u1").state is TurnState.COMPLETED
    by = {r[0]: r for r in runs}
    # each ran after the one before it ended
    assert by["look"][4] <= by["pay"][3] and by["pay"][4] <= by["mark"][3]


def test_the_batch_is_bounded_by_max_parallel_tools_and_the_tool_call_budget() -> None:
    a = agent("mark,mark,mark,mark", max_parallel_tools=2)
    ctx = ctx_of(a)
    assert run_session(ctx, T, S) is RunOutcome.RAN
    ordered = sorted(runs, key=lambda r: r[3])
    # two at a time: the third starts once the first pair committed
    assert ordered[2][3] >= min(ordered[0][4], ordered[1][4])
    runs.clear()
    capped = agent("look,look,look", limits=Limits(max_tool_calls=2))
    ctx = ctx_of(capped)
    assert run_session(ctx, T, S) is RunOutcome.RAN
    turn = ctx.store.turn(T, S, "u1")
    assert turn.state is TurnState.FAILED
    assert turn.error is not None and turn.error["code"] == "budget_exceeded"
    assert len(runs) == 2  # the budget's two, never the third
    assert "max_parallel_tools" in agent("x", max_parallel_tools=2).describe()
    assert "max_parallel_tools" not in agent("x").describe()


def test_a_cancellation_stops_the_batch_and_records_the_calls_not_started_as_not_run() -> None:
    a = agent("mark,mark,mark,mark")
    settings = Settings(worker={"max_attempts": 3, "concurrency": 1})  # one runs, the rest wait
    ctx = FakeResources(agents=AgentRegistry([a]), settings=settings)
    ctx.store.admit(T, S, "u1", a, "go")
    hooks[("mark", 0)] = lambda: ctx.store.request_cancel(T, S, "u1")
    assert run_session(ctx, T, S) is RunOutcome.RAN
    turn = ctx.store.turn(T, S, "u1")
    assert turn.state is TurnState.CANCELLED
    done = [e for e in ctx.store.journal(T, S) if e.type == EventType.TOOL_COMPLETED]
    assert [e.step for e in done] == [2, 3, 4, 5]
    not_run = {e.step for e in done if e.data.get("error") == "not_run"}
    # the call that asked ran; the one a thread picked up before the first commit
    # may have; the others never started
    assert {4, 5} <= not_run
    assert sorted(r[1] + 2 for r in runs) == sorted({2, 3, 4, 5} - not_run)
    ctx.store.check_invariants()
