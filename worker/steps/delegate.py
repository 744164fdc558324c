"""A delegation step: a ``delegate_<name>`` call admits one child turn per task (with
a budget cut from what the parent has left) and parks the parent on them; once they
have all ended, their outcomes are committed as the call's result. The rules and ids
are runtime/delegation.py's, the admission worker/delegation.py's and the answer
store/delegation.py's.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from turnkeep.runtime import decisions, delegation, plan
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.delegation import DelegationRefused, Specialist
from turnkeep.runtime.inputs import RUNTIME, InputKind
from turnkeep.runtime.obs.faults import FaultPoint, hit
from turnkeep.runtime.payloads import ToolCompleted
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.delegation import settle_parent
from turnkeep.worker import delegation as delegated
from turnkeep.worker.steps import Verdict
from turnkeep.worker.turn import TurnHandle


class DelegateStep:
    """Runs a turn's calls to specialists."""

    def __init__(self, turn: TurnHandle) -> None:
        self.turn = turn

    def step(self, agent: AgentDefinition, specialist: Specialist, action: plan.RunTool) -> Verdict:
        """A ``delegate_<name>`` call: admit its children and park on them; once they
        have all ended (the runtime's answer), commit their outcomes as the call's."""
        turn = self.turn
        ctx, t, step, call = turn.ctx, turn.record, action.step, action.call
        done = plan.answered(turn.events, step, InputKind.DELEGATION)
        if done is not None:
            response = done[1]
            if response.get("expired"):
                body = {"error": "delegation_expired", "message": "the children did not end"}
                return self._outcome(specialist, action, body, is_error=True)
            hit(FaultPoint.BEFORE_JOIN)
            parts = response.get("children") or []
            return self._outcome(
                specialist,
                action,
                delegation.joined(parts),
                is_error=False,
                spent=delegation.spent(parts),
            )
        try:
            tasks = delegation.parse_tasks(specialist, call.arguments)
            depth = delegation.check_depth(specialist, TurnInput.from_json(t.input).depth)
        except DelegationRefused as exc:
            body = {"error": exc.code, "message": str(exc)}
            return self._outcome(specialist, action, body, is_error=True)
        children = delegation.children(
            specialist, t.tenant_id, t.session_id, t.turn_id, step, tasks
        )
        # the version a new turn gets (a gated agent's: the tenant's promoted one)
        child_agent = ctx.agents.default(
            specialist.agent,
            lambda: ctx.store.promotions.promoted_versions(t.tenant_id, specialist.agent),
        )
        delegated.admit_children(
            ctx.store,
            ctx.settings,
            ctx.enqueue,
            t,
            step,
            children,
            agent_name=child_agent.name,
            agent_hash=child_agent.definition_hash,
            agent_version=child_agent.version,
            on_deploy=child_agent.on_deploy.value,
            depth=depth,
            tools=delegation.allowed_tools(
                specialist,
                [x.name for x in child_agent.tools],
                [x.name for x in agent.tools],
            ),
            budget=delegation.child_budget(specialist, self._remaining(agent), len(tasks)),
            output_schema=specialist.output_schema or child_agent.output_schema,
        )
        turn.ask(
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
        settle_parent(
            ctx.store,
            ctx.enqueue,
            t.tenant_id,
            t.session_id,
            t.turn_id,
        )
        return "parked"

    def _outcome(
        self,
        specialist: Specialist,
        action: plan.RunTool,
        body: dict[str, Any],
        *,
        is_error: bool,
        spent: dict[str, Any] | None = None,
    ) -> Verdict:
        message = plan.tool_message(action.call, json.dumps(body), is_error=is_error)
        # an error's code only on an error, what the children spent only on a join
        optional: dict[str, Any] = {"error": body.get("error")} if is_error else {}
        if spent is not None:
            optional["children_usage"] = spent
        data = ToolCompleted(
            message=message.to_json(),
            tool=specialist.tool_name,
            specialist=specialist.name,
            **optional,
        )
        self.turn.commit(
            TurnState.RUNNING, EventType.TOOL_COMPLETED, data.to_json(), step=action.step
        )
        return "settled"

    def _remaining(self, agent: AgentDefinition) -> dict[str, float]:
        """What the turn has left of each bound: what children's budgets are cut from."""
        t = self.turn.record
        elapsed = (datetime.now(UTC) - t.created_at).total_seconds()
        return decisions.remaining(agent.limits, t.budget, self.turn.events, elapsed)
