"""Approvals asked together: the requests of one wait (docs/turn-states.md).

The tool calls of one model answer that need approval are asked for in one wait: each
call keeps its own ``input.requested`` (its own id, binding and expiry, as a request
asked alone has), and the turn's ``pending_input`` is the group: the first request
still open, as a lone request is kept, plus ``group``, every request of the wait with
its answer once it has one. The turn is answered (``resolved`` on the top level, what
start_turn and the scans look at) only once every request of the group is.

The turn's wait is read as a ``runtime.pending.TurnWait`` (its ``open_requests``, ``member``
and ``due`` cover a group). Pure: the store (store/waits.py ``resolve_inputs``) answers
a group by compare-and-swap on the turn's revision with what ``answer`` computes here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from turnkeep.runtime.pending import TurnWait

#: the key of a group's pending_input that lists its requests
GROUP = "group"

#: the key of a grouped request's ``detail``: ``{"nth": i, "of": n}`` (1-based); the
#: turn parks with the commit of the last one (``parks``)
TOGETHER = "together"

#: what an answered request of a group holds besides the request
_ANSWER_KEYS = ("resolved", "response", "response_hash", "by")


def pending(requests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The turn's pending_input for a wait on ``requests`` (asked in call order)."""
    return {**requests[0], GROUP: [dict(r) for r in requests]}


def parks(request: Mapping[str, Any]) -> bool:
    """Whether the commit of this ``input.requested`` parked the turn: a request asked
    alone, or the last of a group (the ones before it are committed with the turn
    still running)."""
    detail = request.get("detail")
    together = detail.get(TOGETHER) if isinstance(detail, Mapping) else None
    if not isinstance(together, Mapping):
        return True
    return bool(together.get("nth") == together.get("of"))


class GroupRefused(ValueError):
    """An answer the group cannot take: ``reason`` is ``missing``, ``answered`` or
    ``expired``."""

    def __init__(self, request_id: str, reason: str) -> None:
        super().__init__(f"request {request_id}: {reason}")
        self.request_id = request_id
        self.reason = reason


@dataclass(frozen=True)
class GroupAnswer:
    """One answer to a request of a group: what the journal keeps of it."""

    request_id: str
    response: Mapping[str, Any]
    response_hash: str


@dataclass(frozen=True)
class GroupAnswered:
    """The group after some answers: the new pending_input, and each answer's
    ``input.resolved`` payload in the order given."""

    pending_input: dict[str, Any]
    resolved: list[dict[str, Any]]


def answer(
    wait: TurnWait,
    answers: Sequence[GroupAnswer],
    *,
    by: str,
    expired: bool = False,
    now: datetime | None = None,
) -> GroupAnswered:
    """Record ``answers`` on the group (``GroupRefused`` for a request not in it, one
    answered already, or one expired, unless ``expired``: the scan settling requests
    past their expiry). The top level becomes the first request still open; once none
    is, the last one, ``resolved``."""
    now = now or datetime.now(UTC)
    asked = wait.requests()
    # the group as it is written back: each request's JSON, answers added in place
    group = [r.to_json() for r in asked]
    at = {r.request_id: i for i, r in enumerate(asked)}
    resolved = []
    for a in answers:
        i = at.get(a.request_id)
        if i is None:
            raise GroupRefused(a.request_id, "missing")
        r = asked[i]
        if r.resolved or group[i].get("resolved"):
            raise GroupRefused(a.request_id, "answered")
        if not expired and r.expired(now):
            raise GroupRefused(a.request_id, "expired")
        response = dict(a.response)
        group[i].update(resolved=True, response=response, response_hash=a.response_hash, by=by)
        resolved.append(
            {
                "request_id": a.request_id,
                "kind": r.kind,
                "step": r.step,
                "response": response,
                "response_hash": a.response_hash,
                "by": by,
            }
        )
    still = [r for r in group if not r.get("resolved")]
    # the first request still open, as a lone one is kept; none: the last, answered
    top = {k: v for k, v in still[0].items() if k not in _ANSWER_KEYS} if still else group[-1]
    return GroupAnswered(pending_input={**top, GROUP: group}, resolved=resolved)
