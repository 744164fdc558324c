"""Re-run a turn from a step: which of its committed outcomes the new turn reuses, and
the edited outcome it may start from (docs/reruns.md).

A rerun is a new turn with the source turn's input. Its journal starts, after its
``turn.accepted``, with copies of the source's outcomes before ``from_step`` (each
marked ``reused`` with the seq it copies; a reused model call is charged nothing) and,
when one is given, the replacement outcome of ``from_step`` (marked ``edited``). The
worker then runs it as any turn: ``turnkeep.runtime.plan`` finds those steps done and goes on
live from the first one without an outcome, so nothing reused runs again.

Pure: the API (api/service/reruns.py) validates the request against the source's
journal here and admits the result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnkeep.runtime.hashing import sha256_hex
from turnkeep.runtime.journal import JournalEntry
from turnkeep.runtime.messages import Message, Role, ToolCall
from turnkeep.runtime.payloads import ModelCompleted
from turnkeep.runtime.plan import tool_message
from turnkeep.runtime.states import OUTCOME_EVENTS, EventType


class RerunRefused(ValueError):
    """The request does not fit the source's journal: ``where`` names the field."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message


@dataclass(frozen=True)
class EditedToolResult:
    """An edited tool result: what the call answered instead."""

    content: str
    is_error: bool = False


@dataclass(frozen=True)
class ModelAnswer:
    """An edited model answer: its text and the tool calls it asks for."""

    content: str
    tool_calls: Sequence[Mapping[str, Any]] = ()


Replacement = EditedToolResult | ModelAnswer


@dataclass(frozen=True)
class Copy:
    """One event the rerun's journal starts with."""

    type: str
    step: int
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "step": self.step, "data": self.data}


@dataclass(frozen=True)
class Plan:
    """What a rerun is admitted with: its lineage (``TurnInput.rerun``) and the events
    its journal starts with, in step order."""

    lineage: dict[str, Any]
    copies: tuple[Copy, ...]


def _outcomes(events: Sequence[JournalEntry]) -> dict[int, JournalEntry]:
    return {e.step: e for e in events if e.type in OUTCOME_EVENTS and e.step is not None}


def _call_at(outcomes: Mapping[int, JournalEntry], step: int) -> ToolCall | None:
    """The tool call that is ``step``, when a model outcome before it asked for it."""
    for s in sorted((s for s in outcomes if s < step), reverse=True):
        e = outcomes[s]
        if e.type != EventType.MODEL_COMPLETED:
            continue
        calls = Message.from_json(ModelCompleted.from_json(e.data).message).tool_calls
        return calls[step - s - 1] if step - s <= len(calls) else None
    return None


def _answer(answer: ModelAnswer) -> Message:
    calls = []
    for i, c in enumerate(answer.tool_calls):
        name, arguments = c.get("name"), c.get("arguments", {})
        if not isinstance(name, str) or not name:
            raise RerunRefused(f"body.replace.model_answer.tool_calls.{i}.name", "required")
        if not isinstance(arguments, Mapping):
            raise RerunRefused(
                f"body.replace.model_answer.tool_calls.{i}.arguments", "must be an object"
            )
        call_id = c.get("id") or f"edited-{i + 1}"
        calls.append(ToolCall(id=str(call_id), name=name, arguments=dict(arguments)))
    return Message(role=Role.ASSISTANT, content=answer.content, tool_calls=tuple(calls))


def plan(
    source: Sequence[JournalEntry],
    *,
    session_id: str,
    turn_id: str,
    accepted_seq: int,
    from_step: int,
    replacement: Replacement | None,
    by: str,
) -> Plan:
    """The rerun of the source turn (``source``: its events) from ``from_step``.

    Refused (``RerunRefused``): a step before ``from_step`` without a committed outcome
    (the source has not got that far), a ``from_step`` beyond its last step + 1, a tool
    result for a model step or a model answer for a tool step."""
    outcomes = _outcomes(source)
    last = max(outcomes, default=0)
    if from_step > last + 1:
        raise RerunRefused("body.from_step", f"the source turn's last step is {last}")
    missing = [s for s in range(1, from_step) if s not in outcomes]
    if missing:
        raise RerunRefused("body.from_step", f"step {missing[0]} has no committed outcome")
    copies = [
        Copy(
            type=outcomes[s].type,
            step=s,
            data={
                **outcomes[s].data,
                # the rerun did not pay for it: its budget counts what it spends
                **({"charged_cost": 0.0} if outcomes[s].type == EventType.MODEL_COMPLETED else {}),
                "reused": {"turn_id": turn_id, "seq": outcomes[s].seq},
            },
        )
        for s in range(1, from_step)
    ]
    edited: str | None = None
    edit_hash: str | None = None
    if replacement is not None:
        replaced = outcomes.get(from_step)
        marker = {"by": by, "replaces_seq": None if replaced is None else replaced.seq}
        call = _call_at(outcomes, from_step)
        if isinstance(replacement, EditedToolResult):
            if call is None:
                raise RerunRefused("body.replace.tool_result", f"step {from_step} is a model step")
            message = tool_message(call, replacement.content, is_error=replacement.is_error)
            data = {"message": message.to_json(), "edited": marker}
            copies.append(Copy(EventType.TOOL_COMPLETED.value, from_step, data))
            edited = "tool_result"
        else:
            if call is not None:
                raise RerunRefused("body.replace.model_answer", f"step {from_step} is a tool step")
            message = _answer(replacement)
            data = {"message": message.to_json(), "usage": {}, "edited": marker}
            copies.append(Copy(EventType.MODEL_COMPLETED.value, from_step, data))
            edited = "model_answer"
        edit_hash = sha256_hex(message.to_json())
    lineage = {
        "session_id": session_id,
        "turn_id": turn_id,
        "from_step": from_step,
        "edited": edited,
        "edit_hash": edit_hash,
        "by": by,
        # the rerun sees the conversation the source saw: the session's events
        # before the source was admitted (store/sql/turns.sql start_turn)
        "before_seq": accepted_seq,
    }
    return Plan(lineage=lineage, copies=tuple(copies))
