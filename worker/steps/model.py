"""A model step: the call under the agent's model policy (primary, then fallbacks),
its live deltas, compaction when the context is full, cost, the processors before
and after the call, and the one commit of its outcome (with the turn's settlement
when it is the final answer).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from turnkeep.runtime import decisions, memory, model_policy, plan, pricing, processors, window
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.delegation import Specialist
from turnkeep.runtime.errors import ContextOverflow, TransientModelError
from turnkeep.runtime.messages import Message, ModelRequest, ModelResponse, ToolSpec, journal_form
from turnkeep.runtime.model_policy import Fallback
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.payloads import ContextCompacted, ModelCompleted
from turnkeep.runtime.providers.base import Provider
from turnkeep.runtime.providers.retry import observe_retries
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.worker import metrics
from turnkeep.worker.errors import ModelNotAllowed, ProcessorBlocked
from turnkeep.worker.pace import Pacing
from turnkeep.worker.providers import provider_for
from turnkeep.worker.turn import TurnHandle

log = logging.getLogger(__name__)

#: live deltas are coalesced for this long (or this many characters) per publish
DELTA_FLUSH_SECONDS = 0.05
DELTA_FLUSH_CHARS = 256


class ModelStep:
    """Makes a turn's model calls, one ``call`` per step."""

    def __init__(self, turn: TurnHandle) -> None:
        self.turn = turn
        #: the calls under a declared provider rate limit wait for their slot
        self.pacing = Pacing(turn)

    def call(self, agent: AgentDefinition, step: int) -> None:
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
        turn = self.turn
        t = turn.record
        publisher = turn.ctx.publisher
        provider = provider_for(agent)
        hit(FaultPoint.BEFORE_MODEL_CALL)
        compacted = False  # at most one compaction per model call
        while True:
            messages = plan.transcript(
                TurnInput.from_json(t.input).messages,
                turn.events,
                turn.prior,
                turn.state_for(agent.provider),
                turn.decoded,
            )
            request = self._request(agent, memory.with_recall(messages, turn.recall))
            if (
                not compacted
                and window.request_tokens(request) > agent.context_window - agent.reserve_output
            ):
                # budgeted before the call: compact rather than wait for the overflow
                compacted = self._compact(agent, step, reason="budget") or True
                continue
            receipts = self._before_call(agent, request)
            try:
                # coalesced first, then redacted: the redactor holds back a tail that
                # may still become a secret, whatever deltas it was split across
                live = turn.ctx.redactor.stream(
                    lambda text: publisher.delta(t.tenant_id, t.session_id, t.turn_id, step, text)
                )
                deltas = DeltaBuffer(live.add)
                began = time.monotonic()
                try:
                    response, retries = self._complete(
                        agent, provider, request, on_delta=deltas.add, step=step
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
            earlier=receipts,
        )
        message = response.to_message()
        # the provider's opaque state (its reasoning) never enters the journal: it is
        # written beside the call's event, named there by its provider only
        kept, state = journal_form(message)
        cost = pricing.cost(response.model, response.usage)
        lost = plan.lost_tries(turn.events)
        outcome = ModelCompleted(
            message=kept,
            usage=response.usage.to_json(),
            model=response.model,
            # the answered call's wall time and its provider retries
            duration_ms=round(seconds * 1000),
            retries=retries,
            # USD from runtime/pricing.py's table; None for a model it does not price
            cost=cost,
            decision=model_policy.receipt(
                provider=agent.provider,
                asked=agent.model,
                answered=response.model,
                why=why,
                passed_over=list(passed_over),
            ),
            # written only when there are some (OMIT_EMPTY)
            receipts=receipts,
            provider_state=None if state is None else agent.provider,
        )
        if lost and cost is not None:
            # attempts that died since the last progress may each have made this call:
            # charged as if each cost what this one did (the bound counts recoveries)
            outcome = outcome.evolve(charged_cost=cost * (1 + lost), lost_tries=lost)
        if message.tool_calls:
            turn.commit(
                TurnState.RUNNING,
                EventType.MODEL_COMPLETED,
                outcome.to_json(),
                step=step,
                provider_state=state,
            )
            return
        # the final answer: its outcome and the turn's settlement in one statement
        settles, terminal, settled, fields = decisions.settlement(
            t.output_schema or agent.output_schema, message.content
        )
        correction = decisions.correction(turn.events, fields, agent.output_retries)
        if correction is not None:
            # not settled: the model is told what was wrong and answers again
            # (plan.next_action, runtime/journal.py show it the correction)
            corrected = outcome.evolve(correction=correction)
            turn.commit(
                TurnState.RUNNING,
                EventType.MODEL_COMPLETED,
                corrected.to_json(),
                step=step,
                provider_state=state,
            )
            return
        turn.commit(
            settles,
            EventType.MODEL_COMPLETED,
            outcome.to_json(),
            step=step,
            then=(terminal, settled),
            provider_state=state,
            **fields,
        )

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
            # check (decisions.settlement) stays the one that decides. Never on a summary
            # call.
            output_schema=(self.turn.record.output_schema or agent.output_schema)
            if tools
            else None,
        )

    def _complete(
        self,
        agent: AgentDefinition,
        provider: Provider,
        request: ModelRequest,
        *,
        on_delta: Callable[[str], None] | None = None,
        step: int | None = None,
    ) -> tuple[ModelResponse, int]:
        """One model call, timed, and how many times the provider retried it; under a
        declared rate limit, once its slot came (``step``: the call may give its thread
        back to wait, worker/pace.py)."""
        retries = 0

        def on_retry() -> None:
            nonlocal retries
            retries += 1
            metrics.model_retry(agent.name)

        began = time.monotonic()
        try:
            with observe_retries(on_retry):
                reply = self.pacing.complete(
                    agent,
                    request,
                    step,
                    lambda: provider.complete(
                        request, on_delta=on_delta, should_stop=self.turn.should_stop
                    ),
                )
        finally:
            metrics.step("model", agent.name, time.monotonic() - began)
        return reply, retries

    def _compact(self, agent: AgentDefinition, step: int, *, reason: str) -> bool:
        """Summarise the conversation since the current base, in chunks that each fit
        one request, into a ``context.compacted`` that every later turn starts from.
        False when there is nothing new to summarise."""
        turn = self.turn
        covered = plan.summarisable(turn.events, turn.prior)
        if not covered:
            return False
        previous = plan.base([*turn.prior, *turn.events])
        history = plan.transcript(
            TurnInput.from_json(turn.record.input).messages,
            turn.events,
            turn.prior,
            decoded=turn.decoded,
        )
        if previous is not None:
            history = history[1:]  # its summary is carried as "the summary so far"
        before = None if previous is None else ContextCompacted.from_json(previous.data)
        summary = None if before is None else str(before.summary)
        limit = agent.context_window - agent.reserve_output
        parts = window.chunks(
            window.lines(history), window.chunk_budget(limit, agent.reserve_output)
        )
        provider = provider_for(agent)
        used = {"input_tokens": 0, "output_tokens": 0}
        model = agent.model
        for part in parts:
            reply, _ = self._complete(
                agent,
                provider,
                self._request(agent, window.summary_request(summary, part), tools=False),
            )
            summary, model = reply.text, reply.model
            used["input_tokens"] += reply.usage.input_tokens
            used["output_tokens"] += reply.usage.output_tokens
        compaction = ContextCompacted(
            summary=summary,
            # the source range, earlier compactions' included
            from_seq=before.from_seq
            if before is not None and before.has("from_seq")
            else min(e.seq for e in covered),
            to_seq=max(e.seq for e in covered),
            supersedes=None if previous is None else previous.seq,
            model=model,
            prompt_hash=window.PROMPT_HASH,
            usage=used,
            chunks=len(parts),
            before_step=step,
            reason=reason,
        )
        turn.commit(TurnState.RUNNING, EventType.CONTEXT_COMPACTED, compaction.to_json())
        return True

    # -- processors (runtime/processors.py) ----------------------------------------

    def _processed(
        self,
        agent: AgentDefinition,
        stage: Any,
        content: Any,
        earlier: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """Run a stage's processors; ``ProcessorBlocked`` on a blocking verdict, carrying
        the ``earlier`` receipts of the call and this stage's."""
        if not agent.processors:
            return []
        receipts = processors.run(agent.processors, stage, processors.as_text(content))
        block = processors.blocked(receipts)
        if block is not None:
            raise ProcessorBlocked(
                f"{block['name']} ({stage}): {block['signal']}", [*(earlier or []), *receipts]
            )
        return receipts

    def _before_call(self, agent: AgentDefinition, request: ModelRequest) -> list[dict[str, Any]]:
        """The input's processors before the turn's first model call, the request's
        before every call: their receipts (the call's ``model.completed`` keeps them)."""
        receipts: list[dict[str, Any]] = []
        if not any(e.type == EventType.MODEL_COMPLETED for e in self.turn.events):
            given = TurnInput.from_json(self.turn.record.input)
            # None, as it always was, for an input stored without messages
            receipts += self._processed(
                agent, "input", given.messages if given.has("messages") else None
            )
        if not agent.processors:
            return receipts  # nothing reads the request's encoding: not built
        messages = [m.to_json() for m in request.messages]
        return receipts + self._processed(agent, "request", messages, earlier=receipts)


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
