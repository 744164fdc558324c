"""A turn's input and input hash, pinned for fixed examples: the hash is a turn's
identity (same hash, same turn; another under the same id is 409), so a reshaping of
the code that builds it must leave every stored turn's hash as it was. A delegated
child is admitted with what ``turnkeep.worker.delegation.admit_children`` builds; an API turn
with its messages, attachment references and pinned project, and every recipe from a
request body (plain, output schema, budget, attachments, a project's overrides, all of
them), with values computed by the code before the reshape. Both go through
``turnkeep.runtime.admission`` (one input type, one hash recipe)."""

from __future__ import annotations

import json
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

import pytest

from turnkeep.api.service.requests import TurnRequest
from turnkeep.runtime import projects
from turnkeep.runtime.admission import TurnInput, identity_hash
from turnkeep.runtime.delegation import Child, Task
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.states import TurnState
from turnkeep.store.new_turn import UNBOUNDED, Bounds, NewTurn
from turnkeep.store.records import TurnRecord
from turnkeep.worker.delegation import admit_children

AT = datetime(2024, 1, 1, tzinfo=UTC)
PINNED = projects.pinned("p1", {"instructions": "be brief"})


class Recording:
    """Keeps what each admission was asked with (no statement runs: only the hash and
    the input are under test here)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.turns = self  # the store's part that admits

    def admit(self, new: NewTurn, bounds: Bounds = UNBOUNDED) -> None:
        self.calls.append({f.name: getattr(new, f.name) for f in fields(new)})


def parent(turn_input: dict[str, Any]) -> TurnRecord:
    return TurnRecord(
        tenant_id="t",
        session_id="s",
        turn_id="u",
        ordinal=1,
        state=TurnState.RUNNING,
        agent_name="lead",
        agent_hash="a" * 64,
        input_hash="0" * 64,
        input=turn_input,
        output_schema=None,
        budget=None,
        attempt=1,
        revision=3,
        cancel_requested=False,
        pending_input=None,
        result=None,
        error=None,
        accepted_seq=1,
        submitted_by="alice",
        created_at=AT,
        updated_at=AT,
    )


KIDS = [
    Child(task=Task(id="a", prompt="find the café"), session_id="dlg-x-0", turn_id="dlg-1"),
    Child(task=Task(id="b", prompt="count"), session_id="dlg-x-1", turn_id="dlg-2"),
]


def admitted(turn: TurnRecord, kids: list[Child], **kwargs: Any) -> list[dict[str, Any]]:
    store, lanes = Recording(), []
    admit_children(
        store,  # type: ignore[arg-type]
        Settings(),
        lambda tenant, lane: lanes.append((tenant, lane)),
        turn,
        4,
        kids,
        agent_name="worker",
        agent_hash="b" * 64,
        **kwargs,
    )
    assert lanes == [("t", k.session_id) for k in kids]
    return store.calls


def test_a_delegated_childs_input_and_hash_are_pinned() -> None:
    calls = admitted(
        parent({"messages": [{"role": "user", "content": "go"}]}),
        KIDS,
        depth=1,
        tools=["search", "fetch"],
        budget={"max_model_calls": 3, "max_cost_usd": 0.25},
        output_schema={"type": "object", "required": ["answer"]},
    )
    assert [c["input_hash"] for c in calls] == [
        "dc50b1beae13f5808557d3f45f735bf36bcb0130b59f5c65cfd54a5d3bda9182",
        "517ce54360c9229bef44619f99babe6525525dfa1325c872932e1afc7efc99a9",
    ]
    assert calls[0]["input"] == {
        "messages": [{"role": "user", "content": "find the café"}],
        "delegation": {
            "parent": {"session_id": "s", "turn_id": "u", "step": 4, "task_id": "a"},
            "depth": 1,
            "tools": ["search", "fetch"],
        },
    }
    assert [(c["session_id"], c["turn_id"]) for c in calls] == [
        ("dlg-x-0", "dlg-1"),
        ("dlg-x-1", "dlg-2"),
    ]
    assert {c["submitted_by"] for c in calls} == {"alice"}
    assert {c["project_id"] for c in calls} == {None}
    assert {c["agent_hash"] for c in calls} == {"b" * 64}


def test_a_childs_empty_schema_is_stored_as_given_and_hashed_as_none() -> None:
    (call,) = admitted(
        parent({"messages": []}), KIDS[:1], depth=2, tools=[], budget={}, output_schema={}
    )
    assert call["output_schema"] == {}
    assert call["input_hash"] == "751493a9fe71e227c06b27a3b5c921903943e079a1036d47307c30d6a3841732"


def test_a_child_of_a_project_turn_is_in_its_parents_project_and_hashed_without_it() -> None:
    (call,) = admitted(
        parent({"messages": [], "project": PINNED}),
        KIDS[:1],
        depth=1,
        tools=["search", "fetch"],
        budget={"max_model_calls": 3, "max_cost_usd": 0.25},
        output_schema={"type": "object", "required": ["answer"]},
    )
    assert call["project_id"] == "p1"
    assert "project" not in call["input"]
    assert call["input_hash"] == "dc50b1beae13f5808557d3f45f735bf36bcb0130b59f5c65cfd54a5d3bda9182"


HELLO = [{"role": "user", "content": "hello"}]


def api_hash(
    *,
    output_schema: dict[str, Any] | None = None,
    budget: dict[str, Any] | None = None,
    ids: list[str] | None = None,
    pinned: dict[str, Any] | None = None,
) -> str:
    turn_input = TurnInput(messages=HELLO, attachments=ids or (), project=pinned)
    return identity_hash(
        turn_input, agent_hash="c" * 64, output_schema=output_schema, budget=budget
    )


def test_an_api_turns_hash_is_pinned_with_and_without_attachments_and_project() -> None:
    assert PINNED["override_hash"] == (
        "9021895facaa1f9dbc28a68c290422720c241d2d6884ddf5a6cef7fc5410afa7"
    )
    assert api_hash() == "0c7d7ee38c4b8470b72c704242a9f23bf53a1ba1c46f3c8a54493b371f53db07"
    assert api_hash(ids=["a1", "a2"]) == (
        "b3b674c7a5813334fd5af931314a13ff5bf31f1f2985d1b1a02a3552776a8e06"
    )
    assert api_hash(pinned=PINNED) == (
        "ec92449b33b07b8dcae3b528688d590f8436562b2210e90dbaa998b140cf4fe7"
    )
    assert (
        api_hash(
            output_schema={"type": "object"}, budget={"max_tokens": 100}, ids=["a1"], pinned=PINNED
        )
        == "82dfee00223218556c8878814668b6ca6bd0de15fafe9293258d6a6b5a15c4d3"
    )


def test_an_api_turns_stored_input_has_each_part_only_when_there_is_one() -> None:
    assert TurnInput(messages=HELLO).to_json() == {"messages": HELLO}
    assert TurnInput(messages=HELLO, attachments=["a1"], project=PINNED).to_json() == {
        "messages": HELLO,
        "attachments": ["a1"],
        "project": PINNED,
    }


# Every recipe an API turn is hashed with, from the request body as the API reads it
# (TurnRequest: messages, output schema, budget, attachments) and the project's pinned
# override. The expected hashes and inputs were computed by the recipe as it stood
# before the reshape (the submit path and its attachments check at 8c37dd9).
OVERRIDE = {
    "instructions": "answer in French",
    "limits": {"max_model_calls": 4, "max_cost_usd": 0.5},
    "model_options": {"temperature": 0.2},
}
BODIES: dict[str, tuple[dict[str, Any], tuple[str, dict[str, Any]] | None, str]] = {
    "plain": (
        {"agent": "a", "input": HELLO},
        None,
        "0c7d7ee38c4b8470b72c704242a9f23bf53a1ba1c46f3c8a54493b371f53db07",
    ),
    "system_and_unicode": (
        {
            "agent": "a",
            "input": [
                {"role": "system", "content": "be terse"},
                {"role": "user", "content": "où est le café ☕?"},
            ],
        },
        None,
        "71c52f1a1f770445bc5b0a6ddd54a45ffc2ad8fccece07f27ff1a50c79fdecf9",
    ),
    "output_schema": (
        {"agent": "a", "input": HELLO, "output_schema": {"type": "object", "required": ["answer"]}},
        None,
        "c2fd218d9f4c39d4772f32c72e34620d288d55bad2bffabed6a05544d27a221c",
    ),
    "budget": (
        {
            "agent": "a",
            "input": HELLO,
            "budget": {"max_tokens": 100, "max_seconds": 30, "max_cost_usd": 0.5},
        },
        None,
        "b13df91e322cab7710510452a0bb89f1f4d688f83df41f891ce3283825d8d8a5",
    ),
    # a budget that sets nothing is no budget: the plain turn's hash
    "empty_budget": (
        {"agent": "a", "input": HELLO, "budget": {}},
        None,
        "0c7d7ee38c4b8470b72c704242a9f23bf53a1ba1c46f3c8a54493b371f53db07",
    ),
    "attachments": (
        {"agent": "a", "input": HELLO, "attachments": ["att-1", "att-2"]},
        None,
        "e3d55da790f59b38203efe7bf20256a6dcb2f027a8f195f653f2c0f3197a34b5",
    ),
    "project_overrides": (
        {"agent": "a", "input": HELLO, "project": "p1"},
        ("p1", OVERRIDE),
        "8c0946603e5b3e160dd55f489c6b85958e1cb0e604f46789a3007a02249d954f",
    ),
    "project_empty_override": (
        {"agent": "a", "input": HELLO, "project": "p2"},
        ("p2", {}),
        "fe7cfccf10df85c5771824ba50f0847d243e3c9ec805bbf7bbdfe4dfd82f056b",
    ),
    "everything": (
        {
            "agent": "a",
            "input": HELLO,
            "output_schema": {"type": "object"},
            "budget": {"max_model_calls": 2},
            "attachments": ["att-1"],
            "project": "p1",
        },
        ("p1", OVERRIDE),
        "8d35c64bef9569a78d2f496bd38a895d2939fe46c69961936c0f14e0fafcf9fd",
    ),
}


def from_body(
    body: dict[str, Any], project: tuple[str, dict[str, Any]] | None
) -> tuple[str, dict[str, Any]]:
    """What api/service/admission.py hashes and stores for ``body``."""
    request = TurnRequest.model_validate(body)
    turn_input = TurnInput(
        request.messages(),
        attachments=request.attachments or (),
        project=None if project is None else projects.pinned(*project),
    )
    digest = identity_hash(
        turn_input,
        agent_hash="c" * 64,
        output_schema=request.output_schema,
        budget=request.budget_json(),
    )
    return digest, turn_input.to_json()


@pytest.mark.parametrize("name", BODIES)
def test_every_api_recipe_keeps_its_hash(name: str) -> None:
    body, project, expected = BODIES[name]
    digest, stored = from_body(body, project)
    assert digest == expected
    # the stored input: the messages as given, then each other part only when set
    want: dict[str, Any] = {"messages": body["input"]}
    if body.get("attachments"):
        want["attachments"] = body["attachments"]
    if project is not None:
        want["project"] = projects.pinned(*project)
    assert json.dumps(stored, ensure_ascii=False) == json.dumps(want, ensure_ascii=False)


def test_a_pinned_overrides_hash_is_pinned() -> None:
    assert projects.pinned("p1", OVERRIDE)["override_hash"] == (
        "5b82865c67fc3c4e208e539202642bba7d983b7f0d75d11eab927cf1b8ae6144"
    )
    assert projects.pinned("p2", {})["override_hash"] == (
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    )


def test_a_child_without_a_schema_deeper_down_is_pinned() -> None:
    store = Recording()
    admit_children(
        store,  # type: ignore[arg-type]
        Settings(),
        lambda tenant, lane: None,
        parent({"messages": []}),
        7,
        [Child(task=Task(id="q", prompt="résumé ☕"), session_id="dlg-y-0", turn_id="dlg-9")],
        agent_name="worker",
        agent_hash="b" * 64,
        depth=3,
        tools=[],
        budget={"max_tokens": 50},
        output_schema=None,
    )
    (call,) = store.calls
    assert call["input_hash"] == "d81776cbf51d604c9a58992b45b4c914b271425ec41ff0948b6bad907759b9a2"
    assert json.dumps(call["input"], ensure_ascii=False) == (
        '{"messages": [{"role": "user", "content": "résumé ☕"}], "delegation": {"parent": '
        '{"session_id": "s", "turn_id": "u", "step": 7, "task_id": "q"}, "depth": 3, '
        '"tools": []}}'
    )


def test_metadata_is_a_layer_of_the_identity_only_when_named() -> None:
    """A turn's and its session's metadata wrap the hash (runtime/metadata.py): a
    replay naming others is a conflict; none, or empty objects, keep the hash a turn
    had before metadata existed (the plain recipe's, pinned above)."""

    def labelled(body: dict[str, Any]) -> str:
        request = TurnRequest.model_validate({"agent": "a", "input": HELLO, **body})
        metadata, session_metadata = request.labels()
        return identity_hash(
            TurnInput(request.messages()),
            agent_hash="c" * 64,
            output_schema=None,
            budget=None,
            metadata=metadata,
            session_metadata=session_metadata,
        )

    plain = BODIES["plain"][2]
    assert labelled({}) == labelled({"metadata": {}, "session_metadata": {}}) == plain
    assert labelled({"metadata": {"customer": "acme"}}) == (
        "74ba28496666f11b22b9b13d1b61af435cf7cee16dcfd69d1e42a2eeda0264dd"
    )
    assert labelled({"session_metadata": {"team": "red"}}) == (
        "f4528adbd21e229a62fa61c1288c15dda7e400a7e1808605ba505321900ec523"
    )
    both = {"metadata": {"ticket": "T-1", "customer": "acme"}, "session_metadata": {"team": "red"}}
    # key order is not identity (canonical JSON)
    assert labelled(both) == ("ec2796d222dae3c98e18527a6799d4a0c29509f202b49d5832e3bb2b0008b701")
