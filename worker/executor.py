"""The turn executor: lease, claim, then run the session's lane turn by turn.

The durable order (DESIGN.md): take the Redis lease above the Postgres floor, claim
the fence in Postgres, start the lane head (attempt + 1, capped), rebuild it from
the journal, and step it with one fenced commit per step until it settles or waits.
Any ``LeaseLost`` ends the task at once without another write.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema

from runtime import budget, plan
from runtime.definitions import AgentDefinition, Effect, ToolDefinition, UnknownOutcomePolicy
from runtime.errors import (
    BudgetExceeded,
    ContextOverflow,
    ModelCallCancelled,
    ModelError,
    UnknownAgent,
)
from runtime.faults import FaultPoint, hit
from runtime.hashing import sha256_hex
from runtime.messages import Message, ModelRequest, ToolSpec
from runtime.states import TRANSITIONS, ErrorCode, EventType, TurnState
from runtime.validation import validate
from store.errors import LeaseLost
from store.records import Appended, EventRecord, TurnRecord
from worker.checkpoint import Checkpointer
from worker.context import WorkerContext
from worker.errors import IllegalTransition, TurnCancelled
from worker.heartbeat import Heartbeat
from worker.providers import provider_for
from worker.tools import run_tool

log = logging.getLogger(__name__)

#: seconds between cancellation reads while a model call streams or a tool runs
CANCEL_POLL = 2.0
#: live deltas are coalesced for this long (or this many characters) per publish
DELTA_FLUSH_SECONDS = 0.05
DELTA_FLUSH_CHARS = 256

_owner_seq = iter(range(1, 1 << 62))
_owner_lock = threading.Lock()


def _owner(ctx: WorkerContext) -> str:
    with _owner_lock:
        return f"{ctx.owner_prefix}:{next(_owner_seq)}"


def run_session(ctx: WorkerContext, tenant_id: str, session_id: str) -> str:
    """Run a session's lane while this task holds its lease. Returns what happened."""
    store = ctx.store
    floor = store.fence_floor(tenant_id, session_id)
    granted_at = time.monotonic()
    lease = ctx.leases.grant(tenant_id, session_id, _owner(ctx), floor=floor)
    if lease is None:
        return "busy"  # a live holder runs the lane; this delivery is a harmless duplicate
    heartbeat = Heartbeat(ctx.leases, lease, granted_at=granted_at).start()
    outcome = "idle"
    try:
        if not store.claim(tenant_id, session_id, lease.fence):
            return "stale"  # a newer fence was accepted first
        cp = Checkpointer(store, ctx.publisher, heartbeat)
        while True:
            turn = store.lane_head(tenant_id, session_id)
            if turn is None or not turn.runnable:
                break
            TurnRunner(ctx, cp, turn).run()
            outcome = "ran"
    except LeaseLost:
        log.warning("lease lost for a session; this worker stopped writing to it")
        return "lease_lost"
    finally:
        heartbeat.stop()
        try:
            ctx.leases.release(lease)
        except Exception as exc:  # the TTL frees it anyway
            log.warning("lease release failed: %s", type(exc).__name__)
    # An admission that committed while we held the lease may have had its message
    # dropped as "busy"; look once more now that the lease is free.
    head = store.lane_head(tenant_id, session_id)
    if head is not None and head.runnable:
        from worker.app import enqueue

        enqueue(tenant_id, session_id)
    return outcome


class TurnRunner:
    """Steps one turn to a settled state, one checkpoint per step."""

    def __init__(self, ctx: WorkerContext, cp: Checkpointer, turn: TurnRecord) -> None:
        self.ctx = ctx
        self.cp = cp
        self.turn = turn
        self.revision = turn.revision
        self.state = turn.state
        self.cancel_requested = turn.cancel_requested
        self.events: list[EventRecord] = []
        self.prior: list[Message] = []
        self._cancel_checked = 0.0

    # -- commits -----------------------------------------------------------------

    def _commit(
        self, state: TurnState, type: EventType, data: dict[str, Any], **kw: Any
    ) -> Appended:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"{self.state.value} -> {state.value}")
        ap = self.cp.commit(
            self.turn.turn_id, self.revision, state=state, type=type, data=data, **kw
        )
        self.revision = ap.revision
        self.state = state
        self.cancel_requested = self.cancel_requested or ap.cancel_requested
        self._cancel_checked = time.monotonic()
        self.events.append(ap.event)
        return ap

    def _fail(self, code: str, message: str) -> None:
        error = {"code": code, "message": message}
        self._commit(TurnState.FAILED, EventType.TURN_FAILED, {"error": error}, error=error)

    # -- the loop ----------------------------------------------------------------

    def run(self) -> None:
        agent = self._start()
        if agent is None:
            return
        try:
            self._loop(agent)
        except (TurnCancelled, ModelCallCancelled):
            # a call aborted because the lease was lost is no cancellation: LeaseLost
            self.cp.heartbeat.check()
            self._commit(TurnState.CANCELLED, EventType.TURN_CANCELLED, {})
        except BudgetExceeded as exc:
            self._fail(ErrorCode.BUDGET_EXCEEDED, str(exc))
        except ContextOverflow as exc:
            self._fail(ErrorCode.CONTEXT_OVERFLOW, str(exc))
        except ModelError as exc:
            self._fail(ErrorCode.MODEL_FAILED, f"{exc.code}: {exc}")

    def _start(self) -> AgentDefinition | None:
        """Claim the turn for this attempt; None when it was settled instead."""
        turn = self.turn
        try:
            agent: AgentDefinition | None = self.ctx.agents.get(turn.agent_name)
        except UnknownAgent:
            agent = None
        if agent is None or agent.definition_hash != turn.agent_hash:
            self._fail(ErrorCode.AGENT_CHANGED, "the turn's agent definition is not served here")
            return None
        # a turn coming back from a wait is not a retry: only claims of a queued or
        # running turn count towards the attempt cap
        inc = 0 if turn.state is TurnState.WAITING else 1
        if inc and turn.attempt >= self.ctx.settings.max_attempts:
            self._fail(ErrorCode.RETRY_EXHAUSTED, f"claimed {turn.attempt} times without settling")
            return None
        self._commit(
            TurnState.RUNNING,
            EventType.TURN_STARTED,
            {"attempt": turn.attempt + inc},
            attempt_inc=inc,
        )
        prior, self.events = self.ctx.store.turn_context(
            turn.tenant_id, turn.session_id, turn.turn_id, turn.ordinal
        )
        self.prior = plan.history(prior)
        return agent

    def _loop(self, agent: AgentDefinition) -> None:
        turn = self.turn
        # tool calls without an outcome that an earlier attempt may have started
        resumed = {
            r.step
            for r in plan.pending_tool_steps(self.events)
            if plan.possibly_started(self.events, r.step)
        }
        limits = budget.effective_limits(agent.limits, turn.budget)
        while True:
            self.cp.heartbeat.check()
            if self.cancel_requested or self._poll_cancel(force=False):
                raise TurnCancelled()
            action = plan.next_action(self.events)
            done = plan.progress(self.events)
            elapsed = (datetime.now(UTC) - turn.created_at).total_seconds()
            if isinstance(action, plan.Finish):
                self._finish(agent, action.text)
                return
            if isinstance(action, plan.CallModel):
                budget.check_model_call(limits, done, elapsed)
                self._call_model(agent, action.step)
                continue
            budget.check_tool_call(limits, done, elapsed)
            verdict = "run"
            if action.step in resumed:
                resumed.discard(action.step)
                verdict = self._resume_tool(agent, action)
            tool = agent.tool(action.call.name)
            if verdict == "run" and tool is not None and tool.waits:
                verdict = self._gate(tool, action)
            if verdict == "parked":
                return
            if verdict == "run":
                self._run_tool(agent, action)

    def _poll_cancel(self, *, force: bool) -> bool:
        # at most one read per CANCEL_POLL seconds: cancellation is a safe-point request,
        # not an interrupt, and every commit's RETURNING already reports it for free
        now = time.monotonic()
        if not force and now - self._cancel_checked < CANCEL_POLL:
            return self.cancel_requested
        self._cancel_checked = now
        t = self.turn
        self.cancel_requested = self.ctx.store.get_turn(
            t.tenant_id, t.session_id, t.turn_id
        ).cancel_requested
        return self.cancel_requested

    def _should_stop(self) -> bool:
        return self.cp.heartbeat.lost or self._poll_cancel(force=False)

    def _request(
        self, agent: AgentDefinition, messages: list[Message], *, tools: bool = True
    ) -> ModelRequest:
        return ModelRequest(
            model=agent.model,
            instructions=agent.instructions,
            messages=tuple(messages),
            tools=tuple(ToolSpec(x.name, x.description, x.parameters) for x in agent.tools)
            if tools
            else (),
            options=dict(agent.model_options),
        )

    def _call_model(self, agent: AgentDefinition, step: int) -> None:
        t = self.turn
        publisher = self.ctx.publisher
        provider = provider_for(agent)
        hit(FaultPoint.BEFORE_MODEL_CALL)
        while True:
            messages = plan.transcript(t.input["messages"], self.events, self.prior)
            try:
                deltas = DeltaBuffer(
                    lambda text: publisher.delta(t.tenant_id, t.session_id, t.turn_id, step, text)
                )
                try:
                    response = provider.complete(
                        self._request(agent, messages),
                        on_delta=deltas.add,
                        should_stop=self._should_stop,
                    )
                finally:
                    deltas.flush()
                break
            except ContextOverflow:
                # one compaction per turn, then the same call once more
                if plan.compacted(self.events):
                    raise
                self._compact(agent, step, messages)
        hit(FaultPoint.AFTER_MODEL_CALL)
        self._commit(
            TurnState.RUNNING,
            EventType.MODEL_COMPLETED,
            {
                "message": response.to_message().to_json(),
                "usage": response.usage.to_json(),
                "model": response.model,
            },
            step=step,
        )

    def _compact(self, agent: AgentDefinition, step: int, messages: list[Message]) -> None:
        summary = provider_for(agent).complete(
            self._request(agent, plan.compaction_request(messages), tools=False),
            should_stop=self._should_stop,
        )
        covered = [e.seq for e in self.events if e.type in plan.OUTCOME_TYPES]
        self._commit(
            TurnState.RUNNING,
            EventType.CONTEXT_COMPACTED,
            {
                "summary": summary.text,
                "model": summary.model,
                "before_step": step,
                "prior_messages": len(self.prior),
                "from_seq": min(covered, default=None),
                "to_seq": max(covered, default=None),
            },
        )

    def _run_tool(self, agent: AgentDefinition, action: plan.RunTool) -> None:
        t = self.turn
        message, meta = run_tool(
            agent,
            action.call,
            tenant_id=t.tenant_id,
            session_id=t.session_id,
            turn_id=t.turn_id,
            step=action.step,
            cancelled=self._should_stop,
        )
        self._commit(
            TurnState.RUNNING,
            EventType.TOOL_COMPLETED,
            {"message": message.to_json(), **meta},
            step=action.step,
        )

    def _resume_tool(self, agent: AgentDefinition, action: plan.RunTool) -> str:
        """A tool call found without an outcome on resume: "run" it again, or it was
        "settled" with a synthetic result, or the turn is "parked"."""
        tool = agent.tool(action.call.name)
        if tool is None or tool.effect is not Effect.EFFECTFUL:
            return "run"  # read and idempotent tools run again with the same key
        meta = {"tool": tool.name, "version": tool.version, "effect": tool.effect.value}
        if agent.unknown_outcome is UnknownOutcomePolicy.RECONCILE:
            self._commit(
                TurnState.NEEDS_RECONCILIATION,
                EventType.TURN_NEEDS_RECONCILIATION,
                {**meta, "step": action.step, "call_id": action.call.id},
            )
            return "parked"
        message = plan.tool_message(
            action.call,
            "error: the outcome of this call is unknown (the worker running it stopped). "
            "It may or may not have taken effect; check before repeating it.",
            is_error=True,
        )
        self._commit(
            TurnState.RUNNING,
            EventType.TOOL_INTERRUPTED,
            {"message": message.to_json(), **meta},
            step=action.step,
        )
        return "settled"

    def _gate(self, tool: ToolDefinition, action: plan.RunTool) -> str:
        """A tool that waits for a person: ask ("parked"), or act on the answer: "run"
        the approved call, or "settled" with the answer or refusal as its result."""
        response = plan.resolution(self.events, action.step)
        meta = {"tool": tool.name, "version": tool.version, "effect": tool.effect.value}
        if response is None:
            self._request_input(tool, action)
            return "parked"
        if response.get("expired"):
            content, is_error = "error: nobody answered before the request expired", True
        elif tool.asks is not None:
            content, is_error = json.dumps(response.get("answer"), sort_keys=True), False
        elif response.get("approved"):
            return "run"
        else:
            reason = response.get("reason") or "no reason given"
            content, is_error = f"error: not approved: {reason}", True
        message = plan.tool_message(action.call, content, is_error=is_error)
        self._commit(
            TurnState.RUNNING,
            EventType.TOOL_COMPLETED,
            {"message": message.to_json(), **meta},
            step=action.step,
        )
        return "settled"

    def _request_input(self, tool: ToolDefinition, action: plan.RunTool) -> None:
        schema = tool.response_schema()
        request = {
            "request_id": plan.request_id(action.step),
            "kind": "input" if tool.asks is not None else "approval",
            "step": action.step,
            "tool": tool.name,
            "version": tool.version,
            "call_id": action.call.id,
            "arguments": action.call.arguments,
            "arguments_hash": sha256_hex(action.call.arguments),
            "response_schema": schema,
            "response_schema_hash": sha256_hex(schema),
            "expires_at": (datetime.now(UTC) + timedelta(seconds=tool.expires_in)).isoformat(),
        }
        self._commit(
            TurnState.WAITING,
            EventType.INPUT_REQUESTED,
            request,
            step=action.step,
            pending_input=request,
        )

    def _finish(self, agent: AgentDefinition, text: str) -> None:
        schema = self.turn.output_schema or agent.output_schema
        result: dict[str, Any] = {"text": text}
        if schema is not None:
            try:
                output = json.loads(text)
                validate(output, schema)
            except (ValueError, jsonschema.ValidationError) as exc:
                reason = getattr(exc, "message", None) or str(exc)
                self._fail(
                    ErrorCode.OUTPUT_INVALID,
                    f"final answer does not match the output schema: {reason}",
                )
                return
            result["output"] = output
        self._commit(
            TurnState.COMPLETED, EventType.TURN_COMPLETED, {"result": result}, result=result
        )


class DeltaBuffer:
    """Coalesces a model's live text deltas: one publish per ~50 ms or 256 characters,
    not one per token, so streaming does not cost a Redis round trip per word."""

    def __init__(self, send: Callable[[str], None]) -> None:
        self.send = send
        self.parts: list[str] = []
        self.size = 0
        self.since = time.monotonic()

    def add(self, text: str) -> None:
        if not self.parts:
            self.since = time.monotonic()
        self.parts.append(text)
        self.size += len(text)
        if self.size >= DELTA_FLUSH_CHARS or time.monotonic() - self.since >= DELTA_FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            text, self.parts, self.size = "".join(self.parts), [], 0
            self.send(text)
