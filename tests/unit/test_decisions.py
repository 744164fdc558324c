"""runtime/decisions.py: the executor's decisions as pure functions, without a store,
a worker or a clock: what an answer means, what the bounds allow, what is left for
children, how a final answer settles."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from turnkeep.runtime import decisions, plan
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.tools import Effect, ToolContext, ask_tool, tool
from turnkeep.runtime.budget import Limits
from turnkeep.runtime.decisions import ToolResult
from turnkeep.runtime.errors import BudgetExceeded
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.inputs import InputKind
from turnkeep.runtime.messages import ToolCall
from turnkeep.runtime.payloads import InputRequested
from turnkeep.runtime.states import ErrorCode, EventType, TurnState


@dataclass(frozen=True)
class Entry:
    """One committed event, as runtime/journal.py's ``JournalEntry`` reads it."""

    seq: int
    type: str
    step: int | None = None
    data: dict[str, Any] = field(default_factory=dict)


def _fn(ctx: ToolContext, args: dict[str, Any]) -> Any:
    return args


_PARAMS = {"type": "object", "properties": {"n": {"type": "integer"}}}
COUNT = tool(name="count", effect=Effect.IDEMPOTENT, parameters=_PARAMS, retries=3)(_fn)
CHARGE = tool(name="charge", effect=Effect.EFFECTFUL, parameters=_PARAMS, approval=True)(_fn)
ASK = ask_tool(name="ask", answer_schema={"type": "string"})
AGENT = AgentDefinition(
    name="a", version="1", provider="demo", model="m", instructions="", tools=(COUNT, CHARGE, ASK)
)


def _asked(seq: int, step: int, kind: InputKind, request_id: str, **data: Any) -> Entry:
    payload = {"kind": kind, "request_id": request_id, "step": step, **data}
    return Entry(seq, EventType.INPUT_REQUESTED, step, payload)


def _answered(seq: int, request_id: str, response: dict[str, Any]) -> Entry:
    return Entry(
        seq, EventType.INPUT_RESOLVED, None, {"request_id": request_id, "response": response}
    )


# -- what an answer to a waiting call means --------------------------------------------


def test_an_approval_runs_the_call_only_with_the_arguments_approved() -> None:
    request = InputRequested(arguments_hash=sha256_hex({"n": 1}))
    approved = {"approved": True}
    assert decisions.gate(InputKind.APPROVAL, request, approved, {"n": 1}) is None
    assert decisions.gate(InputKind.APPROVAL, request, approved, {"n": 2}) == ToolResult(
        "error: not approved: the arguments changed", True
    )


def test_a_refusal_an_expiry_and_a_question_give_the_call_its_result() -> None:
    request = InputRequested(arguments_hash=sha256_hex({"n": 1}))
    refused = decisions.gate(InputKind.APPROVAL, request, {"approved": False, "reason": "no"}, {})
    assert refused == ToolResult("error: not approved: no", True)
    bare = decisions.gate(InputKind.APPROVAL, request, {"approved": False}, {})
    assert bare == ToolResult("error: not approved: no reason given", True)
    expired = decisions.gate(InputKind.QUESTION, request, {"expired": True, "answer": "x"}, {})
    assert expired == ToolResult("error: nobody answered before the request expired", True)
    answer = decisions.gate(InputKind.QUESTION, request, {"answer": {"b": 1, "a": 2}}, {})
    assert answer == ToolResult('{"a": 2, "b": 1}', False)


def test_a_reconciliation_answer_is_the_calls_outcome_or_runs_it_once() -> None:
    assert decisions.reconciled({"outcome": "not_executed"}) is None
    assert decisions.reconciled({"outcome": "succeeded", "result": {"id": 7}}) == ToolResult(
        '{"id": 7}', False
    )
    assert decisions.reconciled({"outcome": "succeeded", "result": "ok"}) == ToolResult("ok", False)
    assert decisions.reconciled({"outcome": "failed", "error": "declined"}) == ToolResult(
        "error: declined", True
    )
    expired = decisions.reconciled({"expired": True})
    assert expired == ToolResult(decisions.UNKNOWN_OUTCOME + " Nobody reconciled it in time.", True)


def test_an_unknown_outcome_says_why_it_is_unknown() -> None:
    assert decisions.unknown_outcome("crash") == decisions.UNKNOWN_OUTCOME
    assert decisions.unknown_outcome("timeout").startswith("error: the call timed out")


def test_an_effectful_call_runs_once_a_step_and_others_up_to_their_retries() -> None:
    assert decisions.tries(CHARGE) == 1
    assert decisions.tries(COUNT) == 4
    assert decisions.tries(None) == 1


def test_a_call_waiting_for_an_answer_nobody_gave_is_not_resumed() -> None:
    calls = [
        {"id": "c1", "name": "count", "arguments": {"n": 1}},
        {"id": "c2", "name": "charge", "arguments": {"n": 1}},
    ]
    events = [
        Entry(1, EventType.TURN_STARTED),
        Entry(2, EventType.MODEL_COMPLETED, 1, {"message": _assistant(calls)}),
        _asked(3, 3, InputKind.APPROVAL, "r1"),
        Entry(4, EventType.TURN_STARTED),
    ]
    assert decisions.waits(AGENT, ToolCall("c2", "charge", {"n": 1}))
    assert not decisions.waits(AGENT, ToolCall("c1", "count", {"n": 1}))
    assert decisions.request_kind(AGENT, ToolCall("c3", "ask", {})) is InputKind.QUESTION
    assert decisions.request_kind(AGENT, ToolCall("c4", "made_up", {})) is InputKind.APPROVAL
    # step 2 (count) may have run in the attempt that died; step 3 waits unanswered
    assert decisions.resumed(AGENT, events) == {2}


def _assistant(calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": calls}


# -- bounds ---------------------------------------------------------------------------


def test_bounds_grow_by_each_approved_extension_and_only_those() -> None:
    grant = {"max_tool_calls": 2}
    events = [
        _asked(1, 1, InputKind.BUDGET_EXTENSION, "b1", detail={"default_grant": grant}),
        _answered(2, "b1", {"approved": True}),  # no amounts: the default grant
        _asked(3, 2, InputKind.BUDGET_EXTENSION, "b2", detail={"default_grant": grant}),
        _answered(4, "b2", {"approved": True, "extend": {"max_tool_calls": 5}}),
        _asked(5, 3, InputKind.BUDGET_EXTENSION, "b3", detail={"default_grant": grant}),
        _answered(6, "b3", {"approved": False}),
        _asked(7, 4, InputKind.BUDGET_EXTENSION, "b4", detail={"default_grant": grant}),
    ]
    limits = decisions.bounds(Limits(max_tool_calls=3), {"max_tool_calls": 1}, events)
    assert limits.max_tool_calls == 1 + 2 + 5
    assert decisions.extension_refused(events, 3)
    assert not decisions.extension_refused(events, 2)
    assert not decisions.extension_refused(events, 4)  # asked, not answered yet


def test_a_step_past_a_bound_raises_which_bound_it_reached() -> None:
    events = [Entry(1, EventType.TOOL_COMPLETED, 2), Entry(2, EventType.MODEL_COMPLETED, 1)]
    limits = Limits(max_tool_calls=1, max_model_calls=2)
    decisions.check_step(limits, events, 0.0, plan.CallModel(3))
    with pytest.raises(BudgetExceeded) as raised:
        decisions.check_step(limits, events, 0.0, plan.RunTool(3, ToolCall("c", "count", {})))
    assert (raised.value.bound, raised.value.limit) == ("max_tool_calls", 1)
    assert decisions.extension_detail(raised.value) == {
        "bound": "max_tool_calls",
        "limit": 1,
        "message": "tool call limit 1 reached",
        "default_grant": {"max_tool_calls": 1},
    }
    with pytest.raises(BudgetExceeded, match="wall-clock"):
        decisions.check_step(Limits(max_seconds=5), [], 5.0, plan.CallModel(1))


def test_what_is_left_for_children_is_the_bound_less_what_the_turn_used() -> None:
    usage = {"input_tokens": 100, "output_tokens": 20}
    events = [
        Entry(1, EventType.MODEL_COMPLETED, 1, {"usage": usage, "cost": 0.25}),
        Entry(2, EventType.TOOL_COMPLETED, 2),
    ]
    limits = Limits(max_model_calls=10, max_tokens=1000, max_cost_usd=1.0)
    left = decisions.remaining(limits, {"max_tool_calls": 4}, events, 30.0)
    assert left == {
        "max_iterations": 19,
        "max_model_calls": 9,
        "max_tool_calls": 3,
        "max_tokens": 880,
        "max_seconds": 3570.0,
        "max_cost_usd": 0.75,
    }
    assert "max_cost_usd" not in decisions.remaining(Limits(), None, events, 0.0)


# -- delegation -----------------------------------------------------------------------


def test_a_delegated_turn_sees_its_depth_and_only_the_tools_pinned_in_its_input() -> None:
    link = {"depth": 2, "tools": ["count"]}
    assert decisions.delegation_depth({"delegation": link}) == 2
    assert decisions.delegation_depth({"messages": []}) == 0
    assert decisions.delegation_depth(None) == 0
    narrowed = decisions.as_this_turn_sees_it(AGENT, {"delegation": link})
    assert [x.name for x in narrowed.tools] == ["count"]
    assert decisions.as_this_turn_sees_it(AGENT, {"messages": []}) is AGENT


# -- the final answer -----------------------------------------------------------------


def test_a_final_answer_settles_completed_or_failed_output_invalid() -> None:
    schema = {"type": "object", "required": ["answer"]}
    assert decisions.settlement(None, "hi") == (
        TurnState.COMPLETED,
        EventType.TURN_COMPLETED,
        {"result": {"text": "hi"}},
        {"result": {"text": "hi"}},
    )
    state, event, data, fields = decisions.settlement(schema, '{"answer": 1}')
    assert (state, event) == (TurnState.COMPLETED, EventType.TURN_COMPLETED)
    assert fields == {"result": {"text": '{"answer": 1}', "output": {"answer": 1}}}
    state, event, data, fields = decisions.settlement(schema, "not json")
    assert (state, event) == (TurnState.FAILED, EventType.TURN_FAILED)
    assert data == fields
    assert fields["error"]["code"] == ErrorCode.OUTPUT_INVALID
    assert fields["error"]["message"].startswith("final answer does not match the output schema")


def test_an_invalid_answer_is_corrected_until_the_retries_are_used() -> None:
    _, _, _, invalid = decisions.settlement({"type": "object"}, "[]")
    message = invalid["error"]["message"]
    assert decisions.correction([], invalid, 1) == {"n": 1, "error": message}
    corrected = [Entry(1, EventType.MODEL_COMPLETED, 1, {"correction": {"n": 1}})]
    assert decisions.correction(corrected, invalid, 1) is None
    assert decisions.correction(corrected, invalid, 2) == {"n": 2, "error": message}
    _, _, _, valid = decisions.settlement(None, "fine")
    assert decisions.correction([], valid, 1) is None
