"""A turn's committed journal as the assertions read it: the tool calls its model asked
for, in order, and whether each ran; its outcome; its figures; and every text it wrote.
Pure: built from the events and the turn's row as the store hands them out.

A call "ran" unless its approval was refused (or expired) or the tool was unknown: the
none-of assertion ``never_called`` is about what ran, ``tool_called`` and its kin about
what the model asked for.

``recovered`` counts the attempts that took the turn over from a worker that died (or
lost its lease) while the turn was running: a ``turn.started`` that follows a running
stretch nothing parked or ended. A turn parked on an answer and started again is not
one. The promotion gate's recovery check needs at least one (runtime/evaluation/gate.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from turnkeep.runtime import input_groups
from turnkeep.runtime.inputs import InputKind
from turnkeep.runtime.payloads import InputRequested, InputResolved, ModelCompleted, ToolCompleted
from turnkeep.runtime.states import OUTCOME_EVENTS, ErrorCode, EventType

__all__ = ["JournalEvent", "Trajectory", "TrajectoryCall", "trajectory"]


class JournalEvent(Protocol):
    """What is read of a committed event (``turnkeep.store.records.EventRecord``)."""

    @property
    def type(self) -> str: ...
    @property
    def step(self) -> int | None: ...
    @property
    def data(self) -> Mapping[str, Any]: ...
    @property
    def created_at(self) -> datetime: ...


@dataclass(frozen=True)
class TrajectoryCall:
    """A tool call the model asked for."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str
    #: the step of the model answer that asked for it
    step: int
    #: its function ran (not refused, not an unknown tool, nor never reached)
    ran: bool


@dataclass(frozen=True)
class Trajectory:
    state: str
    error_code: str | None
    #: the final answer's text, and its parsed output (``has_output``: the turn had an
    #: output schema and completed)
    text: str | None
    output: Any
    has_output: bool
    output_schema: Mapping[str, Any] | None
    calls: tuple[TrajectoryCall, ...]
    model_calls: int
    tool_calls: int
    tokens: int
    cost_usd: float
    latency_ms: int | None
    recovered: int
    #: everything the turn wrote (every event's data but its admitted input, the result,
    #: the error), as the text ``never_appears`` is looked for in
    texts: tuple[str, ...]

    @property
    def steps(self) -> int:
        return self.model_calls + self.tool_calls

    def measure(self, of: str) -> float:
        return {
            "steps": self.steps,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
        }[of]


def strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, keys included; iterative (a deep value costs no
    recursion)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            for k, v in item.items():
                yield str(k)
                stack.append(v)
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _refused(events: Sequence[JournalEvent]) -> set[str]:
    """The call ids whose approval was refused or expired unanswered."""
    asked: dict[str, str] = {}
    refused: set[str] = set()
    for e in events:
        if e.type == EventType.INPUT_REQUESTED:
            req = InputRequested.from_json(e.data)
            if req.kind == InputKind.APPROVAL and req.call_id:
                asked[req.request_id] = req.call_id
        elif e.type == EventType.INPUT_RESOLVED:
            res = InputResolved.from_json(e.data)
            call = asked.get(res.request_id)
            if call is not None and not res.response.get("approved"):
                refused.add(call)
    return refused


#: events after which no attempt is running the turn (it parked, or ended)
_STOPS = frozenset(
    {
        EventType.TURN_NEEDS_RECONCILIATION,
        EventType.TURN_COMPLETED,
        EventType.TURN_FAILED,
        EventType.TURN_CANCELLED,
    }
)


def _recovered(events: Sequence[JournalEvent]) -> int:
    running = False
    taken_over = 0
    for e in events:
        if e.type == EventType.TURN_STARTED:
            taken_over += int(running)
            running = True
        elif e.type in _STOPS or (
            e.type == EventType.INPUT_REQUESTED and input_groups.parks(e.data)
        ):
            running = False
    return taken_over


def trajectory(
    events: Sequence[JournalEvent],
    *,
    state: str,
    result: Mapping[str, Any] | None,
    error: Mapping[str, Any] | None,
    usage: Mapping[str, Any] | None,
    output_schema: Mapping[str, Any] | None,
) -> Trajectory:
    """The trajectory of a turn from its events (oldest first) and its row's fields."""
    refused = _refused(events)
    outcomes: dict[str, ToolCompleted | None] = {}
    asked: list[tuple[str, Mapping[str, Any], str, int]] = []
    model_calls = tool_calls = 0
    texts: list[str] = []
    first = last = None
    for e in events:
        first = first or e.created_at
        last = e.created_at
        if e.type != EventType.TURN_ACCEPTED:
            texts.extend(strings(e.data))
        if e.type == EventType.MODEL_COMPLETED:
            model_calls += 1
            message = ModelCompleted.from_json(e.data).message
            for c in message.get("tool_calls") or []:
                args = c.get("arguments")
                asked.append(
                    (str(c.get("name")), args if isinstance(args, dict) else {}, str(c.get("id")),
                     e.step or 0)
                )  # fmt: skip
        elif e.type in OUTCOME_EVENTS:
            tool_calls += 1
            call_id = str(e.data.get("message", {}).get("tool_call_id") or "")
            outcomes[call_id] = (
                ToolCompleted.from_json(e.data) if e.type == EventType.TOOL_COMPLETED else None
            )
    calls = []
    for name, args, call_id, step in asked:
        done = call_id in outcomes
        outcome = outcomes.get(call_id)
        unknown = outcome is not None and outcome.error == ErrorCode.UNKNOWN_TOOL
        calls.append(
            TrajectoryCall(
                name, args, call_id, step, done and call_id not in refused and not unknown
            )
        )
    result = result or {}
    texts.extend(strings(dict(result)))
    texts.extend(strings(dict(error or {})))
    usage = usage or {}
    tokens = sum(int(usage.get(k) or 0) for k in ("input_tokens", "output_tokens"))
    terminal = state in ("completed", "failed", "cancelled")
    return Trajectory(
        state=state,
        error_code=str((error or {}).get("code") or "") or None,
        text=result.get("text") if isinstance(result.get("text"), str) else None,
        output=result.get("output"),
        has_output="output" in result,
        output_schema=output_schema,
        calls=tuple(calls),
        model_calls=model_calls,
        tool_calls=tool_calls,
        tokens=tokens,
        cost_usd=float(usage.get("cost_usd") or 0.0),
        latency_ms=(
            int((last - first).total_seconds() * 1000)
            if terminal and first is not None and last is not None
            else None
        ),
        recovered=_recovered(events),
        texts=tuple(texts),
    )
