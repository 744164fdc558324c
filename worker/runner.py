"""The loop of one turn: ask runtime/plan.py what comes next, check the bounds, and
hand the step to its kind (worker/steps/), until the turn settles or parks; a typed
error on the way fails it with its code. ``refuse`` settles a turn this worker may
not start.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime

from turnkeep.runtime import decisions, deploys, payloads, plan
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.deploys import Move
from turnkeep.runtime.errors import BudgetExceeded, ContextOverflow, DefinitionError, ModelError
from turnkeep.runtime.inputs import BUDGET_EXTENSION_SCHEMA, InputKind
from turnkeep.runtime.obs import logs, tracing
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.projects import apply as apply_project
from turnkeep.runtime.signals import Cancelling, ModelCallCancelled
from turnkeep.runtime.states import ErrorCode, EventType, TurnState
from turnkeep.store.records import LaneStarted, TurnRecord
from turnkeep.worker import metrics
from turnkeep.worker.checkpoint import Checkpointer
from turnkeep.worker.errors import IllegalTransition, ModelNotAllowed, ProcessorBlocked
from turnkeep.worker.memory import recalled, with_memory
from turnkeep.worker.ports import Resources
from turnkeep.worker.providers import provider_for
from turnkeep.worker.steps import Verdict
from turnkeep.worker.steps.delegate import DelegateStep
from turnkeep.worker.steps.model import ModelStep
from turnkeep.worker.steps.tool import ToolStep
from turnkeep.worker.turn import TurnHandle


class TurnRunner:
    """Steps one turn to a settled state, one checkpoint per step. ``run`` and
    ``refuse`` return whether the lane's next turn can run once this one settled."""

    def __init__(
        self,
        ctx: Resources,
        cp: Checkpointer,
        turn: TurnRecord,
        started: LaneStarted | None = None,
        *,
        move: Move | None = None,
    ) -> None:
        self.ctx = ctx
        #: the definition the turn moves to at its next safe point (runtime/deploys.py)
        self.move = move
        self.turn = TurnHandle(ctx, cp, turn, started)
        self.model = ModelStep(self.turn)
        self.tools = ToolStep(self.turn)
        self.delegation = DelegateStep(self.turn)

    @contextmanager
    def _attempt(self) -> Iterator[None]:
        """This attempt's log ids and trace span (runtime/obs/logs.py, runtime/obs/tracing.py)."""
        t = self.turn.record
        with (
            logs.bound(turn=t.turn_id, attempt=t.attempt),
            tracing.attempt(
                "turnkeep.run_session",
                t.tenant_id,
                t.session_id,
                t.turn_id,
                {
                    "turnkeep.fence": self.turn.cp.lease.fence,
                    "turnkeep.attempt": t.attempt,
                    "turnkeep.agent": t.agent_name,
                },
            ) as span,
        ):
            yield
            span.set_attribute("turnkeep.state", self.turn.state.value)

    def refuse(self, code: ErrorCode | None = None, reason: str = "") -> bool:
        """Settle a runnable turn this worker may not start: nothing can run its
        definition (``code``, runtime/deploys.py), or it reached the attempt cap."""
        turn = self.turn.record
        with self._attempt():
            if code is None:
                code, reason = (
                    ErrorCode.RETRY_EXHAUSTED,
                    f"claimed {turn.attempt} times without settling",
                )
            self.turn.fail(code, reason)
        return self.turn.lane_runnable

    def cancel(self) -> bool:
        """Settle a held turn someone asked to stop (no worker steps it to a safe point)."""
        with self._attempt():
            self.turn.commit(
                TurnState.CANCELLED, EventType.TURN_CANCELLED, payloads.TurnCancelled().to_json()
            )
        return self.turn.lane_runnable

    def run(self) -> bool:
        with self._attempt():
            return self._run()

    def _run(self) -> bool:
        turn, record = self.turn, self.turn.record
        served = self.ctx.agents.by_hash(record.agent_hash)
        if served is None:
            if self.move is None:  # start_turn checked the hash: only a bug gets here
                raise IllegalTransition("started a turn whose agent is not served here")
            # its own definition runs nowhere: it runs on the one it moves to, and the
            # move is committed before its next model call; a call the model asked for
            # before runs on that definition's tool of the name (an approval bound to
            # another version or schema is asked again: worker/steps/tool.py)
            served = self.move.target
        elif self.move is None:
            self.move = deploys.move_at_safe_point(
                self.ctx.agents,
                served,
                on_deploy=record.on_deploy,
                upgrade_requested=record.upgrade_requested,
            )
        try:
            agent = self._prepared(served)
        except DefinitionError as exc:
            # retrying cannot fix a definition: fail on the first attempt
            turn.fail(ErrorCode.DEFINITION_INVALID, str(exc))
            return turn.lane_runnable
        try:
            self._loop(agent)
        except (Cancelling, ModelCallCancelled):
            # a call aborted because the lease was lost is no cancellation: LeaseLost
            turn.cp.heartbeat.check()
            turn.commit(
                TurnState.CANCELLED, EventType.TURN_CANCELLED, payloads.TurnCancelled().to_json()
            )
        except BudgetExceeded as exc:
            turn.fail(ErrorCode.BUDGET_EXCEEDED, str(exc))
        except ContextOverflow as exc:
            turn.fail(ErrorCode.CONTEXT_OVERFLOW, str(exc))
        except ModelNotAllowed as exc:
            turn.fail(ErrorCode.MODEL_NOT_ALLOWED, str(exc))
        except ProcessorBlocked as exc:
            turn.fail(ErrorCode.PROCESSOR_BLOCKED, str(exc), exc.receipts)
        except ModelError as exc:
            turn.fail(ErrorCode.MODEL_FAILED, f"{exc.code}: {exc}")
        return turn.lane_runnable

    def _prepared(self, served: AgentDefinition) -> AgentDefinition:
        """The definition as this turn runs it; ``DefinitionError`` when it cannot run."""
        turn, record = self.turn, self.turn.record
        # narrowed for a delegated child, overridden by the turn's pinned project
        agent = apply_project(decisions.as_this_turn_sees_it(served, record.input), record.input)
        # durable memory (docs/memory.md): the remember tool of the agent's scope, and
        # the facts remembered before the turn was admitted (the same on every attempt)
        agent = with_memory(agent, record)
        turn.recall = recalled(self.ctx.store, agent, record)
        provider_for(agent)
        return agent

    def _moved(self, served: AgentDefinition | None) -> AgentDefinition:
        """Commit the turn's move to ``self.move``'s definition (its own statement,
        taken only by a turn whose definition changes) and return that definition."""
        move, turn = self.move, self.turn
        assert move is not None
        record = turn.record
        target = move.target
        data = payloads.DefinitionChanged(
            from_hash=record.agent_hash,
            to_hash=target.definition_hash,
            from_version=served.version if served is not None else (record.agent_version or None),
            to_version=target.version,
            reason=move.reason.value,
        )
        hit(FaultPoint.BEFORE_DEFINITION_CHANGE)
        turn.commit(
            TurnState.RUNNING,
            EventType.TURN_DEFINITION_CHANGED,
            data.to_json(),
            agent_hash=target.definition_hash,
            agent_version=target.version,
        )
        hit(FaultPoint.AFTER_DEFINITION_CHANGE)
        turn.record = replace(
            record,
            agent_hash=target.definition_hash,
            agent_version=target.version,
            upgrade_requested=False,
        )
        metrics.DEFINITION_CHANGES.labels(record.agent_name, move.reason.value).inc()
        self.move = None
        return target

    def _loop(self, agent: AgentDefinition) -> None:
        turn = self.turn
        # tool calls without an outcome that an earlier attempt may have started
        resumed = decisions.resumed(agent, turn.events)
        while not turn.state.terminal:
            turn.cp.heartbeat.check()
            if turn.cancelled():
                raise Cancelling()
            action = plan.next_action(turn.events)
            if isinstance(action, plan.Finish):
                # only a journal written before the final answer and the settlement
                # shared one statement gets here
                turn.settle(agent, action.text)
                return
            if not self._within_budget(agent, action):
                return  # parked on a budget_extension request
            if isinstance(action, plan.CallModel):
                if self.move is not None:
                    # the safe point: before a model call, never between a tool call
                    # and its result
                    agent = self._prepared(
                        self._moved(self.ctx.agents.by_hash(turn.record.agent_hash))
                    )
                with self._step(action.step, "model"):
                    self.model.call(agent, action.step)
                continue
            batch = self.tools.batchable(agent, action)
            if len(batch) > 1:
                with self._step(action.step, "tools"):
                    if self.tools.batch(agent, batch, resumed) == "parked":
                        return
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

    def _tool_step(
        self, agent: AgentDefinition, action: plan.RunTool, resumed: set[int]
    ) -> Verdict:
        specialist = agent.specialist(action.call.name)
        if specialist is not None:
            resumed.discard(action.step)  # admitting children again replays them
            return self.delegation.step(agent, specialist, action)
        return self.tools.step(agent, action, resumed)

    def _within_budget(self, agent: AgentDefinition, action: plan.CallModel | plan.RunTool) -> bool:
        """Check the bounds before a step. Past one: ask for a budget extension when
        the agent allows it (False: the turn parked), else ``BudgetExceeded``."""
        turn = self.turn
        limits = decisions.bounds(agent.limits, turn.record.budget, turn.events)
        elapsed = (datetime.now(UTC) - turn.record.created_at).total_seconds()
        try:
            decisions.check_step(limits, turn.events, elapsed, action)
            return True
        except BudgetExceeded as exc:
            if not agent.budget_extension:
                raise
            if decisions.extension_refused(turn.events, action.step):
                raise  # refused, or nobody answered in time
            turn.ask(
                InputKind.BUDGET_EXTENSION,
                step=action.step,
                response_schema=BUDGET_EXTENSION_SCHEMA,
                expires_in=agent.requests_expire_in,
                answered_by=agent.answered_by,
                detail=decisions.extension_detail(exc),
            )
            return False
