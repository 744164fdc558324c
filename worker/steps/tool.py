"""A tool step: run the call (with its retries and timeout), or first ask the person
it waits for, act on a reconciliation answer, supply external credentials, and
follow the agent's policy for an effectful call whose outcome is unknown (after a
crash, or a timeout). What an answer means is runtime/decisions.py's.
"""

from __future__ import annotations

import contextvars
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from turnkeep.runtime import decisions, input_groups, plan
from turnkeep.runtime.agents.definition import AgentDefinition, UnknownOutcomePolicy
from turnkeep.runtime.agents.tools import Effect, ToolDefinition
from turnkeep.runtime.inputs import RECONCILIATION_SCHEMA, RUNTIME, InputKind
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.payloads import ToolCompleted, ToolInterrupted
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.runtime.timers import TIMER_SCHEMA
from turnkeep.worker import metrics
from turnkeep.worker.errors import IllegalTransition
from turnkeep.worker.steps import Verdict
from turnkeep.worker.tools import NeedsAuth, Ran, Sleeps, TimedOut, meta_of, run_tool
from turnkeep.worker.turn import TurnHandle

_pool_lock = threading.Lock()
_pools: dict[int, ThreadPoolExecutor] = {}


def batch_pool(size: int) -> ThreadPoolExecutor:
    """The process's threads for the calls of a batch: their number is the worker-wide
    bound on tool calls running side by side (a turn's own: ``max_parallel_tools``)."""
    with _pool_lock:
        pool = _pools.get(size)
        if pool is None:
            pool = _pools[size] = ThreadPoolExecutor(size, thread_name_prefix="tool-batch")
        return pool


class ToolStep:
    """Runs a turn's tool calls (not delegations: worker/steps/delegate.py)."""

    def __init__(self, turn: TurnHandle) -> None:
        self.turn = turn

    def batchable(self, agent: AgentDefinition, action: plan.RunTool) -> list[plan.RunTool]:
        """The calls of one model answer, from ``action`` on, that may run side by side:
        consecutive read or idempotent calls of the agent's own tools that wait for
        nobody and asked for nothing before, as many as ``max_parallel_tools`` and the
        turn's tool-call budget allow. Effectful calls run alone: should a park cut a
        batch short, the outcome of a call that ran beside it is lost, and only a read
        or idempotent call may run again."""
        events = self.turn.events
        pending = plan.pending_tool_steps(events)
        if len(pending) < 2 or pending[0].step != action.step:
            return [action]
        limits = decisions.bounds(agent.limits, self.turn.record.budget, events)
        room = limits.max_tool_calls - plan.progress(events).tool_calls
        asked = {e.step for e in events if e.type == EventType.INPUT_REQUESTED}
        batch: list[plan.RunTool] = []
        for a in pending[: max(1, min(agent.max_parallel_tools, room))]:
            tool = agent.tool(a.call.name)
            if (
                tool is None
                or agent.specialist(a.call.name) is not None
                or tool.effect is Effect.EFFECTFUL
                or tool.waits(a.call.arguments)
                or a.step in asked
            ):
                break
            batch.append(a)
        return batch if len(batch) > 1 else [action]

    def batch(
        self, agent: AgentDefinition, actions: list[plan.RunTool], resumed: set[int]
    ) -> Verdict:
        """Run ``batchable``'s calls side by side and commit each outcome as its own
        fenced step, in call order: one that finishes early waits for its
        predecessors' commits, so the journal is the same on every rerun. A crash
        leaves the committed ones done; the next attempt runs the others again, each
        under its own idempotency key. Asked to stop, the calls that had not started
        are committed as not run."""
        turn = self.turn
        for a in actions:
            resumed.discard(a.step)  # read and idempotent: they run again, same key
        pool = batch_pool(turn.ctx.settings.worker.concurrency)
        stop = threading.Event()

        def execute(a: plan.RunTool) -> tuple[Any, dict[str, Any]] | None:
            # a call still waiting for a thread once the turn is to stop never starts
            return None if stop.is_set() else self._execute(agent, a)

        futures: list[Future[tuple[Any, dict[str, Any]] | None]] = [
            pool.submit(contextvars.copy_context().run, execute, a) for a in actions
        ]
        try:
            for i, (a, f) in enumerate(zip(actions, futures, strict=True)):
                tool = agent.tool(a.call.name)
                if i and turn.cancelled():
                    stop.set()
                done = None if stop.is_set() and f.cancel() else f.result()
                if done is None:
                    assert tool is not None
                    self._settle_tool(
                        tool,
                        a,
                        "error: not run: the turn was cancelled",
                        is_error=True,
                        error="not_run",
                    )
                    continue
                outcome, timing = done
                if self._record(agent, tool, a, outcome, timing) == "parked":
                    return "parked"
                if i < len(actions) - 1:
                    hit(FaultPoint.BETWEEN_BATCH_COMMITS)
        finally:
            stop.set()
            for f in futures:
                f.cancel()
        return "settled"

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
            verdict = self._gate(agent, tool, action)
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
        woken = plan.answered(turn.events, action.step, InputKind.TIMER) is not None
        outcome, timing = self._execute(agent, action, auth, woken=woken)
        return self._record(agent, tool, action, outcome, timing, asked)

    def _execute(
        self,
        agent: AgentDefinition,
        action: plan.RunTool,
        auth: dict[str, Any] | None = None,
        *,
        woken: bool = False,
    ) -> tuple[Any, dict[str, Any]]:
        """Run the call, with its retries: (outcome, timing). Writes
        nothing, so it may run beside the other calls of a batch (``batch``)."""
        turn = self.turn
        t = turn.record
        tool = agent.tool(action.call.name)
        tries = decisions.tries(tool)
        began, ran = time.monotonic(), 0
        outcome: Any = None
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
                max_chars=turn.ctx.settings.bounds.max_tool_result_chars,
                woken=woken,
                submitted_by=t.submitted_by,
            )
            if not isinstance(outcome, TimedOut):
                break
            turn.cp.heartbeat.check()
        seconds = time.monotonic() - began
        metrics.step("tool", agent.name, seconds)
        # the wall time of every try, and the tries after the first
        timing: dict[str, Any] = {"duration_ms": round(seconds * 1000), "retries": ran - 1}
        return outcome, timing

    def _record(
        self,
        agent: AgentDefinition,
        tool: ToolDefinition | None,
        action: plan.RunTool,
        outcome: Any,
        timing: dict[str, Any],
        asked: Any = None,
    ) -> Verdict:
        """Commit a call's outcome (or ask, or follow the unknown-outcome policy)."""
        turn = self.turn
        t = turn.record
        if isinstance(outcome, Ran):
            data = ToolCompleted(message=outcome.message.to_json(), **outcome.meta, **timing)
            turn.commit(
                TurnState.RUNNING, EventType.TOOL_COMPLETED, data.to_json(), step=action.step
            )
            if asked is not None:
                turn.ctx.secrets.discard(t.tenant_id, t.session_id, t.turn_id, asked[0].request_id)
            return "settled"
        assert tool is not None  # an unknown tool never runs, so never times out or asks
        if isinstance(outcome, Sleeps):
            # a timer: the turn waits holding nothing; the scan wakes it (runtime/timers.py)
            until = outcome.request.until
            turn.ask(
                InputKind.TIMER,
                step=action.step,
                tool=tool,
                call=action.call,
                response_schema=TIMER_SCHEMA,
                expires_in=outcome.request.seconds(),
                answered_by=RUNTIME,
                detail={"wake_at": until.isoformat()},
            )
            return "parked"
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
        return self._timed_out(agent, tool, action, outcome.seconds, timing)

    def _timed_out(
        self,
        agent: AgentDefinition,
        tool: ToolDefinition,
        action: plan.RunTool,
        seconds: float,
        timing: dict[str, Any],
    ) -> Verdict:
        if tool.effect is not Effect.EFFECTFUL:
            self._settle_tool(
                tool,
                action,
                f"error: timed out after {seconds:g}s ({decisions.tries(tool)} tries)",
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

    def _gate(self, agent: AgentDefinition, tool: ToolDefinition, action: plan.RunTool) -> Verdict:
        """A call that waits for a person: ask ("parked"), or act on the answer: "run"
        the approved call, or "settled" with the answer or refusal as its result."""
        kind = tool.request_kind()
        asked = plan.answered(self.turn.events, action.step, kind)
        if asked is None and plan.requests(self.turn.events, action.step, kind):
            if kind is InputKind.APPROVAL:
                # asked together with others, and a crash cut the asking short
                return self._ask_together(self._together(agent, action))
            # asked, and the turn runs without an answer: only a bug gets here
            raise IllegalTransition("a tool step ran on before its request was answered")
        # an answer given for the tool as it was before the turn moved to another
        # definition (docs/deploy.md) is never applied to another version or schema
        if asked is None or (asked[0].tool is not None and asked[0].tool != tool.ref()):
            together = self._together(agent, action) if kind is InputKind.APPROVAL else []
            if len(together) > 1:
                return self._ask_together(together)
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
        result = decisions.gate(kind, request, response, action.call.arguments)
        if result is None:
            return "run"
        self._settle_tool(tool, action, result.content, is_error=result.is_error)
        return "settled"

    def _together(
        self, agent: AgentDefinition, action: plan.RunTool
    ) -> list[tuple[plan.RunTool, ToolDefinition]]:
        """The calls of this model answer, from ``action`` on, that wait for an
        approval nobody has given yet: asked for in one wait (runtime/input_groups.py)."""
        events = self.turn.events
        out = []
        for a in plan.pending_tool_steps(events):
            tool = agent.tool(a.call.name)
            if (
                a.step < action.step
                or tool is None
                or agent.specialist(a.call.name) is not None
                or not tool.waits(a.call.arguments)
                or tool.request_kind() is not InputKind.APPROVAL
                or plan.answered(events, a.step, InputKind.APPROVAL) is not None
            ):
                continue
            out.append((a, tool))
        return out

    def _ask_together(self, together: list[tuple[plan.RunTool, ToolDefinition]]) -> Verdict:
        """Ask for the approvals of ``together`` in one wait: each call its own request,
        committed one after another with the turn running, the last one parking it
        with the group (``pending_input``). After a crash between two of them, those
        asked already are kept and the rest asked."""
        turn = self.turn
        asked: list[dict[str, Any]] = []
        for i, (a, tool) in enumerate(together):
            before = plan.requests(turn.events, a.step, InputKind.APPROVAL)
            if before and plan.answer(turn.events, before[-1].request_id) is None:
                asked.append(before[-1].to_json())
                continue
            request = turn.request(
                InputKind.APPROVAL,
                step=a.step,
                tool=tool,
                call=a.call,
                response_schema=tool.response_schema(),
                expires_in=tool.expires_in,
                answered_by=tool.answered_by,
                # which of how many: only the last one's commit parks the turn
                detail={input_groups.TOGETHER: {"nth": i + 1, "of": len(together)}},
            )
            asked.append(request)
            if i < len(together) - 1:
                turn.commit(TurnState.RUNNING, EventType.INPUT_REQUESTED, request, step=a.step)
                hit(FaultPoint.BETWEEN_GROUP_ASKS)
            else:
                group = input_groups.pending(asked)
                turn.commit(
                    TurnState.WAITING,
                    EventType.INPUT_REQUESTED,
                    request,
                    step=a.step,
                    pending_input=group,
                )
                return "parked"
        # every request of the group committed and the turn running: only a bug
        raise IllegalTransition("a group of approvals was asked and the turn ran on")
