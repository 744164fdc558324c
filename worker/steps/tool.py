"""A tool step: run the call (with its retries and timeout), or first ask the person
it waits for, act on a reconciliation answer, supply external credentials, and
follow the agent's policy for an effectful call whose outcome is unknown (after a
crash, or a timeout). What an answer means is runtime/decisions.py's.
"""

from __future__ import annotations

import time
from typing import Any

from runtime import decisions, plan
from runtime.agents.definition import AgentDefinition, UnknownOutcomePolicy
from runtime.agents.tools import Effect, ToolDefinition
from runtime.inputs import RECONCILIATION_SCHEMA, InputKind
from runtime.payloads import ToolCompleted, ToolInterrupted
from runtime.states import EventType, TurnState
from worker import metrics
from worker.errors import IllegalTransition
from worker.steps import Verdict
from worker.tools import NeedsAuth, Ran, TimedOut, meta_of, run_tool
from worker.turn import Turn


class ToolStep:
    """Runs a turn's tool calls (not delegations: worker/steps/delegate.py)."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn

    def step(self, agent: AgentDefinition, action: plan.RunTool, resumed: set[int]) -> Verdict:
        """One tool step; ``resumed``: the steps an earlier attempt may have started
        (this one is taken out of it once handled)."""
        tool = agent.tool(action.call.name)
        if action.step in resumed:
            resumed.discard(action.step)
            verdict = self._resume_tool(agent, action)
            if verdict != "run":
                return verdict
        elif tool is not None and (
            rec := plan.answered(self.turn.events, action.step, InputKind.RECONCILIATION)
        ):
            verdict = self._reconciled(tool, action, rec[1])
            if verdict != "run":
                return verdict
            # not executed: run it now, once; its approval (if any) was given before
            return self._run_tool(agent, tool, action)
        if tool is not None and tool.waits(action.call.arguments):
            verdict = self._gate(tool, action)
            if verdict != "run":
                return verdict
        return self._run_tool(agent, tool, action)

    def _reconciled(
        self, tool: ToolDefinition, action: plan.RunTool, response: dict[str, Any]
    ) -> Verdict:
        """Act on a reconciliation answer: the call's outcome as someone reported it."""
        result = decisions.reconciled(response)
        if result is None:
            return "run"
        self._settle_tool(
            tool,
            action,
            result.content,
            is_error=result.is_error,
            reconciled=response.get("outcome"),
        )
        return "settled"

    def _settle_tool(
        self,
        tool: ToolDefinition,
        action: plan.RunTool,
        content: str,
        *,
        is_error: bool,
        type: EventType = EventType.TOOL_COMPLETED,
        **extra: Any,
    ) -> None:
        message = plan.tool_message(action.call, content, is_error=is_error)
        outcome = ToolCompleted if type is EventType.TOOL_COMPLETED else ToolInterrupted
        data = outcome(message=message.to_json(), **meta_of(tool), **extra)
        self.turn.commit(TurnState.RUNNING, type, data.to_json(), step=action.step)

    def _run_tool(
        self, agent: AgentDefinition, tool: ToolDefinition | None, action: plan.RunTool
    ) -> Verdict:
        """Run the call (again, for a read or idempotent one that timed out) and commit
        its outcome; an effectful call that timed out follows the unknown-outcome policy."""
        turn = self.turn
        t = turn.record
        auth: dict[str, Any] | None = None
        asked = plan.answered(turn.events, action.step, InputKind.EXTERNAL_AUTH)
        if asked is not None and tool is not None:
            if asked[1].get("expired"):
                self._settle_tool(
                    tool,
                    action,
                    "error: nobody provided the credentials before the request expired",
                    is_error=True,
                    error="auth_expired",
                )
                return "settled"
            auth = turn.ctx.secrets.get(t.tenant_id, t.session_id, t.turn_id, asked[0].request_id)
        tries = decisions.tries(tool)
        began, ran = time.monotonic(), 0
        for _ in range(tries):
            ran += 1
            outcome = run_tool(
                agent,
                action.call,
                tenant_id=t.tenant_id,
                session_id=t.session_id,
                turn_id=t.turn_id,
                step=action.step,
                cancelled=turn.should_stop,
                auth=auth,
                max_chars=turn.ctx.settings.max_tool_result_chars,
            )
            if not isinstance(outcome, TimedOut):
                break
            turn.cp.heartbeat.check()
        seconds = time.monotonic() - began
        metrics.step("tool", agent.name, seconds)
        # the wall time of every try, and the tries after the first
        timing: dict[str, Any] = {"duration_ms": round(seconds * 1000), "retries": ran - 1}
        if isinstance(outcome, Ran):
            data = ToolCompleted(message=outcome.message.to_json(), **outcome.meta, **timing)
            turn.commit(
                TurnState.RUNNING, EventType.TOOL_COMPLETED, data.to_json(), step=action.step
            )
            if asked is not None:
                turn.ctx.secrets.discard(t.tenant_id, t.session_id, t.turn_id, asked[0].request_id)
            return "settled"
        assert tool is not None  # an unknown tool never runs, so never times out or asks
        if isinstance(outcome, NeedsAuth):
            need = outcome.request
            turn.ask(
                InputKind.EXTERNAL_AUTH,
                step=action.step,
                tool=tool,
                call=action.call,
                response_schema=need.schema,
                expires_in=tool.expires_in,
                answered_by=tool.answered_by,
                detail={
                    "provider": need.provider,
                    "scopes": list(need.scopes),
                    "message": need.message,
                },
            )
            return "parked"
        return self._timed_out(agent, tool, action, outcome.seconds, tries, timing)

    def _timed_out(
        self,
        agent: AgentDefinition,
        tool: ToolDefinition,
        action: plan.RunTool,
        seconds: float,
        tries: int,
        timing: dict[str, Any],
    ) -> Verdict:
        if tool.effect is not Effect.EFFECTFUL:
            self._settle_tool(
                tool,
                action,
                f"error: timed out after {seconds:g}s ({tries} tries)",
                is_error=True,
                error="tool_timeout",
                **timing,
            )
            return "settled"
        # an abandoned effectful call may still take effect: its outcome is unknown
        return self._unknown_outcome(agent, tool, action, reason="timeout")

    def _resume_tool(self, agent: AgentDefinition, action: plan.RunTool) -> Verdict:
        """A tool call found without an outcome on resume: "run" it again, or it was
        "settled" with a synthetic result, or the turn is "parked"."""
        tool = agent.tool(action.call.name)
        if tool is None or tool.effect is not Effect.EFFECTFUL:
            return "run"  # read and idempotent tools run again with the same key
        return self._unknown_outcome(agent, tool, action, reason="crash")

    def _unknown_outcome(
        self, agent: AgentDefinition, tool: ToolDefinition, action: plan.RunTool, *, reason: str
    ) -> Verdict:
        """An effectful call that may or may not have taken effect: park the turn on a
        reconciliation request, or (policy interrupt) tell the model the outcome is
        unknown."""
        if agent.unknown_outcome is UnknownOutcomePolicy.RECONCILE:
            self.turn.ask(
                InputKind.RECONCILIATION,
                step=action.step,
                tool=tool,
                call=action.call,
                response_schema=RECONCILIATION_SCHEMA,
                expires_in=agent.requests_expire_in,
                answered_by=agent.answered_by,
                detail={"reason": reason},
                state=TurnState.NEEDS_RECONCILIATION,
            )
            return "parked"
        self._settle_tool(
            tool,
            action,
            decisions.unknown_outcome(reason),
            is_error=True,
            type=EventType.TOOL_INTERRUPTED,
            reason=reason,
        )
        return "settled"

    def _gate(self, tool: ToolDefinition, action: plan.RunTool) -> Verdict:
        """A call that waits for a person: ask ("parked"), or act on the answer: "run"
        the approved call, or "settled" with the answer or refusal as its result."""
        kind = tool.request_kind()
        asked = plan.answered(self.turn.events, action.step, kind)
        if asked is None:
            if plan.requests(self.turn.events, action.step, kind):
                # asked, and the turn runs without an answer: only a bug gets here
                raise IllegalTransition("a tool step ran on before its request was answered")
            self.turn.ask(
                kind,
                step=action.step,
                tool=tool,
                call=action.call,
                response_schema=tool.response_schema(),
                expires_in=tool.expires_in,
                answered_by=tool.answered_by,
            )
            return "parked"
        request, response = asked
        if request.tool is not None and request.tool != tool.ref():
            # answered for the tool as it was before the turn moved to another
            # definition (docs/deploy.md): never applied to another version or schema
            self.turn.ask(
                kind,
                step=action.step,
                tool=tool,
                call=action.call,
                response_schema=tool.response_schema(),
                expires_in=tool.expires_in,
                answered_by=tool.answered_by,
            )
            return "parked"
        result = decisions.gate(kind, request, response, action.call.arguments)
        if result is None:
            return "run"
        self._settle_tool(tool, action, result.content, is_error=result.is_error)
        return "settled"
