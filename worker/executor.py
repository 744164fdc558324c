"""The turn executor: lease, then run the session's lane turn by turn.

The durable order (DESIGN.md), in as few statements as it allows: take the Redis
lease (the Postgres fence floor is read only when Redis lost its counter); one
statement claims the fence, starts the lane head's attempt and returns its context;
one fenced statement per step, the last one settling the turn and saying whether the
lane's next turn can run. Any ``LeaseLost`` ends the task at once without another
write.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import jsonschema

from runtime import (
    budget,
    context,
    delegation,
    inputs,
    logs,
    memory,
    model_policy,
    plan,
    pricing,
    processors,
    tracing,
)
from runtime.definitions import (
    AgentDefinition,
    Effect,
    ToolDefinition,
    UnknownOutcomePolicy,
)
from runtime.delegation import DelegationRefused, Specialist
from runtime.errors import (
    BudgetExceeded,
    ContextOverflow,
    DefinitionError,
    ModelError,
    TransientModelError,
)
from runtime.faults import FaultPoint, hit
from runtime.hashing import sha256_hex
from runtime.inputs import (
    BUDGET_EXTENSION_SCHEMA,
    RECONCILIATION_SCHEMA,
    RUNTIME,
    InputKind,
    ReconcileOutcome,
)
from runtime.messages import Message, ModelRequest, ModelResponse, ToolCall, ToolSpec
from runtime.model_policy import Fallback
from runtime.projects import apply as apply_project
from runtime.providers.base import Provider
from runtime.providers.retry import observe_retries
from runtime.signals import LeaseLost, ModelCallCancelled, TurnCancelled
from runtime.states import TRANSITIONS, ErrorCode, EventType, TurnState
from runtime.validation import validate
from store.errors import NotFound, Unavailable
from store.records import Appended, EventRecord, Started, TurnRecord
from worker import delegation as delegated
from worker import metrics
from worker.checkpoint import Checkpointer, backoff
from worker.errors import IllegalTransition
from worker.memory import recalled, with_memory
from worker.ports import Context
from worker.providers import provider_for
from worker.tools import NeedsAuth, Ran, TimedOut, content_of, meta_of, run_tool

log = logging.getLogger(__name__)

#: seconds between cancellation reads while a model call streams or a tool runs
CANCEL_POLL = 2.0
UNKNOWN_OUTCOME = (
    "error: the outcome of this call is unknown (the worker running it stopped). "
    "It may or may not have taken effect; check before repeating it."
)
#: live deltas are coalesced for this long (or this many characters) per publish
DELTA_FLUSH_SECONDS = 0.05
DELTA_FLUSH_CHARS = 256


class RunOutcome(StrEnum):
    """What one ``run_session`` delivery did (Celery logs it; pinned in a test)."""

    #: ran or settled at least one turn
    RAN = "ran"
    #: nothing to do: the lane is empty or waits for someone's answer
    IDLE = "idle"
    #: another worker holds the session's lease: a harmless duplicate delivery
    BUSY = "busy"
    #: a newer fence was accepted first; nothing was written
    STALE = "stale"
    #: the lease was lost mid-run; this worker stopped writing to the session
    LEASE_LOST = "lease_lost"
    #: this worker has heard nothing from Postgres for over a lease TTL: it took no
    #: lease, and the recovery scan hands the session to a worker that can write
    UNREACHABLE = "unreachable"


_owner_seq = iter(range(1, 1 << 62))
_owner_lock = threading.Lock()


def _owner(ctx: Context) -> str:
    with _owner_lock:
        return f"{ctx.owner_prefix}:{next(_owner_seq)}"


def run_session(ctx: Context, tenant_id: str, session_id: str) -> RunOutcome:
    """Run a session's lane while this task holds its lease. Returns what happened."""
    with logs.bound(tenant=tenant_id, session=session_id):
        return _run_session(ctx, tenant_id, session_id)


def _run_session(ctx: Context, tenant_id: str, session_id: str) -> RunOutcome:
    if not ctx.reaches_postgres():
        # whatever it started here could not be written: the delivery is dropped,
        # and the recovery scan enqueues the unleased session again once it stalls
        return RunOutcome.UNREACHABLE
    granted_at = time.monotonic()
    lease = ctx.leases.grant(
        tenant_id,
        session_id,
        _owner(ctx),
        floor=lambda: ctx.store.fence_floor(tenant_id, session_id),
    )
    if lease is None:
        # a live holder runs the lane; the grant left it a rerun flag, so its
        # release enqueues the session once more should this delivery carry news
        return RunOutcome.BUSY
    heartbeat = ctx.heartbeat(lease, granted_at=granted_at)
    lane = Lane(ctx, Checkpointer(ctx.store, ctx.publisher, heartbeat, ctx.redactor))
    try:
        with logs.bound(fence=lease.fence):
            outcome = lane.run()
    except LeaseLost:
        log.warning("lease lost for a session; this worker stopped writing to it")
        outcome = RunOutcome.LEASE_LOST
    finally:
        heartbeat.stop()
        rerun = lane.rerun
        try:
            rerun = ctx.leases.release(lease).rerun or rerun
        except Exception as exc:  # the TTL frees it anyway; the scan covers the rest
            log.warning("lease release failed: %s", type(exc).__name__)
    if rerun:
        ctx.enqueue(tenant_id, session_id)
    return outcome


class Lane:
    """Runs a session's turns oldest first under one lease, one start statement per
    turn and one statement per step."""

    def __init__(self, ctx: Context, cp: Checkpointer) -> None:
        self.ctx = ctx
        self.cp = cp
        self.lease = cp.lease
        #: enqueue the session again after the release (a claim lost to a stale counter)
        self.rerun = False

    def run(self) -> RunOutcome:
        outcome = RunOutcome.IDLE
        claim = True
        while True:
            started = self._start(claim)
            if not started.claimed:
                metrics.STALE_FENCE_REJECTIONS.inc()
                if not claim:  # a newer fence was accepted since our claim
                    raise LeaseLost("the fence moved on between two turns of the lane")
                return self._lost_claim(started)
            claim = False
            if started.turn is not None:
                if taken_over(started, self.lease.fence):
                    metrics.LEASE_TAKEOVERS.inc()
                    log.info("took over turn %s from an earlier holder", started.turn.turn_id)
                runner = TurnRunner(self.ctx, self.cp, started.turn, started)
                lane_runnable = runner.run()
            elif started.head is not None and started.head.runnable:
                # runnable, but not startable here: an agent definition this worker
                # does not serve, or the attempt cap
                lane_runnable = TurnRunner(self.ctx, self.cp, started.head).refuse()
            else:
                return outcome
            outcome = RunOutcome.RAN
            if not lane_runnable:
                return outcome

    def _start(self, claim: bool) -> Started:
        """The start statement, asking Postgres after a lost reply whether the claim
        landed (it may have: then the attempt starts again under the same fence)."""
        ctx, lease = self.ctx, self.lease
        self.cp.heartbeat.check()
        hit(FaultPoint.BEFORE_START)
        delays = backoff()
        while True:
            try:
                started = ctx.store.start(
                    lease.tenant_id,
                    lease.session_id,
                    lease.fence,
                    claim=claim,
                    agent_hashes=ctx.agents.hashes,
                    max_attempts=ctx.settings.max_attempts,
                )
                break
            except Unavailable:
                log.warning("start failed: postgres unavailable; retrying")
            stored = self._stored_fence(delays)
            if stored > lease.fence:
                raise LeaseLost("a newer fence was accepted while the start was unknown")
            claim = claim and stored < lease.fence
        hit(FaultPoint.AFTER_START)
        if started.events:
            self.cp.publisher.committed(started.events[-1])
        return started

    def _stored_fence(self, delays: Iterator[float]) -> int:
        while True:
            time.sleep(next(delays))
            self.cp.heartbeat.check()
            try:
                return self.ctx.store.fence_floor(self.lease.tenant_id, self.lease.session_id)
            except Unavailable:
                continue

    def _lost_claim(self, started: Started) -> RunOutcome:
        if started.stored_fence < self.lease.fence:
            return RunOutcome.IDLE  # no session row: nothing was ever admitted here
        # Postgres holds a fence at or above Redis's token. While we hold the lease
        # nobody else can have claimed it, so the counter is behind (a restored
        # Redis): raise it, and have the session enqueued again: the next delivery
        # gets a token above every fence used.
        self.ctx.leases.raise_floor(started.stored_fence)
        self.rerun = True
        return RunOutcome.STALE


def taken_over(started: Started, fence: int) -> bool:
    """Whether this start took its turn over: the turn was running under another fence
    (its holder died, or lost the lease, before settling or parking it)."""
    head = started.head
    if head is None or head.state is not TurnState.RUNNING:
        return False
    earlier = started.events[:-1]  # the last one is this start's turn.started
    return any(e.type == EventType.TURN_STARTED and e.fence != fence for e in earlier)


def _waits(agent: AgentDefinition, call: ToolCall) -> bool:
    tool = agent.tool(call.name)
    return tool is not None and tool.waits(call.arguments)


def _kind(agent: AgentDefinition, call: ToolCall) -> InputKind:
    tool = agent.tool(call.name)
    return InputKind.APPROVAL if tool is None else tool.request_kind()


#: what a tool step did: "run" it (next), "settled" (its outcome is committed) or
#: "parked" (the turn waits for an answer)
Verdict = str


class TurnRunner:
    """Steps one turn to a settled state, one checkpoint per step. ``run`` and
    ``refuse`` return whether the lane's next turn can run once this one settled."""

    def __init__(
        self, ctx: Context, cp: Checkpointer, turn: TurnRecord, started: Started | None = None
    ) -> None:
        self.ctx = ctx
        self.cp = cp
        self.turn = turn
        self.revision = turn.revision
        self.state = turn.state
        self.cancel_requested = turn.cancel_requested
        self.events: list[EventRecord] = list(started.events) if started else []
        #: earlier turns' conversation: the window start_turn read (newest compaction on)
        self.prior: tuple[EventRecord, ...] = started.prior if started else ()
        #: the notes of the turn's memory its model calls are shown (docs/memory.md),
        #: read once per attempt by ``_run``; None: no memory, or nothing remembered
        self.recall: Message | None = None
        self._cancel_checked = time.monotonic()
        #: a delegated turn's parent, asked whether it ended at most every CANCEL_POLL
        #: (commits report the turn's own cancellation, never its parent's)
        self._parent = delegated.parent_of(turn)
        self._parent_checked = 0.0
        self.lane_runnable = False

    # -- commits -----------------------------------------------------------------

    def _commit(
        self, state: TurnState, type: EventType, data: dict[str, Any], **kw: Any
    ) -> Appended:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"{self.state.value} -> {state.value}")
        agent = self.turn.agent_name
        with tracing.span("turnkeep.checkpoint", {"turnkeep.event": type.value}) as span:
            began = time.monotonic()
            ap = self.cp.commit(
                self.turn.turn_id, self.revision, state=state, type=type, data=data, **kw
            )
            metrics.step("checkpoint", agent, time.monotonic() - began)
            span.set_attribute("turnkeep.seq", ap.seq)
        if state.terminal:
            error = kw.get("error") or {}
            metrics.finished(agent, state.value, str(error.get("code", "")))
        self.revision = ap.revision
        self.state = state
        self.cancel_requested = self.cancel_requested or ap.cancel_requested
        self._cancel_checked = time.monotonic()
        self.events.extend(ap.events)
        if state.terminal:
            self.lane_runnable = ap.lane_runnable
            self._delegations_ended()
            if ap.webhook:
                # committed: the outbox row is due now; deliver it without waiting
                # for beat's pass (which delivers it should this send be lost)
                t = self.turn
                self.ctx.deliver_webhook(t.tenant_id, t.session_id, t.turn_id)
        return ap

    def _fail(self, code: str, message: str) -> None:
        error = {"code": code, "message": message}
        data: dict[str, Any] = {"error": error}
        agent = self.ctx.agents.by_hash(self.turn.agent_hash)
        if agent is not None and agent.processors:
            # error processors see the typed error; their receipts go on turn.failed
            receipts = processors.run(agent.processors, "error", processors.as_text(error))
            if receipts:
                data["receipts"] = receipts
        self._commit(TurnState.FAILED, EventType.TURN_FAILED, data, error=error)

    # -- processors (runtime/processors.py) ----------------------------------------

    def _processed(self, agent: AgentDefinition, stage: Any, content: Any) -> list[dict[str, Any]]:
        """Run a stage's processors; ``ProcessorBlocked`` on a blocking verdict."""
        if not agent.processors:
            return []
        receipts = processors.run(agent.processors, stage, processors.as_text(content))
        block = processors.blocked(receipts)
        if block is not None:
            raise ProcessorBlocked(f"{block['name']} ({stage}): {block['signal']}")
        return receipts

    def _before_call(self, agent: AgentDefinition, request: ModelRequest) -> list[dict[str, Any]]:
        """The input's processors before the turn's first model call, the request's
        before every call: their receipts (the call's ``model.completed`` keeps them)."""
        receipts: list[dict[str, Any]] = []
        if not any(e.type == EventType.MODEL_COMPLETED for e in self.events):
            receipts += self._processed(agent, "input", self.turn.input.get("messages"))
        return receipts + self._processed(agent, "request", [m.to_json() for m in request.messages])

    # -- the loop ----------------------------------------------------------------

    @contextmanager
    def _attempt(self) -> Iterator[None]:
        """This attempt's log ids and trace span (runtime/logs.py, runtime/tracing.py)."""
        t = self.turn
        with (
            logs.bound(turn=t.turn_id, attempt=t.attempt),
            tracing.attempt(
                "turnkeep.run_session",
                t.tenant_id,
                t.session_id,
                t.turn_id,
                {
                    "turnkeep.fence": self.cp.lease.fence,
                    "turnkeep.attempt": t.attempt,
                    "turnkeep.agent": t.agent_name,
                },
            ) as span,
        ):
            yield
            span.set_attribute("turnkeep.state", self.state.value)

    def refuse(self) -> bool:
        """Settle a runnable turn this worker may not start: its agent definition is
        not served here, or it reached the attempt cap."""
        turn = self.turn
        with self._attempt():
            if self.ctx.agents.by_hash(turn.agent_hash) is None:
                reason = "the turn's agent definition is not served here"
                self._fail(ErrorCode.AGENT_CHANGED, reason)
            else:
                reason = f"claimed {turn.attempt} times without settling"
                self._fail(ErrorCode.RETRY_EXHAUSTED, reason)
        return self.lane_runnable

    def run(self) -> bool:
        with self._attempt():
            return self._run()

    def _run(self) -> bool:
        served = self.ctx.agents.by_hash(self.turn.agent_hash)
        if served is None:  # start_turn checked the hash: only a bug gets here
            raise IllegalTransition("started a turn whose agent is not served here")
        # narrowed for a delegated child, overridden by the turn's pinned project
        agent = apply_project(as_this_turn_sees_it(served, self.turn), self.turn.input)
        # durable memory (docs/memory.md): the remember tool of the agent's scope, and
        # the facts remembered before the turn was admitted (the same on every attempt)
        agent = with_memory(agent, self.turn)
        self.recall = recalled(self.ctx.store, agent, self.turn)
        try:
            provider_for(agent)
        except DefinitionError as exc:
            # retrying cannot fix a definition: fail on the first attempt
            self._fail(ErrorCode.DEFINITION_INVALID, str(exc))
            return self.lane_runnable
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
        except ModelNotAllowed as exc:
            self._fail(ErrorCode.MODEL_NOT_ALLOWED, str(exc))
        except ProcessorBlocked as exc:
            self._fail(ErrorCode.PROCESSOR_BLOCKED, str(exc))
        except ModelError as exc:
            self._fail(ErrorCode.MODEL_FAILED, f"{exc.code}: {exc}")
        return self.lane_runnable

    def _loop(self, agent: AgentDefinition) -> None:
        # tool calls without an outcome that an earlier attempt may have started; a
        # call that waits for an answer nobody gave yet cannot have run
        resumed = {
            r.step
            for r in plan.pending_tool_steps(self.events)
            if plan.possibly_started(self.events, r.step)
            and not (
                _waits(agent, r.call)
                and plan.answered(self.events, r.step, _kind(agent, r.call)) is None
            )
        }
        while not self.state.terminal:
            self.cp.heartbeat.check()
            if self.cancel_requested or self._poll_cancel(force=False) or self._parent_ended():
                raise TurnCancelled()
            action = plan.next_action(self.events)
            if isinstance(action, plan.Finish):
                # only a journal written before the final answer and the settlement
                # shared one statement gets here
                state, terminal, settled, fields = self._settlement(agent, action.text)
                self._commit(state, terminal, settled, **fields)
                return
            if not self._within_budget(agent, action):
                return  # parked on a budget_extension request
            if isinstance(action, plan.CallModel):
                with self._step(action.step, "model"):
                    self._call_model(agent, action.step)
                continue
            tool = agent.tool(action.call.name)
            with self._step(action.step, "tool", tool=None if tool is None else tool.name):
                if self._tool_step(agent, action, resumed) == "parked":
                    return

    @contextmanager
    def _step(self, step: int, kind: str, **names: str | None) -> Iterator[None]:
        """A step's log id and trace span (names of the agent's own tools only: never
        what a model made up)."""
        attrs: dict[str, str | int] = {"turnkeep.step": step, "turnkeep.kind": kind}
        attrs.update({f"turnkeep.{k}": v for k, v in names.items() if v is not None})
        with logs.bound(step=step), tracing.span(f"turnkeep.{kind}", attrs):
            yield

    # -- budget ------------------------------------------------------------------

    def _within_budget(self, agent: AgentDefinition, action: plan.CallModel | plan.RunTool) -> bool:
        """Check the bounds before a step. Past one: ask for a budget extension when
        the agent allows it (False: the turn parked), else ``BudgetExceeded``."""
        limits = budget.effective_limits(agent.limits, self.turn.budget)
        grants = []
        for e in self.events:
            if e.type == EventType.INPUT_REQUESTED and e.data["kind"] == InputKind.BUDGET_EXTENSION:
                response = plan.answer(self.events, e.data["request_id"]) or {}
                if response.get("approved"):
                    # an approval naming no amounts doubles the bound that was reached
                    grants.append(response.get("extend") or e.data["detail"]["default_grant"])
        limits = budget.extended(limits, grants)
        done = plan.progress(self.events)
        elapsed = (datetime.now(UTC) - self.turn.created_at).total_seconds()
        try:
            if isinstance(action, plan.CallModel):
                budget.check_model_call(limits, done, elapsed)
            else:
                budget.check_tool_call(limits, done, elapsed)
            return True
        except BudgetExceeded as exc:
            if not agent.budget_extension:
                raise
            last = plan.answered(self.events, action.step, InputKind.BUDGET_EXTENSION)
            if last is not None and not last[1].get("approved"):
                raise  # refused, or nobody answered in time
            self._ask(
                InputKind.BUDGET_EXTENSION,
                step=action.step,
                response_schema=BUDGET_EXTENSION_SCHEMA,
                expires_in=agent.requests_expire_in,
                answered_by=agent.answered_by,
                detail={
                    "bound": exc.bound,
                    "limit": exc.limit,
                    "message": str(exc),
                    "default_grant": budget.default_grant(exc),
                },
            )
            return False

    # -- tool steps ----------------------------------------------------------------

    def _tool_step(self, agent: AgentDefinition, action: plan.RunTool, resumed: set[int]) -> str:
        specialist = agent.specialist(action.call.name)
        if specialist is not None:
            resumed.discard(action.step)  # admitting children again replays them
            return self._delegate(agent, specialist, action)
        tool = agent.tool(action.call.name)
        if action.step in resumed:
            resumed.discard(action.step)
            verdict = self._resume_tool(agent, action)
            if verdict != "run":
                return verdict
        elif tool is not None and (
            rec := plan.answered(self.events, action.step, InputKind.RECONCILIATION)
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
        outcome = response.get("outcome")
        if outcome == ReconcileOutcome.NOT_EXECUTED:
            return "run"
        if outcome == ReconcileOutcome.SUCCEEDED:
            content, is_error = content_of(response.get("result")), False
        elif outcome == ReconcileOutcome.FAILED:
            content, is_error = f"error: {response.get('error')}", True
        else:  # expired unanswered: the outcome stays unknown
            content, is_error = UNKNOWN_OUTCOME + " Nobody reconciled it in time.", True
        self._settle_tool(tool, action, content, is_error=is_error, reconciled=outcome)
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
        self._commit(
            TurnState.RUNNING,
            type,
            {"message": message.to_json(), **meta_of(tool), **extra},
            step=action.step,
        )

    def _poll_cancel(self, *, force: bool) -> bool:
        # at most one read per CANCEL_POLL seconds: cancellation is a safe-point request,
        # not an interrupt, and every commit's RETURNING already reports it for free
        now = time.monotonic()
        if not force and now - self._cancel_checked < CANCEL_POLL:
            return self.cancel_requested
        self._cancel_checked = now
        t = self.turn
        try:
            turn = self.ctx.store.get_turn(t.tenant_id, t.session_id, t.turn_id)
        except Unavailable:
            # a safe-point hint, not a write: ask again at the next safe point
            return self.cancel_requested
        self.cancel_requested = turn.cancel_requested
        return self.cancel_requested

    def _parent_ended(self) -> bool:
        """A delegated turn whose parent ended (cancelled, failed) stops as if cancelled."""
        now = time.monotonic()
        if self._parent is None or now - self._parent_checked < CANCEL_POLL:
            return False
        self._parent_checked = now
        try:
            return self.ctx.store.get_turn(self.turn.tenant_id, *self._parent).state.terminal
        except (Unavailable, NotFound):
            return False

    def _should_stop(self) -> bool:
        return self.cp.heartbeat.lost or self._poll_cancel(force=False) or self._parent_ended()

    def _request(
        self, agent: AgentDefinition, messages: list[Message], *, tools: bool = True
    ) -> ModelRequest:
        return ModelRequest(
            model=agent.model,
            instructions=agent.instructions,
            messages=tuple(messages),
            tools=(
                *(ToolSpec(x.name, x.description, x.parameters) for x in agent.tools),
                *(_delegate_spec(sp) for sp in agent.specialists),
            )
            if tools
            else (),
            options=dict(agent.model_options),
            # the schema goes to providers that can enforce it at the source; the local
            # check (_settlement) stays the one that decides. Never on a summary call.
            output_schema=(self.turn.output_schema or agent.output_schema) if tools else None,
        )

    def _call_model(self, agent: AgentDefinition, step: int) -> None:
        """The step's model call under the agent's model policy: the primary, then a
        fallback only under a condition it names, once the model before it gave up
        (runtime/model_policy.py); the decision is the outcome's receipt."""
        passed_over: list[dict[str, str]] = []
        for n, choice in enumerate((None, *agent.fallbacks)):
            used = agent if choice is None else _with_model(agent, choice)
            last = n == len(agent.fallbacks)
            try:
                self._call_one(used, step, why=_why(choice, passed_over), passed_over=passed_over)
                return
            except TransientModelError as exc:
                condition = "outage"
                if last or condition not in agent.fallbacks[n].on:
                    raise
                passed_over.append({"model": used.model, "condition": condition, "error": exc.code})
            except ContextOverflow as exc:
                condition = "context"
                if last or condition not in agent.fallbacks[n].on:
                    raise
                passed_over.append({"model": used.model, "condition": condition, "error": exc.code})
            log.warning("model %s gave up (%s): falling back", used.model, condition)

    def _call_one(
        self,
        agent: AgentDefinition,
        step: int,
        *,
        why: str,
        passed_over: list[dict[str, str]],
    ) -> None:
        t = self.turn
        publisher = self.ctx.publisher
        provider = provider_for(agent)
        hit(FaultPoint.BEFORE_MODEL_CALL)
        compacted = False  # at most one compaction per model call
        while True:
            messages = plan.transcript(t.input["messages"], self.events, self.prior)
            request = self._request(agent, memory.with_recall(messages, self.recall))
            if (
                not compacted
                and context.request_tokens(request) > agent.context_window - agent.reserve_output
            ):
                # budgeted before the call: compact rather than wait for the overflow
                compacted = self._compact(agent, step, reason="budget") or True
                continue
            receipts = self._before_call(agent, request)
            try:
                # coalesced first, then redacted: the redactor holds back a tail that
                # may still become a secret, whatever deltas it was split across
                live = self.ctx.redactor.stream(
                    lambda text: publisher.delta(t.tenant_id, t.session_id, t.turn_id, step, text)
                )
                deltas = DeltaBuffer(live.add)
                began = time.monotonic()
                try:
                    response, retries = self._complete(
                        agent, provider, request, on_delta=deltas.add
                    )
                finally:
                    deltas.flush()
                    live.flush()
                seconds = time.monotonic() - began
                break
            except ContextOverflow:
                # the backstop: one compaction, then the same call once more
                if compacted or not self._compact(agent, step, reason="overflow"):
                    raise
                compacted = True
        hit(FaultPoint.AFTER_MODEL_CALL)
        if not model_policy.allows(
            agent.provider, agent.model, response.model, agent.allowed_models
        ):
            # fail closed: nothing of a reply from a model the policy does not name
            raise ModelNotAllowed(
                f"asked {agent.provider}/{agent.model}, the provider reports "
                f"{response.model or 'no model'}"
            )
        receipts += self._processed(
            agent,
            "output",
            {"text": response.text, "tool_calls": [c.to_json() for c in response.tool_calls]},
        )
        message = response.to_message()
        cost = pricing.cost(response.model, response.usage)
        data = {
            "message": message.to_json(),
            "usage": response.usage.to_json(),
            "model": response.model,
            # the answered call's wall time and its provider retries
            "duration_ms": round(seconds * 1000),
            "retries": retries,
            # USD from runtime/pricing.py's table; None for a model it does not price
            "cost": cost,
            "decision": model_policy.receipt(
                provider=agent.provider,
                asked=agent.model,
                answered=response.model,
                why=why,
                passed_over=list(passed_over),
            ),
        }
        if receipts:
            data["receipts"] = receipts
        lost = plan.lost_tries(self.events)
        if lost and cost is not None:
            # attempts that died since the last progress may each have made this call:
            # charged as if each cost what this one did (the bound counts recoveries)
            data["charged_cost"] = cost * (1 + lost)
            data["lost_tries"] = lost
        if message.tool_calls:
            self._commit(TurnState.RUNNING, EventType.MODEL_COMPLETED, data, step=step)
            return
        # the final answer: its outcome and the turn's settlement in one statement
        state, terminal, settled, fields = self._settlement(agent, message.content)
        error = fields.get("error") or {}
        used = sum(1 for e in self.events if e.data.get("correction"))
        if error.get("code") == ErrorCode.OUTPUT_INVALID and used < agent.output_retries:
            # not settled: the model is told what was wrong and answers again
            # (plan.next_action, runtime/journal.py show it the correction)
            data["correction"] = {"n": used + 1, "error": error["message"]}
            self._commit(TurnState.RUNNING, EventType.MODEL_COMPLETED, data, step=step)
            return
        self._commit(
            state,
            EventType.MODEL_COMPLETED,
            data,
            step=step,
            then=(terminal, settled),
            **fields,
        )

    def _complete(
        self,
        agent: AgentDefinition,
        provider: Provider,
        request: ModelRequest,
        *,
        on_delta: Callable[[str], None] | None = None,
    ) -> tuple[ModelResponse, int]:
        """One model call, timed, and how many times the provider retried it."""
        retries = 0

        def on_retry() -> None:
            nonlocal retries
            retries += 1
            metrics.model_retry(agent.name)

        began = time.monotonic()
        try:
            with observe_retries(on_retry):
                reply = provider.complete(request, on_delta=on_delta, should_stop=self._should_stop)
        finally:
            metrics.step("model", agent.name, time.monotonic() - began)
        return reply, retries

    def _compact(self, agent: AgentDefinition, step: int, *, reason: str) -> bool:
        """Summarise the conversation since the current base, in chunks that each fit
        one request, into a ``context.compacted`` that every later turn starts from.
        False when there is nothing new to summarise."""
        t = self.turn
        covered = plan.summarisable(self.events, self.prior)
        if not covered:
            return False
        previous = plan.base([*self.prior, *self.events])
        history = plan.transcript(t.input["messages"], self.events, self.prior)
        if previous is not None:
            history = history[1:]  # its summary is carried as "the summary so far"
        summary = None if previous is None else str(previous.data["summary"])
        limit = agent.context_window - agent.reserve_output
        parts = context.chunks(
            context.lines(history), context.chunk_budget(limit, agent.reserve_output)
        )
        provider = provider_for(agent)
        used = {"input_tokens": 0, "output_tokens": 0}
        model = agent.model
        for part in parts:
            reply, _ = self._complete(
                agent,
                provider,
                self._request(agent, context.summary_request(summary, part), tools=False),
            )
            summary, model = reply.text, reply.model
            used["input_tokens"] += reply.usage.input_tokens
            used["output_tokens"] += reply.usage.output_tokens
        self._commit(
            TurnState.RUNNING,
            EventType.CONTEXT_COMPACTED,
            {
                "summary": summary,
                # the source range, earlier compactions' included
                "from_seq": min(e.seq for e in covered)
                if previous is None
                else previous.data.get("from_seq", min(e.seq for e in covered)),
                "to_seq": max(e.seq for e in covered),
                "supersedes": None if previous is None else previous.seq,
                "model": model,
                "prompt_hash": context.PROMPT_HASH,
                "usage": used,
                "chunks": len(parts),
                "before_step": step,
                "reason": reason,
            },
        )
        return True

    def _run_tool(
        self, agent: AgentDefinition, tool: ToolDefinition | None, action: plan.RunTool
    ) -> Verdict:
        """Run the call (again, for a read or idempotent one that timed out) and commit
        its outcome; an effectful call that timed out follows the unknown-outcome policy."""
        t = self.turn
        auth: dict[str, Any] | None = None
        asked = plan.answered(self.events, action.step, InputKind.EXTERNAL_AUTH)
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
            auth = self.ctx.secrets.get(
                t.tenant_id, t.session_id, t.turn_id, asked[0]["request_id"]
            )
        tries = 1 if tool is None or tool.effect is Effect.EFFECTFUL else 1 + tool.retries
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
                cancelled=self._should_stop,
                auth=auth,
                max_chars=self.ctx.settings.max_tool_result_chars,
            )
            if not isinstance(outcome, TimedOut):
                break
            self.cp.heartbeat.check()
        seconds = time.monotonic() - began
        metrics.step("tool", agent.name, seconds)
        # the wall time of every try, and the tries after the first
        timing: dict[str, Any] = {"duration_ms": round(seconds * 1000), "retries": ran - 1}
        if isinstance(outcome, Ran):
            self._commit(
                TurnState.RUNNING,
                EventType.TOOL_COMPLETED,
                {"message": outcome.message.to_json(), **outcome.meta, **timing},
                step=action.step,
            )
            if asked is not None:
                self.ctx.secrets.discard(
                    t.tenant_id, t.session_id, t.turn_id, asked[0]["request_id"]
                )
            return "settled"
        assert tool is not None  # an unknown tool never runs, so never times out or asks
        if isinstance(outcome, NeedsAuth):
            need = outcome.request
            self._ask(
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
            self._ask(
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
        content = (
            UNKNOWN_OUTCOME
            if reason == "crash"
            else (
                "error: the call timed out and was abandoned; it may or may not have taken "
                "effect: check before repeating it."
            )
        )
        self._settle_tool(
            tool, action, content, is_error=True, type=EventType.TOOL_INTERRUPTED, reason=reason
        )
        return "settled"

    def _gate(self, tool: ToolDefinition, action: plan.RunTool) -> Verdict:
        """A call that waits for a person: ask ("parked"), or act on the answer: "run"
        the approved call, or "settled" with the answer or refusal as its result."""
        kind = tool.request_kind()
        asked = plan.answered(self.events, action.step, kind)
        if asked is None:
            if plan.requests(self.events, action.step, kind):
                # asked, and the turn runs without an answer: only a bug gets here
                raise IllegalTransition("a tool step ran on before its request was answered")
            self._ask(
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
        if response.get("expired"):
            content, is_error = "error: nobody answered before the request expired", True
        elif kind is InputKind.QUESTION:
            content, is_error = json.dumps(response.get("answer"), sort_keys=True), False
        elif response.get("approved"):
            if request.get("arguments_hash") != sha256_hex(action.call.arguments):
                # the arguments executed are exactly the ones approved, or none
                content, is_error = "error: not approved: the arguments changed", True
            else:
                return "run"
        else:
            reason = response.get("reason") or "no reason given"
            content, is_error = f"error: not approved: {reason}", True
        self._settle_tool(tool, action, content, is_error=is_error)
        return "settled"

    def _ask(
        self,
        kind: InputKind,
        *,
        step: int,
        response_schema: dict[str, Any],
        expires_in: float,
        answered_by: str,
        tool: ToolDefinition | None = None,
        call: ToolCall | None = None,
        detail: dict[str, Any] | None = None,
        state: TurnState = TurnState.WAITING,
    ) -> None:
        """Park the turn on a typed request, bound exactly to what it asks about."""
        t = self.turn
        request = inputs.build(
            kind,
            tenant_id=t.tenant_id,
            session_id=t.session_id,
            turn_id=t.turn_id,
            step=step,
            nth=len(plan.requests(self.events, step, kind)) + 1,
            at_seq=self.events[-1].seq if self.events else t.accepted_seq,
            response_schema=response_schema,
            expires_in=expires_in,
            answered_by=inputs.answerers(answered_by, t.submitted_by),
            tool=None if tool is None else tool.ref(),
            call_id=None if call is None else call.id,
            arguments=None if call is None else call.arguments,
            detail=detail,
        )
        self._commit(state, EventType.INPUT_REQUESTED, request, step=step, pending_input=request)

    # -- delegation (runtime/delegation.py) ------------------------------------------

    def _delegate(
        self, agent: AgentDefinition, specialist: Specialist, action: plan.RunTool
    ) -> Verdict:
        """A ``delegate_<name>`` call: admit its children and park on them; once they
        have all ended (the runtime's answer), commit their outcomes as the call's."""
        t, step, call = self.turn, action.step, action.call
        done = plan.answered(self.events, step, InputKind.DELEGATION)
        if done is not None:
            response = done[1]
            if response.get("expired"):
                body = {"error": "delegation_expired", "message": "the children did not end"}
                return self._delegation_outcome(specialist, action, body, is_error=True)
            hit(FaultPoint.BEFORE_JOIN)
            parts = response.get("children") or []
            return self._delegation_outcome(
                specialist,
                action,
                delegation.joined(parts),
                is_error=False,
                spent=delegation.spent(parts),
            )
        try:
            tasks = delegation.parse_tasks(specialist, call.arguments)
            depth = delegation.check_depth(specialist, _depth(t))
        except DelegationRefused as exc:
            body = {"error": exc.code, "message": str(exc)}
            return self._delegation_outcome(specialist, action, body, is_error=True)
        children = delegation.children(
            specialist, t.tenant_id, t.session_id, t.turn_id, step, tasks
        )
        child_agent = self.ctx.agents.get(specialist.agent)
        delegated.admit_children(
            self.ctx.store,
            self.ctx.enqueue,
            t,
            step,
            children,
            agent_name=child_agent.name,
            agent_hash=child_agent.definition_hash,
            depth=depth,
            tools=delegation.allowed_tools(
                specialist,
                [x.name for x in child_agent.tools],
                [x.name for x in agent.tools],
            ),
            budget=delegation.child_budget(specialist, self._remaining(agent), len(tasks)),
            output_schema=specialist.output_schema or child_agent.output_schema,
        )
        self._ask(
            InputKind.DELEGATION,
            step=step,
            response_schema=delegation.RESPONSE_SCHEMA,
            expires_in=agent.requests_expire_in,
            answered_by=RUNTIME,
            call=call,
            detail={
                "specialist": specialist.name,
                "children": [
                    {"id": c.task.id, "session_id": c.session_id, "turn_id": c.turn_id}
                    for c in children
                ],
            },
        )
        # children that ended before the parent parked found nothing to answer yet
        delegated.settle_parent(
            self.ctx.store,
            self.ctx.enqueue,
            t.tenant_id,
            t.session_id,
            t.turn_id,
        )
        return "parked"

    def _delegation_outcome(
        self,
        specialist: Specialist,
        action: plan.RunTool,
        body: dict[str, Any],
        *,
        is_error: bool,
        spent: dict[str, Any] | None = None,
    ) -> Verdict:
        message = plan.tool_message(action.call, json.dumps(body), is_error=is_error)
        data: dict[str, Any] = {
            "message": message.to_json(),
            "tool": specialist.tool_name,
            "specialist": specialist.name,
        }
        if is_error:
            data["error"] = body.get("error")
        if spent is not None:
            data["children_usage"] = spent
        self._commit(TurnState.RUNNING, EventType.TOOL_COMPLETED, data, step=action.step)
        return "settled"

    def _remaining(self, agent: AgentDefinition) -> dict[str, float]:
        """What the turn has left of each bound: what children's budgets are cut from."""
        limits = budget.effective_limits(agent.limits, self.turn.budget)
        done = plan.progress(self.events)
        used_model = done.model_calls
        elapsed = (datetime.now(UTC) - self.turn.created_at).total_seconds()
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

    def _delegations_ended(self) -> None:
        """This turn ended: a delegated one tells its parent (should it be the last
        child); a delegating one stops the children still active. Best effort: the
        recovery scan answers parents, and children poll their parent."""
        store: Any = self.ctx.store
        try:
            delegated.after_child_ended(store, self.ctx.enqueue, self.turn)
            for e in self.events:
                if (
                    e.type == EventType.INPUT_REQUESTED
                    and e.data.get("kind") == InputKind.DELEGATION
                    and plan.answer(self.events, e.data["request_id"]) is None
                ):
                    delegated.cancel_children(store, self.turn.tenant_id, e.data)
        except Exception as exc:  # the turn is settled; this is follow-up work
            log.warning("delegation follow-up failed: %s", type(exc).__name__)

    def _settlement(
        self, agent: AgentDefinition, text: str
    ) -> tuple[TurnState, EventType, dict[str, Any], dict[str, Any]]:
        """How a final answer settles the turn: (state, terminal event, its data, the
        turn's result or error): completed, or failed ``output_invalid``."""
        schema = self.turn.output_schema or agent.output_schema
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
                return TurnState.FAILED, EventType.TURN_FAILED, {"error": error}, {"error": error}
            result["output"] = output
        return TurnState.COMPLETED, EventType.TURN_COMPLETED, {"result": result}, {"result": result}


class ModelNotAllowed(Exception):
    """A reply came from a model the agent's policy does not allow."""


class ProcessorBlocked(Exception):
    """A processor of the agent's definition blocked the turn (runtime/processors.py)."""


def _with_model(agent: AgentDefinition, choice: Fallback) -> AgentDefinition:
    """The agent as a fallback runs it: the fallback's provider, model and options."""
    return replace(
        agent, provider=choice.provider, model=choice.model, model_options=choice.model_options
    )


def _why(choice: Fallback | None, passed_over: list[dict[str, str]]) -> str:
    if choice is None:
        return "primary"
    return f"fallback: {passed_over[-1]['condition']} of {passed_over[-1]['model']}"


def _delegate_spec(specialist: Specialist) -> ToolSpec:
    description = specialist.description or (
        f"Hand tasks to the {specialist.name} specialist; each runs as its own turn and "
        "the results come back in task order."
    )
    return ToolSpec(specialist.tool_name, description, specialist.parameters())


def _depth(turn: TurnRecord) -> int:
    link = (turn.input or {}).get("delegation")
    return int(link.get("depth", 0)) if isinstance(link, dict) else 0


def as_this_turn_sees_it(agent: AgentDefinition, turn: TurnRecord) -> AgentDefinition:
    """The agent narrowed to what the turn was admitted with: a delegated child's tools
    are the allowlist pinned in its input (runtime/delegation.py)."""
    link = (turn.input or {}).get("delegation")
    if isinstance(link, dict) and isinstance(link.get("tools"), list):
        allowed = set(link["tools"])
        agent = replace(agent, tools=tuple(x for x in agent.tools if x.name in allowed))
    return agent


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
