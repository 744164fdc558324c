"""A turn's timeline: its attempts, steps and waits, read off its journal events.

Built from what was committed and nothing else, so the same events give the same
timeline on any API process, after any crash. It carries ids, timings, fences,
usage and verdicts, never message content: a tool's result, a model's text and an
answer's fields stay in the journal (the console shows them from the event stream).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from runtime.states import TERMINAL_STATES, EventType
from store.records import EventRecord, TurnRecord

_OUTCOMES = (EventType.MODEL_COMPLETED, EventType.TOOL_COMPLETED, EventType.TOOL_INTERRUPTED)


def _ms(start: datetime, end: datetime) -> int:
    return max(0, round((end - start).total_seconds() * 1000))


def _verdict(response: Any) -> str:
    if not isinstance(response, dict):
        return "answered"
    if response.get("expired"):
        return "expired"
    if isinstance(response.get("approved"), bool):
        return "approved" if response["approved"] else "denied"
    outcome = response.get("outcome")
    if isinstance(outcome, str) and len(outcome) <= 32:
        return outcome
    return "answered"


def _usage(data: dict[str, Any]) -> dict[str, int] | None:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    return {str(k): int(v) for k, v in usage.items() if isinstance(v, int | float)}


def _step(e: EventRecord, attempt: int, previous: datetime) -> dict[str, Any]:
    data = e.data
    if e.type == EventType.CONTEXT_COMPACTED:
        kind, name, outcome = "compaction", data.get("model"), "ok"
    elif e.type == EventType.MODEL_COMPLETED:
        kind, name, outcome = "model", data.get("model"), "ok"
    else:
        message = data.get("message") or {}
        kind, name = "tool", data.get("tool") or message.get("name")
        interrupted = e.type == EventType.TOOL_INTERRUPTED
        outcome = (
            "interrupted"
            if interrupted
            else ("error" if data.get("error") or message.get("is_error") else "ok")
        )
    recorded = data.get("duration_ms")
    duration = int(recorded) if isinstance(recorded, int | float) else None
    cost = data.get("cost")
    return {
        "step": e.step,
        "kind": kind,
        "name": None if name is None else str(name),
        "seq": e.seq,
        "attempt": attempt,
        "fence": e.fence,
        "committed_at": e.created_at.isoformat(),
        "duration_ms": duration if duration is not None else _ms(previous, e.created_at),
        "retries": int(data.get("retries") or 0),
        "outcome": outcome,
        "usage": _usage(data),
        "cost": float(cost) if isinstance(cost, int | float) else None,
    }


def _wait(e: EventRecord) -> dict[str, Any]:
    tool = e.data.get("tool")
    return {
        "request_id": str(e.data.get("request_id")),
        "kind": e.data.get("kind"),
        "step": e.step if e.step is not None else e.data.get("step"),
        "tool": tool.get("name") if isinstance(tool, dict) else None,
        "requested_seq": e.seq,
        "requested_at": e.created_at.isoformat(),
        "resolved_at": None,
        "waited_ms": None,
        "outcome": None,
        "answered_by": None,
    }


def timeline(
    turn: TurnRecord,
    events: Sequence[EventRecord],
    turn_json: dict[str, Any],
    now: datetime | None = None,
) -> dict[str, Any]:
    """The body of ``GET /v1/sessions/{sid}/turns/{tid}/timeline``."""
    attempts: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    waits: dict[str, dict[str, Any]] = {}
    attempt, previous = 0, turn.created_at
    for e in events:
        if e.type == EventType.TURN_STARTED:
            attempt = int(e.data.get("attempt") or attempt + 1)
            attempts.append(
                {
                    "attempt": attempt,
                    "fence": e.fence,
                    "seq": e.seq,
                    "started_at": e.created_at.isoformat(),
                }
            )
        elif e.type in _OUTCOMES or e.type == EventType.CONTEXT_COMPACTED:
            steps.append(_step(e, attempt, previous))
        elif e.type == EventType.INPUT_REQUESTED:
            waits[str(e.data.get("request_id"))] = _wait(e)
        elif e.type == EventType.INPUT_RESOLVED:
            wait = waits.get(str(e.data.get("request_id")))
            if wait is not None:
                wait["resolved_at"] = e.created_at.isoformat()
                wait["waited_ms"] = _ms(datetime.fromisoformat(wait["requested_at"]), e.created_at)
                wait["outcome"] = _verdict(e.data.get("response"))
                by = e.data.get("by")
                wait["answered_by"] = None if by is None else str(by)
        previous = e.created_at
    end = turn.updated_at if turn.state in TERMINAL_STATES else (now or datetime.now(UTC))
    return {
        "turn": turn_json,
        "attempts": attempts,
        "steps": steps,
        "waits": list(waits.values()),
        "elapsed_ms": _ms(turn.created_at, end),
    }
