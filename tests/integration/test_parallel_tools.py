"""Parallel tool calls with a real worker (issue 25): three 1-second read calls of one
model answer complete in well under their 3 s sum, their outcomes committed as three
fenced steps in call order."""

from __future__ import annotations

import json

from turnkeep.runtime.states import TurnState


def test_three_one_second_reads_in_one_answer_take_about_one_second(
    procs, client, store, tenant, sid
):
    procs.worker({"TURNKEEP_TEST_TOOL_SLEEP": "1"})
    tid = client.admit(tenant, sid, "peeker", "look")
    turn = client.wait_terminal(tenant, sid, tid, timeout=60)
    assert turn.state is TurnState.COMPLETED, turn.error
    events = store.reads.turn_events(tenant, sid, tid)
    steps = [(e.type, e.step) for e in events if e.step is not None]
    assert steps == [
        ("model.completed", 1),
        ("tool.completed", 2),
        ("tool.completed", 3),
        ("tool.completed", 4),
        ("model.completed", 5),
    ]
    asked = next(e for e in events if e.type == "model.completed")
    last = [e for e in events if e.type == "tool.completed"][-1]
    tool_time = (last.created_at - asked.created_at).total_seconds()
    assert tool_time < 2.0, tool_time  # one after another: over 3 s
    # every call ran its second, and the model got the results in call order
    assert all(e.data["duration_ms"] >= 1000 for e in events if e.type == "tool.completed")
    results = [json.loads(part) for part in turn.result["text"].split("|")]
    assert [r["peeked"] for r in results] == ["a", "b", "c"]
