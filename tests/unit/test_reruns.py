"""What a rerun reuses (runtime/reruns.py): the source's outcomes before ``from_step``,
marked, and the edited outcome of that step; what it refuses; and that the loop rules
(runtime/plan.py) go on live from there, an effectful call included."""

from __future__ import annotations

import pytest

from tests.unit.test_plan import Ev, model, tool
from turnkeep.runtime import plan, reruns
from turnkeep.runtime.admission import TurnInput, identity_hash
from turnkeep.runtime.messages import ToolCall

A = ToolCall("c1", "a", {"x": 1})
B = ToolCall("c2", "b", {})


def _source() -> list[Ev]:
    return [
        Ev("turn.accepted"),
        Ev("turn.started"),
        model(1, calls=(A, B), tokens=7),
        tool(2, A, "a-result"),
        tool(3, B, "b-result"),
        model(4, text="done"),
        Ev("turn.completed"),
    ]


#: one source journal (each event's seq is taken when it is built)
SOURCE = _source()


def _plan(from_step: int, replacement: reruns.Replacement | None = None) -> reruns.Plan:
    return reruns.plan(
        SOURCE,
        session_id="s",
        turn_id="src",
        accepted_seq=10,
        from_step=from_step,
        replacement=replacement,
        by="alice",
    )


def _journal(p: reruns.Plan) -> list[Ev]:
    return [Ev("turn.accepted"), *(Ev(c.type, c.step, c.data) for c in p.copies)]


def test_the_steps_before_from_step_are_copied_marked_and_the_loop_goes_on_from_it():
    source = {e.step: e for e in SOURCE if e.step}
    p = _plan(3)
    assert [(c.type, c.step) for c in p.copies] == [("model.completed", 1), ("tool.completed", 2)]
    assert p.copies[0].data["reused"] == {"turn_id": "src", "seq": source[1].seq}
    assert p.copies[0].data["message"] == source[1].data["message"]
    # the reused call is charged nothing; its tokens stay what they were
    assert p.copies[0].data["charged_cost"] == 0.0 and "charged_cost" not in p.copies[1].data
    assert p.lineage == {
        "session_id": "s",
        "turn_id": "src",
        "from_step": 3,
        "edited": None,
        "edit_hash": None,
        "by": "alice",
        "before_seq": 10,
    }
    journal = [*_journal(p), Ev("turn.started")]
    assert plan.next_action(journal) == plan.RunTool(3, B)
    assert plan.progress(journal).cost_usd == 0.0
    # the reused message was written before any attempt: the call never started
    assert not plan.possibly_started(journal, 3)


def test_an_edited_tool_result_is_the_steps_outcome():
    p = _plan(3, reruns.EditedToolResult("b: by hand", is_error=True))
    edited = p.copies[-1]
    assert (edited.type, edited.step) == ("tool.completed", 3)
    assert edited.data["message"] == plan.tool_message(B, "b: by hand", is_error=True).to_json()
    assert edited.data["edited"] == {"by": "alice", "replaces_seq": SOURCE[4].seq}
    assert p.lineage["edited"] == "tool_result" and p.lineage["edit_hash"]
    assert plan.next_action([*_journal(p), Ev("turn.started")]) == plan.CallModel(4)


def test_an_edited_model_answer_may_ask_for_other_tools_or_finish():
    p = _plan(4, reruns.ModelAnswer("use b", [{"name": "b", "arguments": {"y": 2}}]))
    journal = [*_journal(p), Ev("turn.started")]
    assert plan.next_action(journal) == plan.RunTool(5, ToolCall("edited-1", "b", {"y": 2}))
    final = _plan(1, reruns.ModelAnswer("the end"))
    assert [c.step for c in final.copies] == [1]
    assert plan.next_action([*_journal(final), Ev("turn.started")]) == plan.Finish("the end")


@pytest.mark.parametrize(
    ("from_step", "replacement", "where"),
    [
        (6, None, "body.from_step"),
        (1, reruns.EditedToolResult("x"), "body.replace.tool_result"),
        (2, reruns.ModelAnswer("x"), "body.replace.model_answer"),
        (4, reruns.ModelAnswer("x", [{"name": ""}]), "body.replace.model_answer.tool_calls.0"),
    ],
)
def test_a_rerun_that_does_not_fit_the_source_is_refused(from_step, replacement, where):
    with pytest.raises(reruns.RerunRefused) as refused:
        _plan(from_step, replacement)
    assert refused.value.where.startswith(where)


def test_a_source_still_running_is_reused_as_far_as_it_committed():
    running = SOURCE[:4]  # the source got as far as step 2
    kw = {"session_id": "s", "turn_id": "src", "accepted_seq": 1, "by": "x"}
    with pytest.raises(reruns.RerunRefused, match="last step is 2"):
        reruns.plan(running, from_step=4, replacement=None, **kw)
    p = reruns.plan(running, from_step=3, replacement=None, **kw)
    assert [c.step for c in p.copies] == [1, 2]


def test_the_lineage_is_in_the_identity_but_not_who_asked_nor_where_the_context_ends():
    messages = [{"role": "user", "content": "q"}]
    lineage = _plan(3).lineage

    def digest(rerun: dict[str, object] | None) -> str:
        return identity_hash(
            TurnInput(messages, rerun=rerun), agent_hash="h", output_schema=None, budget=None
        )

    plain = digest(None)
    assert plain == identity_hash(
        TurnInput(messages), agent_hash="h", output_schema=None, budget=None
    )
    assert digest(lineage) != plain
    assert digest({**lineage, "by": "bob", "before_seq": 99}) == digest(lineage)
    assert digest({**lineage, "from_step": 2}) != digest(lineage)
