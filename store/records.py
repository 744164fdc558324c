"""Frozen records the store hands out. Rows never leave the store as cursors."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from runtime.states import RUNNABLE_STATES, TurnState


@dataclass(frozen=True)
class SessionRecord:
    tenant_id: str
    session_id: str
    agent_name: str
    fence: int
    head_seq: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class TurnRecord:
    tenant_id: str
    session_id: str
    turn_id: str
    ordinal: int
    state: TurnState
    agent_name: str
    agent_hash: str
    input_hash: str
    input: dict[str, Any]
    output_schema: dict[str, Any] | None
    budget: dict[str, Any] | None
    attempt: int
    revision: int
    cancel_requested: bool
    pending_input: dict[str, Any] | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    accepted_seq: int
    created_at: datetime
    updated_at: datetime

    @property
    def runnable(self) -> bool:
        """Whether a worker can step it now: queued, running, or waiting on an input
        request that has been answered (or has expired and been settled)."""
        if self.state in RUNNABLE_STATES:
            return True
        return self.state is TurnState.WAITING and bool(
            self.pending_input and self.pending_input.get("resolved")
        )


@dataclass(frozen=True)
class EventRecord:
    tenant_id: str
    session_id: str
    seq: int
    turn_id: str
    type: str
    step: int | None
    fence: int
    data: dict[str, Any]
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        """The public form, as SSE and the JSON page send it (no tenant)."""
        return {
            "seq": self.seq,
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "type": self.type,
            "step": self.step,
            "data": self.data,
            "created_at": self.created_at.isoformat(),
        }


@dataclass(frozen=True)
class Admission:
    """What admission answered: the stored turn, and whether this request created it."""

    turn: TurnRecord
    created: bool


@dataclass(frozen=True)
class Appended:
    """What a fenced append returned: the event's seq and the turn's new revision."""

    seq: int
    revision: int
    attempt: int
    cancel_requested: bool
    event: EventRecord
