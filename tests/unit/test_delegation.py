"""The delegation rules (runtime/delegation.py): task lists, ceilings, derived ids,
lanes, budgets and tool allowlists."""

from __future__ import annotations

import pytest

from tests.unit.test_one_admission import SETTINGS, Recording
from turnkeep.runtime import delegation
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.agents.tools import DefinitionError
from turnkeep.runtime.delegation import Child, DelegationRefused, Specialist, Task
from turnkeep.runtime.inputs import InputKind, may_answer
from turnkeep.store.errors import SessionDeleted
from turnkeep.store.new_turn import UNBOUNDED, Bounds, NewTurn
from turnkeep.store.records import Admission
from turnkeep.worker.delegation import admit_children

SP = Specialist(name="research", agent="r", max_fanout=3, max_concurrent=2, max_depth=2)


def _refused(arguments: dict, code: str) -> None:
    with pytest.raises(DelegationRefused) as err:
        delegation.parse_tasks(SP, arguments)
    assert err.value.code == code


def test_task_lists_are_checked_before_anything_is_admitted() -> None:
    ok = delegation.parse_tasks(
        SP, {"tasks": [{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y"}]}
    )
    assert ok == [Task("a", "x"), Task("b", "y")]
    _refused({"tasks": []}, "delegation_invalid")
    _refused({}, "delegation_invalid")
    _refused({"tasks": [{"id": "a", "prompt": "x"}] * 2}, "delegation_invalid")  # id twice
    _refused({"tasks": [{"id": "bad id", "prompt": "x"}]}, "delegation_invalid")
    _refused({"tasks": [{"id": "a", "prompt": " "}]}, "delegation_invalid")
    four = [{"id": str(i), "prompt": "x"} for i in range(4)]
    _refused({"tasks": four}, "delegation_fanout_exceeded")


def test_depth_is_bounded_by_the_specialist() -> None:
    assert delegation.check_depth(SP, 0) == 1
    assert delegation.check_depth(SP, 1) == 2
    with pytest.raises(DelegationRefused) as err:
        delegation.check_depth(SP, 2)
    assert err.value.code == "delegation_depth_exceeded"


def test_children_ids_are_derived_from_where_the_call_is_and_share_lanes() -> None:
    tasks = [Task("a", "x"), Task("b", "y"), Task("c", "z")]
    first = delegation.children(SP, "t", "s", "u", 3, tasks)
    again = delegation.children(SP, "t", "s", "u", 3, tasks)
    assert first == again  # a rerun after a crash names the same children
    assert len({c.turn_id for c in first}) == 3
    # two lanes: a, c in one session (one after the other), b in the other
    assert first[0].session_id == first[2].session_id != first[1].session_id
    elsewhere = delegation.children(SP, "t", "s", "u", 4, tasks)
    assert {c.turn_id for c in elsewhere}.isdisjoint(c.turn_id for c in first)
    assert all(len(c.session_id) <= 128 and len(c.turn_id) <= 128 for c in first)


def test_a_childs_budget_is_a_share_of_what_the_parent_has_left() -> None:
    sp = Specialist(name="s", agent="r", budget={"max_model_calls": 10, "max_tokens": 1000})
    left = {"max_model_calls": 9, "max_tool_calls": 4, "max_tokens": 50_000, "max_seconds": 30}
    budget = delegation.child_budget(sp, left, 3)
    assert budget["max_model_calls"] == 3  # 9 // 3, under the specialist's 10
    assert budget["max_tokens"] == 1000  # the specialist's, under the share
    assert budget["max_tool_calls"] == 1
    assert budget["max_seconds"] == 30
    assert delegation.child_budget(sp, {"max_tool_calls": 0}, 5)["max_tool_calls"] == 1


def test_a_childs_cost_bound_is_a_share_of_the_parents_and_may_be_nothing() -> None:
    sp = Specialist(name="s", agent="r", budget={"max_cost_usd": 0.5})
    assert delegation.child_budget(sp, {"max_cost_usd": 3.0}, 4)["max_cost_usd"] == 0.5
    assert delegation.child_budget(sp, {"max_cost_usd": 1.0}, 4)["max_cost_usd"] == 0.25
    assert delegation.child_budget(sp, {"max_cost_usd": -0.1}, 2)["max_cost_usd"] == 0.0
    unbounded = Specialist(name="s", agent="r")
    assert "max_cost_usd" not in delegation.child_budget(unbounded, {"max_tokens": 10}, 2)


def test_a_childs_tools_are_the_intersection() -> None:
    sp = Specialist(name="s", agent="r", tools=("a", "b"))
    assert delegation.allowed_tools(sp, ["a", "b", "c"], ["b", "c"]) == ["b"]
    everything = Specialist(name="s", agent="r")
    assert delegation.allowed_tools(everything, ["a", "c"], ["c", "d"]) == ["c"]


def test_the_join_keeps_task_order_and_drops_internal_ids() -> None:
    parts = [
        delegation.outcome("t2", "b", "failed", None, {"code": "x"}),
        delegation.outcome(
            "t1",
            "a",
            "completed",
            {"text": "ok"},
            None,
            {"input_tokens": 30, "output_tokens": 4, "cost_usd": 0.5},
        ),
    ]
    # what they spent is the runtime's, for the parent's bounds: not the model's
    assert delegation.spent(parts) == {"tokens": 34, "cost_usd": 0.5}
    assert delegation.joined(parts) == {
        "results": [
            {"id": "b", "state": "failed", "error": {"code": "x"}},
            {"id": "a", "state": "completed", "result": {"text": "ok"}},
        ]
    }


def test_definitions_pin_specialists_and_refuse_a_missing_agent() -> None:
    plain = AgentDefinition(name="p", version="1", provider="demo", model="m", instructions="i")
    with_sp = AgentDefinition(
        name="p", version="1", provider="demo", model="m", instructions="i", specialists=(SP,)
    )
    assert "specialists" not in plain.describe()  # existing agents' hashes unchanged
    assert plain.definition_hash != with_sp.definition_hash
    assert with_sp.specialist("delegate_research") is SP
    with pytest.raises(DefinitionError):
        AgentRegistry([with_sp])  # names agent "r", which is not there


def test_nobody_answers_a_delegation_over_the_api() -> None:
    assert InputKind.DELEGATION.value == "delegation"
    for role in ("admin", "member"):
        assert not may_answer({"runtime": "runtime"}, subject="alice", role=role)


class _GoneLane(Recording):
    """The admission statement, with one lane deleted (its tombstone refuses it)."""

    def admit(self, new: NewTurn, bounds: Bounds = UNBOUNDED) -> Admission:
        if new.session_id == "dlg-gone":
            raise SessionDeleted("the session was deleted")
        return super().admit(new, bounds)


def test_a_rerun_step_whose_childs_lane_was_deleted_admits_the_rest_and_never_raises() -> None:
    """A delegate step that runs again after a crash finds one child's lane deleted
    meanwhile: that child is not re-created (nor its lane sent), the others are, and
    the step goes on to its wait, whose join counts the tombstoned child as ended with
    child_deleted (worker/delegation.py admit_children)."""
    store = _GoneLane()
    parent = store.turns.admit(
        NewTurn(
            tenant_id="acme",
            session_id="p",
            turn_id="t",
            agent_name="demo",
            agent_hash="a" * 64,
            input_hash="h",
            input=TurnInput([{"role": "user", "content": "go"}]).to_json(),
            submitted_by="ci",
        )
    ).turn
    store.calls.clear()
    kids = [
        Child(task=Task(id="a", prompt="one"), session_id="dlg-gone", turn_id="dlg-1"),
        Child(task=Task(id="b", prompt="two"), session_id="dlg-live", turn_id="dlg-2"),
    ]
    sent: list[tuple[str, str]] = []
    admit_children(
        store,  # type: ignore[arg-type]
        SETTINGS,
        lambda tenant, lane: sent.append((tenant, lane)),
        parent,
        3,
        kids,
        agent_name="demo",
        agent_hash="a" * 64,
        depth=1,
        tools=[],
        budget={},
        output_schema=None,
    )
    assert [p["session_id"] for _, p in store.calls] == ["dlg-live"]
    assert sent == [("acme", "dlg-live")]
