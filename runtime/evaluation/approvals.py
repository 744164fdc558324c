"""How an experiment answers what its turns wait on: an approval as the run's declared
policy says (by tool, else its default); a wait the runtime answers itself (a timer, a
delegation) is left to it; anything else (a question, credentials, a reconciliation,
a budget extension) has nobody to answer it in an experiment, so the case's turn is
cancelled and its result says so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from turnkeep.evaluation import ApprovalPolicy
from turnkeep.runtime.inputs import InputKind
from turnkeep.runtime.pending import TurnWait

#: kinds the runtime answers by itself
RUNTIME_KINDS = frozenset({InputKind.TIMER.value, InputKind.DELEGATION.value})


@dataclass(frozen=True)
class Answers:
    """What to do with a parked turn: answer ``responses`` (request id -> response), or
    ``cancel`` it, or nothing (both empty: the runtime answers)."""

    responses: dict[str, dict[str, Any]]
    cancel: bool = False


def approve(policy: ApprovalPolicy, tool: str) -> bool:
    return (policy.tools.get(tool) or policy.default) == "approve"


def answers(policy: ApprovalPolicy, wait: TurnWait | None) -> Answers:
    """The answers to a parked turn's open requests under ``policy``."""
    responses: dict[str, dict[str, Any]] = {}
    for request in [] if wait is None else wait.open_requests():
        kind = request.kind
        if kind in RUNTIME_KINDS:
            continue
        if kind != InputKind.APPROVAL.value:
            return Answers({}, cancel=True)
        tool = str((request.tool or {}).get("name") or "")
        yes = approve(policy, tool)
        responses[request.request_id] = {
            "approved": yes,
            "reason": f"experiment policy: {'approve' if yes else 'deny'} {tool}",
        }
    return Answers(responses)
