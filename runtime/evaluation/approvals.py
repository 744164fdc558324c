"""How an experiment answers what its turns wait on: an approval as the run's declared
policy says (by tool, else its default); a wait the runtime answers itself (a timer, a
delegation) is left to it; anything else (a question, credentials, a reconciliation,
a budget extension) has nobody to answer it in an experiment, so the case's turn is
cancelled and its result says so."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from turnkeep.evaluation import ApprovalPolicy
from turnkeep.runtime import input_groups
from turnkeep.runtime.inputs import InputKind

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


def answers(policy: ApprovalPolicy, pending_input: Mapping[str, Any] | None) -> Answers:
    """The answers to a parked turn's open requests under ``policy``."""
    open_requests = input_groups.open_requests(pending_input)
    responses: dict[str, dict[str, Any]] = {}
    for request in open_requests:
        kind = str(request.get("kind"))
        if kind in RUNTIME_KINDS:
            continue
        if kind != InputKind.APPROVAL.value:
            return Answers({}, cancel=True)
        tool = str((request.get("tool") or {}).get("name") or "")
        yes = approve(policy, tool)
        responses[str(request["request_id"])] = {
            "approved": yes,
            "reason": f"experiment policy: {'approve' if yes else 'deny'} {tool}",
        }
    return Answers(responses)
