"""A turn's timeline: its attempts, steps and waits, read off its journal events.

Built from what was committed and nothing else, so the same events give the same
timeline on any API process, after any crash. Each step has its start (its recorded
duration before its commit) and each attempt its end (its last commit) and kind: the
first ``start``, a ``resume`` after a wait (the same attempt), or a ``takeover`` (a
higher attempt: the run before died or lost its lease, and what it had not committed
was done again): what the console's waterfall draws (api/console/waterfall.js).

It carries ids, timings, fences, usage and verdicts, never message content: a tool's
result, a model's text and an answer's fields stay in the journal (the console shows
them from the event stream).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from turnkeep.api.service.wire import turn_json
from turnkeep.models import Paced
from turnkeep.runtime.pacing import paced_now, until
from turnkeep.runtime.payloads import (
    ContextCompacted,
    InputRequested,
    InputResolved,
    ModelCompleted,
    ToolCompleted,
    ToolInterrupted,
    ToolOutcome,
    TurnStarted,
    outcome_of,
)
from turnkeep.runtime.states import TERMINAL_STATES, EventType, TurnState
from turnkeep.store.records import EventRecord, TurnRecord

_OUTCOMES = (EventType.MODEL_COMPLETED, EventType.TOOL_COMPLETED, EventType.TOOL_INTERRUPTED)


def _ms(start: datetime, end: datetime) -> int:
    return max(0, round((end - start).total_seconds() * 1000))


def _verdict(response: Any) -> str:
    if not isinstance(response, dict):
        return "answered"
    if response.get("expired"):
        return "expired"
    if response.get("woken") is True:
        return "woken"  # a timer's time came (runtime/timers.py)
    if isinstance(response.get("approved"), bool):
        return "approved" if response["approved"] else "denied"
    outcome = response.get("outcome")
    if isinstance(outcome, str) and len(outcome) <= 32:
        return outcome
    return "answered"


def _usage(usage: Any) -> dict[str, int] | None:
    if not isinstance(usage, dict):
        return None
    return {str(k): int(v) for k, v in usage.items() if isinstance(v, int | float)}


def _started(committed: datetime, duration: int | None, previous: datetime) -> datetime:
    """When a step began: its recorded duration before its commit, never before the
    event it followed (the worker's clock and Postgres's may differ a little); with no
    recorded duration, right after that event."""
    if duration is None:
        return previous
    return max(previous, committed - timedelta(milliseconds=duration))


def _step(e: EventRecord, attempt: int, previous: datetime) -> dict[str, Any]:
    # what each outcome's payload carries (runtime/payloads.py); a key it lacks reads
    # as None here, as it always did (usage: only when the event holds one)
    found: ContextCompacted | ModelCompleted | ToolOutcome = (
        ContextCompacted.from_json(e.data)
        if e.type == EventType.CONTEXT_COMPACTED
        else outcome_of(e.type, e.data)
    )
    recorded = retries = cost = usage = None
    if isinstance(found, ContextCompacted):
        kind, name, outcome = "compaction", found.model, "ok"
        cost, usage = found.cost, found.usage if found.has("usage") else None
    elif isinstance(found, ModelCompleted):
        kind, name, outcome = "model", found.model, "ok"
        recorded, retries, cost = found.duration_ms, found.retries, found.cost
        usage = found.usage if found.has("usage") else None
    else:
        message = found.message or {}
        kind, name = "tool", found.tool or message.get("name")
        error = None
        if isinstance(found, ToolCompleted):
            recorded, retries, error = found.duration_ms, found.retries, found.error
        outcome = (
            "interrupted"
            if isinstance(found, ToolInterrupted)
            else ("error" if error or message.get("is_error") else "ok")
        )
    duration = int(recorded) if isinstance(recorded, int | float) else None
    return {
        "step": e.step,
        "started_at": _started(e.created_at, duration, previous).isoformat(),
        "kind": kind,
        "name": None if name is None else str(name),
        "seq": e.seq,
        "attempt": attempt,
        "fence": e.fence,
        "committed_at": e.created_at.isoformat(),
        "duration_ms": duration if duration is not None else _ms(previous, e.created_at),
        "retries": int(retries or 0),
        "outcome": outcome,
        "usage": _usage(usage),
        "cost": float(cost) if isinstance(cost, int | float) else None,
        # a rerun's first steps: the source's outcomes, and the edited one (runtime/reruns.py)
        "origin": "reused" if "reused" in e.data else "edited" if "edited" in e.data else "live",
    }


def _kind(before: int, attempt: int, resumed: bool) -> str:
    if not resumed:
        return "start"
    return "takeover" if attempt > before else "resume"


def _request_id(found: InputRequested | InputResolved) -> str:
    # str() of an absent id is "None", as it always was
    return str(found.request_id if found.has("request_id") else None)


def _wait(e: EventRecord) -> dict[str, Any]:
    request = InputRequested.from_json(e.data)
    tool = request.tool
    return {
        "request_id": _request_id(request),
        "kind": request.kind if request.has("kind") else None,
        "step": e.step if e.step is not None else request.step,
        "tool": tool.get("name") if isinstance(tool, dict) else None,
        "requested_seq": e.seq,
        "requested_at": e.created_at.isoformat(),
        "resolved_at": None,
        "waited_ms": None,
        "outcome": None,
        "answered_by": None,
    }


def timeline(
    turn: TurnRecord, events: Sequence[EventRecord], now: datetime | None = None
) -> dict[str, Any]:
    """The body of ``GET /v1/sessions/{sid}/turns/{tid}/timeline``."""
    attempts: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    waits: dict[str, dict[str, Any]] = {}
    attempt, previous = 0, turn.created_at
    #: the last commit of the run going on (an event under its fence: not the API's)
    run_end = turn.created_at
    for e in events:
        if e.type == EventType.TURN_STARTED:
            before, attempt = attempt, int(TurnStarted.from_json(e.data).attempt or attempt + 1)
            if attempts:
                attempts[-1]["ended_at"] = run_end.isoformat()
            attempts.append(
                {
                    "attempt": attempt,
                    "fence": e.fence,
                    "seq": e.seq,
                    "started_at": e.created_at.isoformat(),
                    "ended_at": None,
                    # after a wait the attempt goes on; a higher one is another run's
                    # (its worker died or lost the lease): a takeover
                    "kind": _kind(before, attempt, bool(attempts)),
                }
            )
        elif e.type in _OUTCOMES or e.type == EventType.CONTEXT_COMPACTED:
            steps.append(_step(e, attempt, previous))
        elif e.type == EventType.INPUT_REQUESTED:
            asked = _wait(e)
            waits[asked["request_id"]] = asked
        elif e.type == EventType.INPUT_RESOLVED:
            resolved = InputResolved.from_json(e.data)
            wait = waits.get(_request_id(resolved))
            if wait is not None:
                wait["resolved_at"] = e.created_at.isoformat()
                wait["waited_ms"] = _ms(datetime.fromisoformat(wait["requested_at"]), e.created_at)
                wait["outcome"] = _verdict(resolved.response if resolved.has("response") else None)
                by = resolved.by
                wait["answered_by"] = None if by is None else str(by)
        if attempts and e.fence == attempts[-1]["fence"]:
            run_end = e.created_at
        previous = e.created_at
    if attempts and turn.state is not TurnState.RUNNING:
        # parked or settled: the last run ended with its last commit
        attempts[-1]["ended_at"] = run_end.isoformat()
    end = turn.updated_at if turn.state in TERMINAL_STATES else (now or datetime.now(UTC))
    pace = None if turn.state in TERMINAL_STATES else paced_now(events, now)
    paced = None
    if pace is not None:  # its call waits for its rate limit's slot (runtime/pacing.py)
        step = next(e.step for e in reversed(events) if e.type == EventType.TURN_PACED)
        paced = Paced(until=until(pace), limit=pace.limit, reason=pace.reason, step=step)
    return {
        "turn": turn_json(turn, paced=paced),
        "attempts": attempts,
        "steps": steps,
        "waits": list(waits.values()),
        "elapsed_ms": _ms(turn.created_at, end),
    }
