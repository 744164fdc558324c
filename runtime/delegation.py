"""Delegation: an agent hands bounded tasks to specialists, each a child turn.

An agent definition names its ``specialists``. The model is offered one generated
tool per specialist, ``delegate_<name>``, taking ``{"tasks": [{"id", "prompt"}, …]}``.
A call becomes, in the parent's step:

1. one child turn per task, admitted through the same admission statement as any
   turn, with ids derived on the server from (tenant, parent session, parent turn,
   step, task id): a crash anywhere before the parent parks re-admits the same ids,
   which replay, so there is never a second child;
2. a ``delegation`` input request the parent parks on, holding no lease; the runtime
   answers it (never a person) once every child has ended, with their outcomes;
3. on resume, the step's outcome (``tool.completed``) is the children's outcomes
   joined in task order: one join, by the one-outcome-per-step index.

Children of one call run in at most ``max_concurrent`` lanes: a lane is a session,
and a session runs its turns one at a time, oldest first, so task ``i`` goes to lane
``i mod max_concurrent`` and no more than that many run at once. A child's tools are
the specialist agent's, narrowed to the specialist's allowlist and to the tool names
the parent itself holds; its budget is the specialist's, capped by an equal share of
what the parent has left (its cost bound included), and what the children spent
(tokens and cost) counts against the parent's own bounds once they are joined. Depth
and fan-out beyond the ceilings, an invalid task list, are typed errors the model sees
as the call's result (nothing is admitted).

Pure: no I/O. The worker does the admitting and the answering (worker/delegation.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnkeep.runtime.errors import RuntimeErrorBase
from turnkeep.runtime.hashing import sha256_hex

#: generated tool names: ``delegate_<specialist>``
TOOL_PREFIX = "delegate_"
#: a task id as the model gives it
TASK_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
#: characters of one task's prompt
MAX_PROMPT_CHARS = 20_000
#: the answer schema of a delegation request (the runtime's own answer)
RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"children": {"type": "array"}},
    "required": ["children"],
}
#: who answers a delegation request: the runtime, when the children have ended
ANSWERED_BY = "runtime"
#: a child's error code when its session was deleted or expired before the join
#: (persisted: the join's result holds it)
CHILD_DELETED = "child_deleted"


class DelegationRefused(RuntimeErrorBase):
    """Raised when the ceilings or the task rules refuse a delegate call: the model sees
    ``code`` and the message as the call's error result; nothing is admitted."""

    code = "delegation_refused"


class DelegationInvalid(DelegationRefused):
    """Raised when a delegate call's tasks are malformed (not a non-empty list of
    objects, an id or a prompt out of bounds, an id given twice)."""

    code = "delegation_invalid"


class FanoutExceeded(DelegationRefused):
    """Raised when a delegate call names more tasks than the specialist's ``max_fanout``."""

    code = "delegation_fanout_exceeded"


class DepthExceeded(DelegationRefused):
    """Raised when the children would be deeper than the specialist's ``max_depth``."""

    code = "delegation_depth_exceeded"


@dataclass(frozen=True)
class Specialist:
    """A specialist an agent may delegate to."""

    #: the name the tool carries (``delegate_<name>``)
    name: str
    #: the agent that runs each task (its name in the same agents module)
    agent: str
    description: str = ""
    #: tool names the child may use (None: all of the specialist agent's); always
    #: narrowed further to the names the parent holds
    tools: tuple[str, ...] | None = None
    #: the child's bounds (a turn budget: max_model_calls, max_tool_calls, …)
    budget: dict[str, Any] = field(default_factory=dict)
    #: JSON schema every child's final answer must match
    output_schema: dict[str, Any] | None = None
    #: delegation depth a child of this specialist may be at (the parent's depth + 1)
    max_depth: int = 1
    #: tasks one call may carry
    max_fanout: int = 8
    #: children of one call that run at once
    max_concurrent: int = 4

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_]{1,48}", self.name):
            raise ValueError(f"specialist name {self.name!r}: letters, digits and _ only")
        if not (self.max_depth >= 1 and self.max_fanout >= 1 and self.max_concurrent >= 1):
            raise ValueError(f"specialist {self.name!r}: every ceiling must be at least 1")

    @property
    def tool_name(self) -> str:
        return TOOL_PREFIX + self.name

    def parameters(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "tasks": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": self.max_fanout,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "pattern": TASK_ID.pattern},
                            "prompt": {"type": "string", "maxLength": MAX_PROMPT_CHARS},
                        },
                        "required": ["id", "prompt"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["tasks"],
            "additionalProperties": False,
        }

    def describe(self) -> dict[str, Any]:
        """What the agent's definition hash pins of it."""
        return {
            "name": self.name,
            "agent": self.agent,
            "description": self.description,
            "tools": None if self.tools is None else sorted(self.tools),
            "budget": self.budget,
            "output_schema": self.output_schema,
            "max_depth": self.max_depth,
            "max_fanout": self.max_fanout,
            "max_concurrent": self.max_concurrent,
        }


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str


@dataclass(frozen=True)
class Child:
    """Where one task runs: its lane (session) and its turn."""

    task: Task
    session_id: str
    turn_id: str


def parse_tasks(specialist: Specialist, arguments: dict[str, Any]) -> list[Task]:
    """The call's tasks in order; ``DelegationRefused`` for a list the rules refuse."""
    raw = arguments.get("tasks")
    if not isinstance(raw, list) or not raw:
        raise DelegationInvalid("tasks must be a non-empty list")
    if len(raw) > specialist.max_fanout:
        raise FanoutExceeded(
            f"{len(raw)} tasks: {specialist.tool_name} takes at most {specialist.max_fanout}",
        )
    tasks: list[Task] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise DelegationInvalid(f"task {i} is not an object")
        tid, prompt = item.get("id"), item.get("prompt")
        if not isinstance(tid, str) or not TASK_ID.fullmatch(tid):
            raise DelegationInvalid(f"task {i}: id must match {TASK_ID.pattern}")
        if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_PROMPT_CHARS:
            raise DelegationInvalid(
                f"task {tid!r}: prompt must be text of 1 to {MAX_PROMPT_CHARS} characters",
            )
        if any(t.id == tid for t in tasks):
            raise DelegationInvalid(f"task id {tid!r} is given twice")
        tasks.append(Task(tid, prompt))
    return tasks


def check_depth(specialist: Specialist, parent_depth: int) -> int:
    """The children's depth; ``DelegationRefused`` past the specialist's ceiling."""
    depth = parent_depth + 1
    if depth > specialist.max_depth:
        raise DepthExceeded(
            f"delegation depth {depth} is past {specialist.tool_name}'s ceiling of "
            f"{specialist.max_depth}",
        )
    return depth


def children(
    specialist: Specialist,
    tenant_id: str,
    session_id: str,
    turn_id: str,
    step: int,
    tasks: Sequence[Task],
) -> list[Child]:
    """Each task's lane and turn id, derived from where the call is, never from the
    model: the same call after a crash names the same children."""
    call = sha256_hex([tenant_id, session_id, turn_id, step])[:24]
    lanes = min(specialist.max_concurrent, len(tasks))
    return [
        Child(
            task=task,
            session_id=f"dlg-{call}-{i % lanes}",
            turn_id=f"dlg-{sha256_hex([tenant_id, session_id, turn_id, step, task.id])[:32]}",
        )
        for i, task in enumerate(tasks)
    ]


_SHARED = ("max_iterations", "max_model_calls", "max_tool_calls", "max_tokens")


def child_budget(specialist: Specialist, remaining: dict[str, float], count: int) -> dict[str, Any]:
    """The specialist's budget, each bound capped by an equal share of what the parent
    has left (at least 1), and no more wall time than the parent has."""
    budget = dict(specialist.budget)
    for name in _SHARED:
        if name in remaining:
            share = max(1, int(remaining[name]) // max(count, 1))
            budget[name] = min(int(budget.get(name, share)), share)
    if "max_seconds" in remaining:
        left = max(1.0, float(remaining["max_seconds"]))
        budget["max_seconds"] = min(float(budget.get("max_seconds", left)), left)
    if "max_cost_usd" in remaining:
        # no floor: a parent with nothing left to spend gives its children nothing
        dollars = max(0.0, float(remaining["max_cost_usd"])) / max(count, 1)
        budget["max_cost_usd"] = min(float(budget.get("max_cost_usd", dollars)), dollars)
    return budget


def allowed_tools(
    specialist: Specialist, child_tools: Sequence[str], parent_tools: Sequence[str]
) -> list[str]:
    """The child's tools: the specialist agent's, narrowed to the allowlist and to the
    parent's own tool names."""
    allow = set(child_tools) & set(parent_tools)
    if specialist.tools is not None:
        allow &= set(specialist.tools)
    return sorted(allow)


def outcome(
    turn_id: str,
    task_id: str,
    state: str,
    result: Any,
    error: Any,
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One child's part of the answer (and so of the join); ``usage`` is the child
    turn's own (tokens and cost), kept for the parent's bounds, not shown the model."""
    part: dict[str, Any] = {"id": task_id, "turn_id": turn_id, "state": state}
    if result is not None:
        part["result"] = result
    if error is not None:
        part["error"] = error
    if usage:
        part["usage"] = {
            "tokens": int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0)),
            "cost_usd": float(usage.get("cost_usd", 0.0)),
        }
    return part


def deleted(turn_id: str, task_id: str, usage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The part of a child whose session was deleted (or expired): its turn was
    cancelled by the tombstone, and nothing it answered is copied out of an erased
    session; what it spent still counts against the parent's bounds."""
    error = {"code": CHILD_DELETED, "message": "the child's session was deleted"}
    return outcome(turn_id, task_id, "cancelled", None, error, usage)


#: keys of a child's part the runtime keeps for itself
_INTERNAL = frozenset({"turn_id", "usage"})


def joined(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The delegate call's result: the children's outcomes in task order."""
    return {"results": [{k: v for k, v in p.items() if k not in _INTERNAL} for p in parts]}


def spent(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the children spent altogether: recorded on the join (``children_usage``)
    and counted against the parent's bounds from then on (runtime/plan.py)."""
    tokens = sum(int((p.get("usage") or {}).get("tokens", 0)) for p in parts)
    cost = sum(float((p.get("usage") or {}).get("cost_usd", 0.0)) for p in parts)
    return {"tokens": tokens, "cost_usd": cost}
