"""The loop rules over a journal, with plain records standing in for events."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from turnkeep.runtime import plan, window
from turnkeep.runtime.budget import Limits, check_model_call, check_tool_call, effective_limits
from turnkeep.runtime.errors import BudgetExceeded
from turnkeep.runtime.messages import Message, Role, ToolCall

_seqs = itertools.count(1)


@dataclass(frozen=True)
class Ev:
    type: str
    step: int | None = None
    data: dict[str, Any] = field(default_factory=dict)
    #: journal order: the order the test builds them in
    seq: int = field(default_factory=lambda: next(_seqs))


def model(step: int, text: str = "", calls: tuple[ToolCall, ...] = (), tokens: int = 0) -> Ev:
    msg = Message(role=Role.ASSISTANT, content=text, tool_calls=calls)
    return Ev(
        "model.completed",
        step,
        {"message": msg.to_json(), "usage": {"input_tokens": tokens, "output_tokens": 0}},
    )


def tool(step: int, call: ToolCall, content: str = "ok", kind: str = "tool.completed") -> Ev:
    return Ev(kind, step, {"message": plan.tool_message(call, content).to_json()})


A = ToolCall("c1", "a", {"x": 1})
B = ToolCall("c2", "b", {})


def test_fresh_turn_calls_the_model_first():
    assert plan.next_action([Ev("turn.accepted"), Ev("turn.started")]) == plan.CallModel(1)


def test_tool_calls_run_in_order_then_the_model_again():
    j = [Ev("turn.started"), model(1, calls=(A, B))]
    assert plan.next_action(j) == plan.RunTool(2, A)
    j.append(tool(2, A))
    assert plan.next_action(j) == plan.RunTool(3, B)
    j.append(tool(3, B, kind="tool.interrupted"))
    assert plan.next_action(j) == plan.CallModel(4)


def test_answer_without_tool_calls_finishes():
    j = [model(1, calls=(A,)), tool(2, A), model(3, text="done")]
    assert plan.next_action(j) == plan.Finish("done")


def test_resume_reruns_only_steps_without_outcome():
    # a crash after step 2 committed: step 3 (b) is pending, step 2 is not rerun
    j = [model(1, calls=(A, B)), tool(2, A), Ev("turn.started")]
    assert plan.pending_tool_steps(j) == [plan.RunTool(3, B)]
    assert plan.next_action(j) == plan.RunTool(3, B)


def test_transcript_is_input_then_outcomes_in_order():
    j = [Ev("turn.started"), model(1, "hm", calls=(A,)), tool(2, A, "42")]
    msgs = plan.transcript([{"role": "user", "content": "q"}], j)
    assert [m.role for m in msgs] == [Role.USER, Role.ASSISTANT, Role.TOOL]
    assert msgs[1].tool_calls == (A,) and msgs[2].content == "42"
    assert msgs[2].tool_call_id == "c1"


def test_progress_counts_from_the_journal():
    j = [model(1, calls=(A,), tokens=10), tool(2, A), model(3, "x", tokens=5)]
    assert plan.progress(j) == plan.Progress(model_calls=2, tool_calls=1, tokens=15)


def test_a_delegation_join_counts_what_the_children_spent():
    join = Ev("tool.completed", 2, {"children_usage": {"tokens": 40, "cost_usd": 0.25}})
    j = [model(1, calls=(A,), tokens=10), join, model(3, "x", tokens=5)]
    done = plan.progress(j)
    assert (done.tool_calls, done.tokens, done.cost_usd) == (1, 55, 0.25)
    # past the parent's own bound once the children's spend is added
    with pytest.raises(BudgetExceeded):
        check_model_call(Limits(max_tokens=50), done, 0.0)


def test_idempotency_key_is_deterministic():
    assert plan.idempotency_key("t", "s", "u", 3) == "t/s/u/3"


def test_budget_lowers_limits_and_bounds_calls():
    limits = effective_limits(
        Limits(max_model_calls=5), {"max_model_calls": 2, "max_tool_calls": None}
    )
    assert limits.max_model_calls == 2 and limits.max_tool_calls == Limits().max_tool_calls
    check_model_call(limits, plan.Progress(1, 0, 0), 0.0)
    with pytest.raises(BudgetExceeded):
        check_model_call(limits, plan.Progress(2, 0, 0), 0.0)
    with pytest.raises(BudgetExceeded):
        check_tool_call(
            effective_limits(Limits(), {"max_tool_calls": 1}), plan.Progress(1, 1, 0), 0.0
        )
    with pytest.raises(BudgetExceeded):
        check_model_call(
            effective_limits(Limits(), {"max_seconds": 1}), plan.Progress(0, 0, 0), 2.0
        )


def test_history_answers_tool_calls_a_failed_turn_left_open():
    accepted = Ev(
        "turn.accepted", None, {"input": {"messages": [{"role": "user", "content": "q"}]}}
    )
    msgs = plan.history([accepted, model(1, calls=(A, B)), tool(2, A)])
    assert [m.role for m in msgs] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL]
    assert msgs[3].tool_call_id == "c2" and msgs[3].is_error


def _accepted(text: str) -> Ev:
    return Ev("turn.accepted", None, {"input": {"messages": [{"role": "user", "content": text}]}})


def test_compaction_replaces_everything_it_covered_with_its_summary():
    prior = [_accepted("old"), model(1, "old answer")]
    j = [model(1, calls=(A,)), tool(2, A)]
    j.append(Ev("context.compacted", None, {"summary": "S", "to_seq": j[-1].seq}))
    j.append(model(3, "after"))
    msgs = plan.transcript([{"role": "user", "content": "q"}], j, prior)
    assert [m.content for m in msgs] == [plan.SUMMARY_PREFIX + "S", "q", "after"]
    assert plan.compacted(j) and not plan.compacted(j[:2])


def test_an_earlier_turns_compaction_is_the_base_of_a_later_turn():
    first = [_accepted("one"), model(1, "first answer")]
    base = Ev("context.compacted", None, {"summary": "S1", "to_seq": first[-1].seq})
    second = [_accepted("two"), model(1, "second answer")]
    msgs = plan.transcript([{"role": "user", "content": "three"}], [], [*first, base, *second])
    assert [m.content for m in msgs] == [
        plan.SUMMARY_PREFIX + "S1",
        "two",
        "second answer",
        "three",
    ]
    # a newer compaction supersedes it; what it summarised is what a new one would
    assert [e.seq for e in plan.summarisable([], [*first, base, *second])] == [
        e.seq for e in second
    ]
    newer = Ev("context.compacted", None, {"summary": "S2", "to_seq": second[-1].seq})
    msgs = plan.transcript([{"role": "user", "content": "three"}], [], [base, *second, newer])
    assert [m.content for m in msgs] == [plan.SUMMARY_PREFIX + "S2", "three"]


def test_a_window_starting_between_a_call_and_its_result_drops_the_orphan_result():
    orphan = tool(2, A, "42")
    msgs = plan.transcript([{"role": "user", "content": "q"}], [], [orphan, model(3, "done")])
    assert [m.role for m in msgs] == [Role.ASSISTANT, Role.USER]


def test_summary_requests_are_chunked_to_fit():
    text = [f"user: line {i} " + "x" * 200 for i in range(50)]
    parts = window.chunks(text, 300)
    assert len(parts) > 1 and sum(len(p) for p in parts) == 50
    assert all(sum(window.estimate(x) + 1 for x in p) <= 300 for p in parts)
    (huge,) = window.chunks(["y" * 10_000], 100)
    assert huge[0].endswith(window.TRUNCATED) and window.estimate(huge[0]) <= 100
    request = window.summary_request("S", ["user: hi"])
    assert "The summary so far:\nS" in request[0].content


def test_possibly_started_depends_on_which_attempts_were_live_after_the_call_was_enabled():
    started = Ev("turn.started")
    # asked and crashed in attempt 1: attempt 2 cannot know whether the call ran
    j = [started, model(1, calls=(A,)), started]
    assert plan.possibly_started(j, 2)
    # asked in this very attempt: nobody else could have run it
    assert not plan.possibly_started([started, model(1, calls=(A,))], 2)
    # approval answered while waiting: the first attempt after the answer is clean...
    asked = Ev("input.requested", 2, {"request_id": "approval-2-1", "kind": "approval", "step": 2})
    resolved = Ev(
        "input.resolved", None, {"request_id": "approval-2-1", "response": {"approved": True}}
    )
    j = [started, model(1, calls=(A,)), asked, resolved, started]
    assert not plan.possibly_started(j, 2)
    found = plan.answered(j, 2, "approval")
    # the request as journalled (a typed payload that writes back the same JSON)
    assert found is not None and (found[0].to_json(), found[1]) == (
        asked.data,
        {"approved": True},
    )
    assert plan.answered(j, 3, "approval") is None and plan.answered(j, 2, "question") is None
    # a second request of the same kind for the step is open until answered
    again = Ev("input.requested", 2, {"request_id": "approval-2-2", "kind": "approval", "step": 2})
    assert plan.answered([*j, again], 2, "approval") is None
    # ...but once an attempt after the answer died, the call may have run
    assert plan.possibly_started([*j, started], 2)


def test_the_request_estimate_counts_the_output_schema_and_provider_envelopes():
    from turnkeep.runtime.messages import ModelRequest

    user = Message(role=Role.USER, content="hello")
    bare = ModelRequest(model="m", instructions="be brief", messages=(user,))
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    with_schema = ModelRequest(
        model="m", instructions="be brief", messages=(user,), output_schema=schema
    )
    assert window.request_tokens(with_schema) == window.request_tokens(bare) + window.estimate(
        json.dumps(schema)
    )
    thinking = {"v": 1, "provider": "anthropic", "blocks": [{"signature": "s" * 3000}]}
    said = Message(role=Role.ASSISTANT, content="ok", provider_meta=thinking)
    plain = Message(role=Role.ASSISTANT, content="ok")
    assert said.tokens - plain.tokens >= 1000


def _messages_through_records(events: list[Ev]) -> list[tuple[Ev, dict[str, Any]]]:
    """journal.messages as it read before its fast path: through each payload's record."""
    from turnkeep.runtime.admission import TurnInput
    from turnkeep.runtime.journal import correction_text
    from turnkeep.runtime.payloads import ModelCompleted, TurnAccepted, outcome_of
    from turnkeep.runtime.states import OUTCOME_EVENTS

    out: list[tuple[Ev, dict[str, Any]]] = []
    for e in events:
        if e.type == "turn.accepted":
            accepted = TurnAccepted.from_json(e.data).input
            given = (accepted.messages if isinstance(accepted, TurnInput) else None) or []
            out += [(e, m) for m in given if isinstance(m, dict)]
        elif e.type in OUTCOME_EVENTS:
            outcome = outcome_of(e.type, e.data)
            if outcome.has("message") and isinstance(outcome.message, dict):
                out.append((e, outcome.message))
            fix = outcome.correction if isinstance(outcome, ModelCompleted) else None
            if isinstance(fix, dict):
                out.append((e, {"role": "user", "content": correction_text(str(fix.get("error")))}))
    return out


def test_the_fast_projection_reads_what_the_payload_records_read() -> None:
    from turnkeep.runtime import journal

    call = {"id": "c1", "name": "t", "arguments": {"a": 1}}
    datas: list[tuple[str, Any]] = [
        ("turn.accepted", {"input": {"messages": [{"role": "user", "content": "q"}, "x"]}}),
        ("turn.accepted", {"input": {"messages": None}}),
        ("turn.accepted", {"input": "text"}),
        ("turn.accepted", {"input": {"messages": "abc"}}),
        ("turn.accepted", {}),
        ("turn.accepted", None),
        ("turn.started", {"n": 1}),
        (
            "model.completed",
            {"message": {"role": "assistant", "content": "a", "tool_calls": [call]}},
        ),
        ("model.completed", {"message": "not a dict", "correction": {"error": "bad"}}),
        ("model.completed", {"message": {"role": "assistant", "content": "b"}, "correction": 3}),
        ("model.completed", None),
        ("tool.completed", {"message": {"role": "tool", "content": "r", "tool_call_id": "c1"}}),
        ("tool.completed", {"message": {"role": "tool"}, "correction": {"error": "x"}}),
        ("tool.interrupted", {"message": {"role": "tool", "content": "?", "is_error": True}}),
        ("input.requested", {"message": {"role": "user", "content": "no"}}),
    ]
    events = [Ev(t, 1, d) for t, d in datas * 50]
    assert len(_messages_through_records(events)) == 50 * 7
    assert list(journal.messages(events)) == _messages_through_records(events)
    # and the transcript built from them, each message as its constructor builds it
    sent = plan.transcript([], events[:15], events[15:])
    assert len(sent) > 200
    assert sent == [Message(**vars(Message.from_json(m.to_json()))) for m in sent]
    assert all(type(m.role) is Role for m in sent)


def test_a_context_row_decodes_to_the_record_its_constructor_builds() -> None:
    from datetime import datetime

    from turnkeep.store.records import EventRecord
    from turnkeep.store.rows import event_from_row

    row = {
        "tenant_id": "t",
        "session_id": "s",
        "seq": 7,
        "turn_id": "x",
        "type": "model.completed",
        "step": 1,
        "fence": 2,
        "data": {"message": {"role": "assistant", "content": "a"}},
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    built = EventRecord(**{**row, "created_at": datetime.fromisoformat(row["created_at"])})
    # the statement's positional array: seq, turn_id, type, step, fence, data, created_at
    decoded = event_from_row("t", "s", [row[k] for k in list(row)[2:]])
    assert decoded == built and vars(decoded) == vars(built) and repr(decoded) == repr(built)
