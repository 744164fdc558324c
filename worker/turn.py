"""The turn handle: one attempt's view of a turn and the only way its steps write.

``TurnHandle`` holds what the journal says so far (revision, state, events, the earlier
turns' window) and performs the turn's effects: ``commit`` (one fenced checkpoint,
worker/checkpoint.py), ``fail``, ``ask`` (park on a typed request), ``settle`` (the
final answer's terminal commit) and the cancellation polls a step makes while it
waits on a model or a tool. The steps (worker/steps/) receive it; what to commit is
decided by runtime/plan.py and runtime/decisions.py.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from turnkeep.runtime import decisions, inputs, plan, processors
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.tools import ToolDefinition
from turnkeep.runtime.evaluation import case_ids
from turnkeep.runtime.inputs import InputKind
from turnkeep.runtime.messages import Message, ToolCall
from turnkeep.runtime.obs import tracing
from turnkeep.runtime.payloads import InputRequested, TurnFailed
from turnkeep.runtime.states import PARKED_STATES, TRANSITIONS, EventType, TurnState
from turnkeep.store.errors import NotFound, Unavailable
from turnkeep.store.records import Appended, EventRecord, LaneStarted, TurnRecord
from turnkeep.store.step_commit import StepCommit
from turnkeep.worker import delegation as delegated
from turnkeep.worker import metrics
from turnkeep.worker.checkpoint import Checkpointer
from turnkeep.worker.errors import IllegalTransition
from turnkeep.worker.ports import Resources

log = logging.getLogger(__name__)

#: seconds between cancellation reads while a model call streams or a tool runs
CANCEL_POLL = 2.0


class TurnHandle:
    """One attempt at a turn: its journal so far, and its commits."""

    def __init__(
        self, ctx: Resources, cp: Checkpointer, turn: TurnRecord, started: LaneStarted | None = None
    ) -> None:
        self.ctx = ctx
        self.cp = cp
        #: the turn as the start statement (or the lane's head) read it
        self.record = turn
        self.revision = turn.revision
        self.state = turn.state
        self.cancel_requested = turn.cancel_requested
        self.events: list[EventRecord] = list(started.events) if started else []
        #: earlier turns' conversation: the window start_turn read (newest compaction on)
        self.prior: tuple[EventRecord, ...] = started.prior if started else ()
        #: ``prior``'s messages by seq, decoded once (store/context_cache.py), or None
        self.decoded = started.decoded if started else None
        #: the notes of the turn's memory its model calls are shown (docs/memory.md),
        #: read once per attempt by the runner; None: no memory, or nothing remembered
        self.recall: Message | None = None
        self._cancel_checked = time.monotonic()
        #: a delegated turn's parent, asked whether it ended at most every CANCEL_POLL
        #: (commits report the turn's own cancellation, never its parent's)
        self._parent = delegated.parent_of(turn)
        self._parent_checked = 0.0
        self.lane_runnable = False
        #: the provider state the model calls of its context left, by seq, kept out of
        #: the journal (docs/erasure.md): read once an attempt's request for that
        #: provider needs it (``state_for``), then added to by this attempt's commits
        self.provider_state: dict[int, dict[str, Any]] = {}
        self._state_read: set[str] = set()

    # -- commits -----------------------------------------------------------------

    def commit(
        self, state: TurnState, type: EventType, data: dict[str, Any], **kw: Any
    ) -> Appended:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"{self.state.value} -> {state.value}")
        agent = self.record.agent_name
        with tracing.span("turnkeep.checkpoint", {"turnkeep.event": type.value}) as span:
            began = time.monotonic()
            ap = self.cp.commit(
                StepCommit(self.record.turn_id, self.revision, state, type, data, **kw)
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
        kept = kw.get("provider_state")
        if kept is not None:  # the step's own event is the first one written
            self.provider_state[ap.events[0].seq] = dict(kept)
        if state.terminal:
            self.lane_runnable = ap.lane_runnable
            self._delegations_ended()
            if ap.webhook:
                # committed: the outbox row is due now; deliver it without waiting
                # for beat's pass (which delivers it should this send be lost)
                t = self.record
                self.ctx.deliver_webhook(t.tenant_id, t.session_id, t.turn_id)
        if state.terminal or state in PARKED_STATES:
            # an experiment's case (or judge) settled or waits: its driver goes on now,
            # not at beat's next pass (recovery/experiments.py)
            case = case_ids.parse(self.record.session_id)
            if case is not None:
                self.ctx.advance_experiment(self.record.tenant_id, case[1])
        return ap

    def fail(self, code: str, message: str, receipts: list[dict[str, Any]] | None = None) -> None:
        """Fail the turn; ``receipts``: processor runs no other event carries (a blocked
        call's), before those of the error processors."""
        error = {"code": code, "message": message}
        receipts = list(receipts or [])
        agent = self.ctx.agents.by_hash(self.record.agent_hash)
        if agent is not None and agent.processors:
            # error processors see the typed error; their receipts go on turn.failed
            receipts += processors.run(agent.processors, "error", processors.as_text(error))
        # the receipts only when there are some (OMIT_EMPTY)
        data = TurnFailed(error=error, receipts=receipts)
        self.commit(TurnState.FAILED, EventType.TURN_FAILED, data.to_json(), error=error)

    def settle(self, agent: AgentDefinition, text: str) -> None:
        """Settle the turn on a final answer already in the journal (completed, or
        failed ``output_invalid``)."""
        schema = self.record.output_schema or agent.output_schema
        state, terminal, settled, fields = decisions.settlement(schema, text)
        self.commit(state, terminal, settled, **fields)

    def ask(
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
        request = self.request(
            kind,
            step=step,
            response_schema=response_schema,
            expires_in=expires_in,
            answered_by=answered_by,
            tool=tool,
            call=call,
            detail=detail,
        )
        self.commit(state, EventType.INPUT_REQUESTED, request, step=step, pending_input=request)

    def request(
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
    ) -> dict[str, Any]:
        """A typed request for ``step``, bound exactly to what it asks about (not
        committed: ``ask`` parks on it; the tool step asks several together)."""
        t = self.record
        return inputs.build(
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

    def _delegations_ended(self) -> None:
        """This turn ended: a delegated one tells its parent (should it be the last
        child); a delegating one stops the children still active. Best effort: the
        recovery scan answers parents, and children poll their parent."""
        store = self.ctx.store
        try:
            delegated.after_child_ended(store, self.ctx.enqueue, self.record)
            for e in self.events:
                if e.type != EventType.INPUT_REQUESTED:
                    continue
                request = InputRequested.from_json(e.data)
                if (
                    request.kind == InputKind.DELEGATION
                    and plan.answer(self.events, request.request_id) is None
                ):
                    delegated.cancel_children(store, self.record.tenant_id, request)
        except Exception as exc:  # the turn is settled; this is follow-up work
            log.warning("delegation follow-up failed: %s", type(exc).__name__)

    def state_for(self, provider: str) -> dict[int, dict[str, Any]]:
        """The provider state ``provider`` left with the model calls of this turn's
        context, by seq: one read per attempt, and only when a call says it left some
        (``ModelCompleted.provider_state``); none for a provider that keeps none."""
        if provider not in self._state_read:
            self._state_read.add(provider)
            seqs = [
                e.seq
                for e in (*self.prior, *self.events)
                if e.type == EventType.MODEL_COMPLETED
                and e.data.get("provider_state") == provider
                and e.seq not in self.provider_state
            ]
            if seqs:
                t = self.record
                found = self.ctx.store.provider_state.provider_state(
                    t.tenant_id, t.session_id, provider, seqs
                )
                self.provider_state.update(found)
        return self.provider_state

    # -- cancellation --------------------------------------------------------------

    def cancelled(self) -> bool:
        """At a safe point between steps: whether the turn is to stop as cancelled."""
        return self.cancel_requested or self.poll_cancel(force=False) or self.parent_ended()

    def poll_cancel(self, *, force: bool) -> bool:
        # at most one read per CANCEL_POLL seconds: cancellation is a safe-point request,
        # not an interrupt, and every commit's RETURNING already reports it for free
        now = time.monotonic()
        if not force and now - self._cancel_checked < CANCEL_POLL:
            return self.cancel_requested
        self._cancel_checked = now
        t = self.record
        try:
            turn = self.ctx.store.reads.get_turn(t.tenant_id, t.session_id, t.turn_id)
        except Unavailable:
            # a safe-point hint, not a write: ask again at the next safe point
            return self.cancel_requested
        except NotFound:
            # its session was erased (docs/erasure.md): stop; the commit is refused
            self.cancel_requested = True
            return True
        self.cancel_requested = turn.cancel_requested
        return self.cancel_requested

    def parent_ended(self) -> bool:
        """A delegated turn whose parent ended (cancelled, failed) stops as if cancelled."""
        now = time.monotonic()
        if self._parent is None or now - self._parent_checked < CANCEL_POLL:
            return False
        self._parent_checked = now
        try:
            return self.ctx.store.reads.get_turn(
                self.record.tenant_id, *self._parent
            ).state.terminal
        except Unavailable:
            return False
        except NotFound:  # its session was erased (docs/erasure.md): it ended with it
            return True

    def should_stop(self) -> bool:
        """Asked by a streaming model call or a running tool: stop now (the lease is
        lost, the turn or its parent cancelled)."""
        return self.cp.heartbeat.lost or self.poll_cancel(force=False) or self.parent_ended()
