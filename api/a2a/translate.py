"""A turn as an A2A task, and a committed journal event as A2A stream events.

The state mapping is in the package's docstring (api/a2a/__init__.py): a parked turn
is input-required while its request is open, and working again once it is answered.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from a2a.helpers.proto_helpers import new_data_part
from a2a.server.events import Event
from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from turnkeep.api.service.wire import pending_json as pending_view
from turnkeep.runtime import input_groups
from turnkeep.runtime.pending import TurnWait
from turnkeep.runtime.states import PARKED_STATES, EventType, TurnState
from turnkeep.store.records import EventRecord, TurnRecord

#: journal events after which a task waits for someone, or has ended: a stream ends there
SETTLES = frozenset(
    {
        EventType.INPUT_REQUESTED,
        EventType.TURN_NEEDS_RECONCILIATION,
        EventType.TURN_COMPLETED,
        EventType.TURN_FAILED,
        EventType.TURN_CANCELLED,
    }
)
_STATES = {
    TurnState.QUEUED: TaskState.TASK_STATE_SUBMITTED,
    TurnState.RUNNING: TaskState.TASK_STATE_WORKING,
    TurnState.WAITING: TaskState.TASK_STATE_INPUT_REQUIRED,
    TurnState.NEEDS_RECONCILIATION: TaskState.TASK_STATE_INPUT_REQUIRED,
    TurnState.COMPLETED: TaskState.TASK_STATE_COMPLETED,
    TurnState.FAILED: TaskState.TASK_STATE_FAILED,
    TurnState.CANCELLED: TaskState.TASK_STATE_CANCELED,
}


def open_request(turn: TurnRecord) -> TurnWait | None:
    """The request a parked turn waits on, unanswered; else None."""
    pending = turn.pending_input
    if turn.state in PARKED_STATES and pending is not None and not pending.resolved:
        return pending
    return None


def settled(turn: TurnRecord) -> bool:
    """Ended, or waiting on someone: nothing moves it until someone acts."""
    return turn.state.terminal or open_request(turn) is not None


def task_state(turn: TurnRecord) -> TaskState:
    if turn.state in PARKED_STATES and open_request(turn) is None:
        return TaskState.TASK_STATE_WORKING  # answered: a worker moves it on
    return _STATES[turn.state]


def _message(task_id: str, context_id: str, message_id: str, parts: list[Part]) -> Message:
    return Message(
        message_id=message_id,
        context_id=context_id,
        task_id=task_id,
        role=Role.ROLE_AGENT,
        parts=parts,
    )


def _request_message(task_id: str, context_id: str, pending: TurnWait) -> Message:
    tool = pending.tool or {}
    about = f" for {tool['name']}" if tool.get("name") else ""
    text = (
        f"{pending.kind} requested{about}: answer with a message on this task "
        "whose data part matches response_schema"
    )
    others = len(pending.open_requests()) - 1
    if others > 0:
        text += (
            f" ({others} more open: metadata turnkeep.pending_inputs; answer several with "
            'metadata {"answers": [{"request_id": …, "response": {…}}]})'
        )
    view = pending_view(pending) or {}
    parts = [Part(text=text), new_data_part(view, media_type="application/json")]
    return _message(task_id, context_id, f"{task_id}:{pending.request_id}", parts)


def _result_parts(result: dict[str, Any]) -> list[Part]:
    parts = [Part(text=str(result.get("text", "")))]
    if "output" in result:
        parts.append(new_data_part(result["output"], media_type="application/json"))
    return parts


def _error_text(error: dict[str, Any] | None) -> str:
    error = error or {}
    return f"{error.get('code', 'failed')}: {error.get('message', '')}"


def _status(state: TaskState, at: datetime, message: Message | None) -> TaskStatus:
    status = TaskStatus(state=state, timestamp=at)
    if message is not None:
        status.message.CopyFrom(message)
    return status


def task_of(turn: TurnRecord) -> Task:
    """The task a turn is, read from its row (the journal's summary)."""
    tid, sid = turn.turn_id, turn.session_id
    state = task_state(turn)
    pending = open_request(turn)
    message: Message | None = None
    if pending is not None:
        message = _request_message(tid, sid, pending)
    elif turn.state is TurnState.COMPLETED and turn.result is not None:
        message = _message(tid, sid, f"{tid}:result", _result_parts(turn.result))
    elif turn.state is TurnState.FAILED:
        message = _message(tid, sid, f"{tid}:error", [Part(text=_error_text(turn.error))])
    task = Task(id=tid, context_id=sid, status=_status(state, turn.updated_at, message))
    for i, m in enumerate(turn.input.get("messages") or ()):
        if m.get("role") == "user":
            part = Part(text=str(m.get("content", "")))
            task.history.append(
                Message(
                    message_id=f"{tid}:input:{i}",
                    context_id=sid,
                    task_id=tid,
                    role=Role.ROLE_USER,
                    parts=[part],
                )
            )
    if turn.state is TurnState.COMPLETED and turn.result is not None:
        task.artifacts.append(
            Artifact(artifact_id=f"{tid}:result", name="result", parts=_result_parts(turn.result))
        )
    meta = {
        "agent": turn.agent_name,
        "state": turn.state.value,
        "attempt": turn.attempt,
        "cancel_requested": turn.cancel_requested,
        "pending_input": pending_view(pending),
        # every open request of its wait (the approvals of one answer, asked together)
        "pending_inputs": [
            pending_view(r) for r in (pending.open_requests() if pending is not None else [])
        ],
        "error": turn.error,
    }
    task.metadata.update({"turnkeep": meta})
    return task


def stream_events(event: EventRecord) -> list[Event]:
    """What one committed journal event of a turn is on an A2A stream."""
    tid, sid, kind = event.turn_id, event.session_id, event.type
    where = {"event": kind, "seq": event.seq, "step": event.step}
    out: list[Event] = []
    message: Message | None = None
    state = TaskState.TASK_STATE_WORKING
    if kind == EventType.TURN_ACCEPTED:
        state = TaskState.TASK_STATE_SUBMITTED
    elif kind == EventType.MODEL_COMPLETED:
        content = (event.data.get("message") or {}).get("content")
        if content:
            message = _message(tid, sid, f"{tid}:{event.seq}", [Part(text=str(content))])
    elif kind == EventType.INPUT_REQUESTED and not input_groups.parks(event.data):
        # more are asked with it: working
        where["pending_input"] = pending_view(TurnWait.from_json(event.data))
    elif kind == EventType.INPUT_REQUESTED:
        state = TaskState.TASK_STATE_INPUT_REQUIRED
        asked = TurnWait.from_json(event.data)
        message = _request_message(tid, sid, asked)
        where["pending_input"] = pending_view(asked)
    elif kind == EventType.TURN_NEEDS_RECONCILIATION:
        state = TaskState.TASK_STATE_INPUT_REQUIRED
    elif kind == EventType.TURN_COMPLETED:
        parts = _result_parts(event.data.get("result") or {})
        artifact = Artifact(artifact_id=f"{tid}:result", name="result", parts=parts)
        out.append(
            TaskArtifactUpdateEvent(task_id=tid, context_id=sid, artifact=artifact, last_chunk=True)
        )
        state = TaskState.TASK_STATE_COMPLETED
        message = _message(tid, sid, f"{tid}:result", parts)
    elif kind == EventType.TURN_FAILED:
        state = TaskState.TASK_STATE_FAILED
        message = _message(tid, sid, f"{tid}:error", [Part(text=_error_text(event.data["error"]))])
        where["error"] = event.data.get("error")
    elif kind == EventType.TURN_CANCELLED:
        state = TaskState.TASK_STATE_CANCELED
    status = _status(state, event.created_at, message)
    update = TaskStatusUpdateEvent(task_id=tid, context_id=sid, status=status)
    update.metadata.update({"turnkeep": where})
    out.append(update)
    return out
