"""The transcript rebuilt from journal events, in seq order."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from turnkeep.api.service.transcript import transcript
from turnkeep.store.records import EventRecord


def ev(seq: int, type: str, data: dict[str, Any], turn: str = "t1") -> EventRecord:
    return EventRecord("ten", "s", seq, turn, type, None, 0, data, datetime.now(UTC))


def test_transcript() -> None:
    events = [
        ev(
            1,
            "turn.accepted",
            {"input": {"messages": [{"role": "user", "content": "q"}]}, "agent": "demo"},
        ),
        ev(2, "turn.started", {"attempt": 1}),
        ev(
            3,
            "model.completed",
            {
                "message": {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c", "name": "w", "arguments": {}}],
                }
            },
        ),
        ev(
            4,
            "tool.interrupted",
            {
                "message": {
                    "role": "tool",
                    "content": "unknown",
                    "tool_call_id": "c",
                    "is_error": True,
                }
            },
        ),
        ev(5, "turn.cancel_requested", {"by": "x"}),
        ev(6, "model.completed", {"message": {"role": "assistant", "content": "a"}}),
        ev(7, "turn.completed", {"result": {}}),
    ]
    out = transcript(events)
    assert [(m["role"], m["seq"], m["turn_id"]) for m in out] == [
        ("user", 1, "t1"),
        ("assistant", 3, "t1"),
        ("tool", 4, "t1"),
        ("assistant", 6, "t1"),
    ]
    assert out[2]["is_error"] is True
