"""A turn's timeline (api/service/timeline.py) as the console's waterfall reads it: when
each step began (its recorded duration before its commit, never before the event it
followed), each attempt's end and kind (start, a resume after a wait, a takeover by a
higher attempt), read off the journal alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from turnkeep.api.service.timeline import timeline
from turnkeep.runtime.states import EventType, TurnState
from turnkeep.store.records import EventRecord, TurnRecord

T0 = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def at(ms: int) -> datetime:
    return T0 + timedelta(milliseconds=ms)


def turn(state: TurnState, updated_ms: int) -> TurnRecord:
    return TurnRecord(
        tenant_id="t",
        session_id="s",
        turn_id="u",
        ordinal=1,
        state=state,
        agent_name="a",
        agent_hash="h",
        input_hash="i",
        input={"messages": []},
        output_schema=None,
        budget=None,
        attempt=2,
        revision=9,
        cancel_requested=False,
        pending_input=None,
        result=None,
        error=None,
        accepted_seq=1,
        submitted_by="alice",
        created_at=T0,
        updated_at=at(updated_ms),
    )


def event(
    seq: int,
    ms: int,
    type: EventType,
    data: dict[str, Any],
    *,
    step: int | None = None,
    fence: int = 0,
) -> EventRecord:
    return EventRecord("t", "s", seq, "u", type.value, step, fence, data, at(ms))


def model(message: str = "ok", **extra: Any) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": message}, "model": "demo/x", **extra}


JOURNAL = [
    event(1, 0, EventType.TURN_ACCEPTED, {"input": {}}),
    event(2, 100, EventType.TURN_STARTED, {"attempt": 1}, fence=7),
    # a model call that took 300 ms of the 400 since the start
    event(3, 500, EventType.MODEL_COMPLETED, model(duration_ms=300, retries=1), step=1, fence=7),
    # a wait: asked at 600, answered at 1,600; the same attempt resumes at 1,700
    event(
        4,
        600,
        EventType.INPUT_REQUESTED,
        {"request_id": "r1", "kind": "approval", "tool": {"name": "pay"}},
        step=2,
        fence=7,
    ),
    event(
        5,
        1600,
        EventType.INPUT_RESOLVED,
        {"request_id": "r1", "response": {"approved": True}, "by": "alice"},
    ),
    event(6, 1700, EventType.TURN_STARTED, {"attempt": 1}, fence=8),
    # the tool recorded 900 ms, more than the 200 since the resume: it began at the resume
    event(
        7,
        1900,
        EventType.TOOL_COMPLETED,
        {
            "message": {"role": "tool", "content": "x", "name": "pay"},
            "tool": "pay",
            "duration_ms": 900,
        },
        step=2,
        fence=8,
    ),
    # the worker dies at about 2,000; another takes the lease: attempt 2 at 3,000
    event(8, 3000, EventType.TURN_STARTED, {"attempt": 2}, fence=9),
    # no recorded duration: it began right after the event it followed
    event(9, 3400, EventType.MODEL_COMPLETED, model(), step=3, fence=9),
    event(10, 3400, EventType.TURN_COMPLETED, {"result": {"text": "done"}}, fence=9),
]


def test_steps_begin_their_recorded_duration_before_their_commit() -> None:
    t = timeline(turn(TurnState.COMPLETED, 3400), JOURNAL)
    steps = [(s["step"], s["kind"], s["started_at"], s["committed_at"]) for s in t["steps"]]
    assert steps == [
        (1, "model", at(200).isoformat(), at(500).isoformat()),
        (2, "tool", at(1700).isoformat(), at(1900).isoformat()),
        (3, "model", at(3000).isoformat(), at(3400).isoformat()),
    ]
    assert [s["retries"] for s in t["steps"]] == [1, 0, 0]
    assert t["elapsed_ms"] == 3400


def test_attempts_end_at_their_last_commit_and_say_resume_or_takeover() -> None:
    t = timeline(turn(TurnState.COMPLETED, 3400), JOURNAL)
    runs = [
        (a["attempt"], a["fence"], a["kind"], a["started_at"], a["ended_at"]) for a in t["attempts"]
    ]
    assert runs == [
        (1, 7, "start", at(100).isoformat(), at(600).isoformat()),
        (1, 8, "resume", at(1700).isoformat(), at(1900).isoformat()),
        (2, 9, "takeover", at(3000).isoformat(), at(3400).isoformat()),
    ]
    (wait,) = t["waits"]
    assert (wait["requested_at"], wait["resolved_at"], wait["outcome"]) == (
        at(600).isoformat(),
        at(1600).isoformat(),
        "approved",
    )


def test_a_running_attempt_has_no_end_yet() -> None:
    t = timeline(turn(TurnState.RUNNING, 3000), JOURNAL[:8], now=at(3200))
    assert t["attempts"][-1]["kind"] == "takeover" and t["attempts"][-1]["ended_at"] is None
    assert t["attempts"][-2]["ended_at"] == at(1900).isoformat()
    assert t["elapsed_ms"] == 3200
