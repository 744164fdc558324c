"""One checkpoint as a turn's attempt writes it: built once by the turn handle
(worker/turn.py ``TurnHandle.commit``), redacted by the checkpoint
(worker/checkpoint.py), and written by ``Store.turns.append`` under the lease's fence,
which reads the statement's parameters from here (``fenced_append``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from turnkeep.runtime.states import TERMINAL_STATES, EventType, TurnState
from turnkeep.store.rows import jsonb


def _json(value: Mapping[str, Any] | None) -> Any:
    return jsonb(None if value is None else dict(value))


@dataclass(frozen=True, slots=True)
class StepCommit:
    turn_id: str
    #: the turn's revision the commit expects (compare-and-swap)
    revision: int
    #: the state the turn moves to
    state: TurnState
    type: EventType
    data: Mapping[str, Any]
    step: int | None = None
    attempt_inc: int = 0
    result: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    pending_input: Mapping[str, Any] | None = None
    #: the terminal event a settling step appends after its own, in the same statement
    then: tuple[EventType, Mapping[str, Any]] | None = None
    #: the step's tokens and cost, added to the turn's and the session's
    usage: Mapping[str, float] | None = None
    #: the definition the turn runs on from this step (``turn.definition_changed``)
    agent_hash: str | None = None
    agent_version: str | None = None
    #: a model call's opaque provider state, kept beside its event, never in it
    provider_state: Mapping[str, Any] | None = None

    def params(self, tenant_id: str, session_id: str, fence: int) -> dict[str, Any]:
        """``fenced_append``'s parameters, under ``fence``."""
        then, kept = self.then, self.provider_state
        return {
            "tenant_id": tenant_id,
            "session_id": session_id,
            "turn_id": self.turn_id,
            "fence": fence,
            "revision": self.revision,
            "state": self.state.value,
            "type": self.type.value,
            "step": self.step,
            "attempt_inc": self.attempt_inc,
            "data": jsonb(dict(self.data)),
            "result": _json(self.result),
            "error": _json(self.error),
            "pending_input": _json(self.pending_input),
            "n_events": 1 if then is None else 2,
            "then_type": None if then is None else then[0].value,
            "then_data": None if then is None else jsonb(dict(then[1])),
            "settles": self.state in TERMINAL_STATES,
            "usage": _json(self.usage),
            "agent_hash": self.agent_hash,
            "agent_version": self.agent_version,
            "provider_state": _json(kept),
            "provider": None if kept is None else str(kept.get("provider")),
        }
