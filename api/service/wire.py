"""A record as the public JSON the service answers (never the tenant, never the input
hash): the dicts every surface sends as they are. Their shapes are turnkeep/models.py's
``Turn``, ``Session`` and ``PendingInput``, the one home of the wire shapes; the OpenAPI
document's closed view of them is api/http/bodies.py."""

from __future__ import annotations

from typing import Any

from turnkeep.models import PendingInput
from turnkeep.runtime.pending import AskedInput
from turnkeep.store.records import SessionRecord, TurnRecord


def turn_json(turn: TurnRecord) -> dict[str, Any]:
    wait = turn.pending_input
    return {
        "session_id": turn.session_id,
        "turn_id": turn.turn_id,
        "state": turn.state.value,
        "agent": turn.agent_name,
        "attempt": turn.attempt,
        "result": turn.result,
        "error": turn.error,
        "accepted_seq": turn.accepted_seq,
        "created_at": turn.created_at.isoformat(),
        "updated_at": turn.updated_at.isoformat(),
        "cancel_requested": turn.cancel_requested,
        "pending_input": pending_json(wait),
        "pending_inputs": [pending_json(r) for r in (wait.open_requests() if wait else [])],
        "usage": _usage(turn.usage),
        "agent_version": turn.agent_version or None,
        "rerun_of": rerun_of(turn.input),
        "metadata": turn.metadata,
    }


#: what of a rerun's lineage (runtime/reruns.py) the wire shows
_LINEAGE = ("session_id", "turn_id", "from_step", "edited", "by")


def rerun_of(input: dict[str, Any] | None) -> dict[str, Any] | None:
    """The turn a rerun re-runs, from which step, what was edited and by whom."""
    found = input.get("rerun") if isinstance(input, dict) else None
    if not isinstance(found, dict):
        return None
    return {k: found.get(k) for k in _LINEAGE}


#: what of an open request a person is shown: the wire model's fields, in its order
_PENDING_FIELDS = tuple(PendingInput.model_fields)


#: a session's state while no turn of it is active (else its active turn's state)
IDLE = "idle"


def pending_json(request: AskedInput | None) -> dict[str, Any] | None:
    """What a person needs to answer the open request (POST .../inputs/{request_id})."""
    if request is None:
        return None
    pending = request.to_json()
    return {k: pending[k] for k in _PENDING_FIELDS if k in pending}


def _usage(usage: dict[str, Any]) -> dict[str, float]:
    """Tokens and cost as numbers (Postgres hands JSON numbers back as Decimal)."""
    return {k: float(v) if k == "cost_usd" else int(v) for k, v in (usage or {}).items()}


def session_json(session: SessionRecord, active: TurnRecord | None) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "agent": session.agent_name,
        "head_seq": session.head_seq,
        "state": IDLE if active is None else active.state.value,
        "active_turn": None if active is None else active.turn_id,
        "created_at": session.created_at.isoformat(),
        "updated_at": session.updated_at.isoformat(),
        "project": session.project_id,
        "usage": _usage(session.usage),
        "expires_after": session.expires_after,
        "expires_at": None if session.expires_at is None else session.expires_at.isoformat(),
        "metadata": session.metadata,
    }


def turn_location(session_id: str, turn_id: str) -> str:
    return f"/v1/sessions/{session_id}/turns/{turn_id}"
