"""The executor's decisions: what an answer means, what the bounds allow, how a final
answer settles. Pure functions over the agent, the turn's input and its journal,
beside the loop rules of runtime/plan.py; worker/runner.py and worker/steps/ only
perform what these decide (commit, ask, run), so each rule is testable without I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import jsonschema

from turnkeep.runtime import budget, plan
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.tools import Effect, ToolDefinition
from turnkeep.runtime.budget import Limits
from turnkeep.runtime.errors import BudgetExceeded
from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.inputs import InputKind, ReconcileOutcome
from turnkeep.runtime.journal import JournalEntry
from turnkeep.runtime.messages import ToolCall
from turnkeep.runtime.payloads import InputRequested, ModelCompleted, TurnCompleted, TurnFailed
from turnkeep.runtime.states import ErrorCode, EventType, TurnState
from turnkeep.runtime.validation import validate

UNKNOWN_OUTCOME = (
    "error: the outcome of this call is unknown (the worker running it stopped). "
    "It may or may not have taken effect; check before repeating it."
)


@dataclass(frozen=True)
class ToolResult:
    """The result a decision gives a tool call in place of running it."""

    content: str
    is_error: bool


def content_of(value: Any) -> str:
    """A tool's return value as the text of its result message."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


# -- tool calls that wait for a person ------------------------------------------------


def waits(agent: AgentDefinition, call: ToolCall) -> bool:
    """Whether the call waits for an answer (an approval, a question) before it runs."""
    tool = agent.tool(call.name)
    return tool is not None and tool.waits(call.arguments)


def request_kind(agent: AgentDefinition, call: ToolCall) -> InputKind:
    """The kind of request a waiting call asks."""
    tool = agent.tool(call.name)
    return InputKind.APPROVAL if tool is None else tool.request_kind()


def resumed(agent: AgentDefinition, events: Sequence[JournalEntry]) -> set[int]:
    """Tool steps without an outcome that an earlier attempt may have started; a call
    that waits for an answer nobody gave yet cannot have run."""
    return {
        r.step
        for r in plan.pending_tool_steps(events)
        if plan.possibly_started(events, r.step)
        and not (
            waits(agent, r.call)
            and plan.answered(events, r.step, request_kind(agent, r.call)) is None
        )
    }


def gate(
    kind: InputKind, request: InputRequested, response: dict[str, Any], arguments: Any
) -> ToolResult | None:
    """What the answer to a waiting call's request means: None to run the call (approved,
    with exactly the arguments asked about), else the call's result."""
    if response.get("expired"):
        return ToolResult("error: nobody answered before the request expired", True)
    if kind is InputKind.QUESTION:
        return ToolResult(json.dumps(response.get("answer"), sort_keys=True), False)
    if response.get("approved"):
        if request.arguments_hash != sha256_hex(arguments):
            # the arguments executed are exactly the ones approved, or none
            return ToolResult("error: not approved: the arguments changed", True)
        return None
    reason = response.get("reason") or "no reason given"
    return ToolResult(f"error: not approved: {reason}", True)


# -- effectful calls whose outcome is unknown ---------------------------------------


def tries(tool: ToolDefinition | None) -> int:
    """How many times a call may run in one step: an effectful one once, whatever
    its retries."""
    return 1 if tool is None or tool.effect is Effect.EFFECTFUL else 1 + tool.retries


def unknown_outcome(reason: str) -> str:
    """The synthetic result that tells the model a call's outcome is unknown."""
    if reason == "crash":
        return UNKNOWN_OUTCOME
    return (
        "error: the call timed out and was abandoned; it may or may not have taken "
        "effect: check before repeating it."
    )


def reconciled(response: dict[str, Any]) -> ToolResult | None:
    """What a reconciliation answer means: None when the call was not executed (it
    runs now, once), else the call's outcome as someone reported it."""
    outcome = response.get("outcome")
    if outcome == ReconcileOutcome.NOT_EXECUTED:
        return None
    if outcome == ReconcileOutcome.SUCCEEDED:
        return ToolResult(content_of(response.get("result")), False)
    if outcome == ReconcileOutcome.FAILED:
        return ToolResult(f"error: {response.get('error')}", True)
    # expired unanswered: the outcome stays unknown
    return ToolResult(UNKNOWN_OUTCOME + " Nobody reconciled it in time.", True)


# -- bounds ---------------------------------------------------------------------


def bounds(
    agent: Limits, turn_budget: dict[str, Any] | None, events: Sequence[JournalEntry]
) -> Limits:
    """The turn's bounds now: the agent's limits lowered by the turn's budget, grown by
    every approved budget extension."""
    limits = budget.effective_limits(agent, turn_budget)
    grants = []
    for e in events:
        if e.type != EventType.INPUT_REQUESTED:
            continue
        request = InputRequested.from_json(e.data)
        if request.kind == InputKind.BUDGET_EXTENSION:
            response = plan.answer(events, request.request_id) or {}
            if response.get("approved"):
                # an approval naming no amounts doubles the bound that was reached
                grants.append(response.get("extend") or request.detail["default_grant"])
    return budget.extended(limits, grants)


def check_step(
    limits: Limits,
    events: Sequence[JournalEntry],
    elapsed: float,
    action: plan.CallModel | plan.RunTool,
) -> None:
    """``BudgetExceeded`` if the step would pass a bound."""
    done = plan.progress(events)
    if isinstance(action, plan.CallModel):
        budget.check_model_call(limits, done, elapsed)
    else:
        budget.check_tool_call(limits, done, elapsed)


def extension_refused(events: Sequence[JournalEntry], step: int) -> bool:
    """Whether the step's last budget extension was refused, or nobody answered it in
    time: the bound stands."""
    last = plan.answered(events, step, InputKind.BUDGET_EXTENSION)
    return last is not None and not last[1].get("approved")


def extension_detail(exc: BudgetExceeded) -> dict[str, Any]:
    """What a budget extension request says about the bound reached."""
    return {
        "bound": exc.bound,
        "limit": exc.limit,
        "message": str(exc),
        "default_grant": budget.default_grant(exc),
    }


def remaining(
    agent: Limits,
    turn_budget: dict[str, Any] | None,
    events: Sequence[JournalEntry],
    elapsed: float,
) -> dict[str, float]:
    """What the turn has left of each bound: what children's budgets are cut from."""
    limits = budget.effective_limits(agent, turn_budget)
    done = plan.progress(events)
    used_model = done.model_calls
    left = {
        "max_iterations": limits.max_iterations - used_model,
        "max_model_calls": limits.max_model_calls - used_model,
        "max_tool_calls": limits.max_tool_calls - done.tool_calls,
        "max_tokens": limits.max_tokens - done.tokens,
        "max_seconds": limits.max_seconds - elapsed,
    }
    if limits.max_cost_usd is not None:
        left["max_cost_usd"] = limits.max_cost_usd - done.cost_usd
    return left


# -- delegation -----------------------------------------------------------------


def delegation_depth(turn_input: dict[str, Any] | None) -> int:
    """How deep in a delegation the turn runs (0: not delegated)."""
    return TurnInput.from_json(turn_input).depth


def as_this_turn_sees_it(
    agent: AgentDefinition, turn_input: dict[str, Any] | None
) -> AgentDefinition:
    """The agent narrowed to what the turn was admitted with: a delegated child's tools
    are the allowlist pinned in its input (runtime/delegation.py)."""
    link = TurnInput.from_json(turn_input).link
    if link is not None and isinstance(link.get("tools"), list):
        allowed = set(link["tools"])
        agent = replace(agent, tools=tuple(x for x in agent.tools if x.name in allowed))
    return agent


# -- the final answer -------------------------------------------------------------


def settlement(
    schema: dict[str, Any] | None, text: str
) -> tuple[TurnState, EventType, dict[str, Any], dict[str, Any]]:
    """How a final answer settles the turn: (state, terminal event, its data, the
    turn's result or error): completed, or failed ``output_invalid``."""
    result: dict[str, Any] = {"text": text}
    if schema is not None:
        try:
            output = json.loads(text)
            validate(output, schema)
        except (ValueError, jsonschema.ValidationError) as exc:
            reason = getattr(exc, "message", None) or str(exc)
            error = {
                "code": ErrorCode.OUTPUT_INVALID.value,
                "message": f"final answer does not match the output schema: {reason}",
            }
            failed = TurnFailed(error=error).to_json()
            return TurnState.FAILED, EventType.TURN_FAILED, failed, {"error": error}
        result["output"] = output
    completed = TurnCompleted(result=result).to_json()
    return TurnState.COMPLETED, EventType.TURN_COMPLETED, completed, {"result": result}


def correction(
    events: Sequence[JournalEntry], fields: dict[str, Any], retries: int
) -> dict[str, Any] | None:
    """An invalid final answer the model may correct: what it is told was wrong (the
    turn does not settle), or None once its ``output_retries`` are used."""
    error = fields.get("error") or {}
    # only a model's outcome carries one (runtime/payloads.py)
    used = sum(
        1
        for e in events
        if e.type == EventType.MODEL_COMPLETED and ModelCompleted.from_json(e.data).correction
    )
    if error.get("code") == ErrorCode.OUTPUT_INVALID and used < retries:
        return {"n": used + 1, "error": error["message"]}
    return None
