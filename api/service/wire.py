"""A record as the public JSON the service answers (never the tenant, never the input
hash). Each is built as its wire model (turnkeep/models.py ``Turn``, ``Session``,
``PendingInput``: the one declaration of those shapes, which the client parses and the
OpenAPI document states closed) and dumped as JSON, the dicts every surface sends as
they are. A field the model declares is on the wire, or building it fails."""

from __future__ import annotations

from typing import Any, Final

from turnkeep import models
from turnkeep.models import Held, Paced, PendingInput, RerunOf, Session, Turn
from turnkeep.runtime.pending import AskedInput, TurnWait
from turnkeep.runtime.states import TurnState
from turnkeep.store.records import SessionRecord, TurnRecord

#: a session's state while no turn of it is active (else its active turn's state)
IDLE: Final = "idle"


def turn_wire(turn: TurnRecord, *, held: Held | None = None, paced: Paced | None = None) -> Turn:
    """The turn as it stands; ``held`` and ``paced`` are set only when they apply (the
    routes that read them pass them), and only then on the wire."""
    pending, waiting = _wait(turn.pending_input)
    shown = Turn(
        session_id=turn.session_id,
        turn_id=turn.turn_id,
        state=turn.state.value,
        agent=turn.agent_name,
        attempt=turn.attempt,
        result=turn.result,
        error=turn.error,
        accepted_seq=turn.accepted_seq,
        created_at=turn.created_at,
        updated_at=turn.updated_at,
        cancel_requested=turn.cancel_requested,
        pending_input=pending,
        pending_inputs=waiting,
        usage=turn.usage or {},
        agent_version=turn.agent_version or None,
        rerun_of=rerun_of(turn.input),
        metadata=turn.metadata,
    )
    if held is not None:
        shown.held = held
    if paced is not None:
        shown.paced = paced
    return shown


def turn_json(
    turn: TurnRecord, *, held: Held | None = None, paced: Paced | None = None
) -> dict[str, Any]:
    return as_json(turn_wire(turn, held=held, paced=paced))


def as_json(model: models.Wire) -> dict[str, Any]:
    """``model`` as the JSON the API answers: what was set, in the model's order (an
    open request shows the fields it has, a turn ``held`` and ``paced`` when they
    apply)."""
    return model.model_dump(mode="json", exclude_unset=True)


def rerun_of(input: dict[str, Any] | None) -> RerunOf | None:
    """The turn a rerun re-runs, from which step, what was edited and by whom (its
    lineage, runtime/reruns.py, holds more: only these are shown)."""
    found = input.get("rerun") if isinstance(input, dict) else None
    if not isinstance(found, dict):
        return None
    return RerunOf(
        session_id=found["session_id"],
        turn_id=found["turn_id"],
        from_step=found["from_step"],
        edited=found.get("edited"),
        by=found["by"],
    )


def pending_wire(request: AskedInput | None) -> PendingInput | None:
    """What a person needs to answer the open request (POST .../inputs/{request_id}):
    the request's fields ``PendingInput`` declares, parsed once."""
    return None if request is None else PendingInput.model_validate(_fields(request))


def _fields(request: AskedInput) -> dict[str, Any]:
    # the store keeps more beside a request (a group's members, an answer's hash):
    # a person is shown the declared fields it has, never a default it lacks
    stored = request.to_json()
    return {k: stored[k] for k in _SHOWN if k in stored}


def _wait(wait: TurnWait | None) -> tuple[PendingInput | None, list[PendingInput]]:
    """The turn's open request and every request of its wait nobody answered, each
    parsed once: the first of those is its open request as a rule (asked alone, or a
    group's first)."""
    if wait is None:
        return None, []
    top = _fields(wait)
    asked = [_fields(r) for r in wait.open_requests()]
    waiting = [PendingInput.model_validate(r) for r in asked]
    if asked and asked[0] == top:
        return waiting[0], waiting
    return PendingInput.model_validate(top), waiting


#: what of an open request a person is shown: the wire model's fields
_SHOWN = frozenset(PendingInput.model_fields)


def pending_json(request: AskedInput | None) -> dict[str, Any] | None:
    shown = pending_wire(request)
    return None if shown is None else as_json(shown)


def session_json(session: SessionRecord, active: TurnRecord | None) -> dict[str, Any]:
    if active is None:
        return session_shown(session, None, None)
    return session_shown(session, active.state, active.turn_id)


def session_shown(
    session: SessionRecord, active_state: TurnState | None, active_turn: str | None
) -> dict[str, Any]:
    """The session with its active turn's state and id (none: ``idle``)."""
    shown = Session(
        session_id=session.session_id,
        agent=session.agent_name,
        head_seq=session.head_seq,
        state=IDLE if active_state is None else active_state.value,
        active_turn=active_turn,
        created_at=session.created_at,
        updated_at=session.updated_at,
        project=session.project_id,
        usage=session.usage or {},
        expires_after=session.expires_after,
        expires_at=session.expires_at,
        metadata=session.metadata,
    )
    return as_json(shown)


def turn_location(session_id: str, turn_id: str) -> str:
    return f"/v1/sessions/{session_id}/turns/{turn_id}"
