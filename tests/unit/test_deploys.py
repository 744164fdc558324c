"""A deploy's rules (runtime/deploys.py) as the lane and the runner apply them, on
the real Store over the in-memory connector (tests/unit/fakes.py): a turn whose
definition a worker does not serve is handed on, moved, held or failed at once, and
a served turn of an older version moves at its next safe point, before a model call."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.fakes import Crash, FakeResources
from turnkeep.runtime.agents.definition import AgentDefinition
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.agents.tools import Effect, ToolContext, tool
from turnkeep.runtime.deploys import MoveReason, Route, move_at_safe_point, route
from turnkeep.runtime.errors import DefinitionError, UnknownAgent
from turnkeep.runtime.messages import ModelRequest, ModelResponse, Role, ToolCall
from turnkeep.runtime.obs import faults
from turnkeep.runtime.payloads import DefinitionChanged
from turnkeep.runtime.providers.demo_model import demo_script
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.states import ErrorCode, EventType, TurnState
from turnkeep.worker.lane import RunOutcome, run_session

T, S = "t1", "s1"
_PARAMS = {"type": "object", "properties": {"n": {"type": "integer"}}}
#: (tool version, idempotency key) of every run of the probe tool
ran: list[tuple[str, str]] = []


def _probe(version: str, params: dict[str, Any] = _PARAMS, **kw: Any) -> Any:
    def fn(ctx: ToolContext, args: dict[str, Any]) -> Any:
        ran.append((version, ctx.idempotency_key))
        return {"probe": version}

    return tool(name="probe", version=version, effect=Effect.IDEMPOTENT, parameters=params, **kw)(
        fn
    )


@demo_script("unit-deploy")
def _script(request: ModelRequest) -> ModelResponse:
    """Calls the probe once, then answers with the instructions it was sent (which
    say the version) and the probe's result."""
    users = [i for i, m in enumerate(request.messages) if m.role is Role.USER]
    results = [m for m in request.messages[users[-1] :] if m.role is Role.TOOL]
    if not results:
        call = ToolCall(id="call_1", name="probe", arguments={"n": 1})
        return ModelResponse(text="probing", tool_calls=(call,))
    return ModelResponse(text=f"{request.instructions} after {results[0].content}")


def agent(version: str, *, probe: Any = None, **kw: Any) -> AgentDefinition:
    return AgentDefinition(
        name="support",
        version=version,
        provider="demo",
        model="unit-deploy",
        instructions=f"support v{version}",
        tools=(probe or _probe(version),),
        **kw,
    )


V1, V2 = agent("1"), agent("2")
V1_PINNED, V2_PINNED = agent("1", on_deploy="pinned"), agent("2", on_deploy="pinned")


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(faults, "_armed", {})
    monkeypatch.setattr("turnkeep.worker.checkpoint.time.sleep", lambda s: None)
    ran.clear()
    yield


def ctx_of(
    *agents: AgentDefinition, fleet: tuple[set[str], set[str]] | None = None
) -> FakeResources:
    ctx = FakeResources(
        agents=AgentRegistry(list(agents)), settings=Settings(worker={"max_attempts": 3})
    )
    if fleet is not None:
        ctx.fleet = fleet
    return ctx


def redeployed(old: FakeResources, *agents: AgentDefinition, **kw: Any) -> FakeResources:
    """Another worker, of another build, on the same store and Redis."""
    new = ctx_of(*agents, **kw)
    new.store, new.leases = old.store, old.leases
    return new


def admit(ctx: FakeResources, a: AgentDefinition, turn: str = "u1", text: str = "hi") -> None:
    ctx.store.admit(T, S, turn, a, text)


def events(ctx: FakeResources, turn: str = "u1") -> list[Any]:
    return [e for e in ctx.store.journal(T, S) if e.turn_id == turn]


def changes(ctx: FakeResources, turn: str = "u1") -> list[DefinitionChanged]:
    return [
        DefinitionChanged.from_json(e.data)
        for e in events(ctx, turn)
        if e.type == EventType.TURN_DEFINITION_CHANGED
    ]


# -- the registry -------------------------------------------------------------------


def test_a_name_in_several_versions_the_last_declared_is_the_latest() -> None:
    reg = AgentRegistry([V1, V2])
    assert reg.get("support") is V2
    assert reg.get("support", "1") is V1
    assert reg.versions("support") == [V1, V2]
    assert reg.hashes == sorted([V1.definition_hash, V2.definition_hash])
    assert reg.names() == ["support"]
    with pytest.raises(UnknownAgent, match="version '3'"):
        reg.get("support", "3")
    with pytest.raises(DefinitionError, match="declared twice"):
        AgentRegistry([V1, dataclasses.replace(V1, instructions="other")])


def test_the_policy_enters_the_hash_only_when_not_the_default() -> None:
    assert "on_deploy" not in V1.describe()
    assert V1_PINNED.describe()["on_deploy"] == "pinned"
    assert V1.definition_hash != V1_PINNED.definition_hash
    assert agent("2", upgrades_from=("1",)).describe()["upgrades_from"] == ["1"]
    with pytest.raises(DefinitionError, match="on_deploy"):
        agent("1", on_deploy="sometimes")


# -- the pure rules -----------------------------------------------------------------


def test_route_rules() -> None:
    reg = AgentRegistry([V2])
    common = dict(agent_name="support", agent_hash=V1.definition_hash, agent_version="1")
    live = {V1.definition_hash}
    r = route(
        reg,
        **common,
        on_deploy="upgrade",
        upgrade_requested=False,
        live_hashes=live,
        live_names={"support"},
    )
    assert r.route is Route.HAND_ON
    r = route(
        reg,
        **common,
        on_deploy="upgrade",
        upgrade_requested=False,
        live_hashes=set(),
        live_names=set(),
    )
    assert r.route is Route.MOVE and r.move is not None
    assert r.move.target is V2 and r.move.reason is MoveReason.NOT_SERVED
    r = route(
        reg,
        **common,
        on_deploy="pinned",
        upgrade_requested=False,
        live_hashes=set(),
        live_names=set(),
    )
    assert r.route is Route.HOLD
    r = route(
        reg,
        **common,
        on_deploy="pinned",
        upgrade_requested=True,
        live_hashes=set(),
        live_names=set(),
    )
    assert r.route is Route.MOVE and r.move is not None and r.move.reason is MoveReason.REQUESTED
    r = route(
        AgentRegistry([agent("2", upgrades_from=("0",))]),
        **common,
        on_deploy="upgrade",
        upgrade_requested=False,
        live_hashes=set(),
        live_names=set(),
    )
    assert r.route is Route.FAIL and r.code is ErrorCode.AGENT_CHANGED
    r = route(
        AgentRegistry(
            [
                agent("1").__class__(
                    name="other", version="1", provider="demo", model="m", instructions="x"
                )
            ]
        ),
        **common,
        on_deploy="upgrade",
        upgrade_requested=False,
        live_hashes=set(),
        live_names=set(),
    )
    assert r.route is Route.FAIL and r.code is ErrorCode.AGENT_REMOVED
    # pinned, and another live worker still declares the name: held, not failed
    r = route(
        AgentRegistry([]),
        **common,
        on_deploy="pinned",
        upgrade_requested=False,
        live_hashes=set(),
        live_names={"support"},
    )
    assert r.route is Route.HOLD


def test_move_at_safe_point_rules() -> None:
    reg = AgentRegistry([V1, V2])
    assert move_at_safe_point(reg, V2, on_deploy="upgrade", upgrade_requested=False) is None
    m = move_at_safe_point(reg, V1, on_deploy="upgrade", upgrade_requested=False)
    assert m is not None and m.target is V2 and m.reason is MoveReason.NEWER_VERSION
    assert move_at_safe_point(reg, V1, on_deploy="pinned", upgrade_requested=False) is None
    m = move_at_safe_point(reg, V1, on_deploy="pinned", upgrade_requested=True)
    assert m is not None and m.reason is MoveReason.REQUESTED
    strict = AgentRegistry([V1, agent("2", upgrades_from=())])
    assert move_at_safe_point(strict, V1, on_deploy="upgrade", upgrade_requested=False) is None


# -- the lane and the runner --------------------------------------------------------


def test_served_side_by_side_an_upgrade_turn_moves_before_its_first_model_call() -> None:
    ctx = ctx_of(V1, V2)
    admit(ctx, V1)
    assert run_session(ctx, T, S) is RunOutcome.RAN
    turn = ctx.store.turn(T, S, "u1")
    assert turn.state is TurnState.COMPLETED
    assert turn.agent_hash == V2.definition_hash and turn.agent_version == "2"
    (change,) = changes(ctx)
    assert (change.from_hash, change.to_hash) == (V1.definition_hash, V2.definition_hash)
    assert (change.from_version, change.to_version, change.reason) == ("1", "2", "newer_version")
    kinds = [e.type for e in events(ctx)]
    assert kinds.index(EventType.TURN_DEFINITION_CHANGED) < kinds.index(EventType.MODEL_COMPLETED)
    assert [v for v, _ in ran] == ["2"]
    assert turn.result is not None and turn.result["text"] == 'support v2 after {"probe": "2"}'
    ctx.store.check_invariants()


def test_served_side_by_side_a_pinned_turn_finishes_on_its_own_definition() -> None:
    ctx = ctx_of(V1_PINNED, V2)
    admit(ctx, V1_PINNED)
    assert run_session(ctx, T, S) is RunOutcome.RAN
    turn = ctx.store.turn(T, S, "u1")
    assert turn.state is TurnState.COMPLETED and turn.agent_hash == V1_PINNED.definition_hash
    assert changes(ctx) == [] and [v for v, _ in ran] == ["1"]
    ctx.store.check_invariants()


def test_a_tool_call_asked_for_before_the_deploy_runs_on_the_old_tool_then_the_turn_moves() -> None:
    # first delivery on a v1-only worker dies after the model asked for the probe
    old = ctx_of(V1)
    admit(old, V1)
    old.store.crash_before("append", 2)  # the probe's result is the 2nd step commit
    with pytest.raises(Crash):
        run_session(old, T, S)
    # the new build serves both: the pending call runs on v1's tool, then the move
    new = redeployed(old, V1, V2)
    assert run_session(new, T, S) is RunOutcome.RAN
    turn = new.store.turn(T, S, "u1")
    assert turn.state is TurnState.COMPLETED and turn.agent_hash == V2.definition_hash
    kinds = [e.type for e in events(new)]
    tool_at = kinds.index(EventType.TOOL_COMPLETED)
    assert kinds.index(EventType.TURN_DEFINITION_CHANGED) == tool_at + 1
    # the idempotent probe ran again after the crash, on v1's tool both times
    assert [v for v, _ in ran] == ["1", "1"]
    assert len(changes(new)) == 1
    new.store.check_invariants()


def test_served_by_no_live_worker_an_upgrade_turn_moves_at_once_and_the_lane_goes_on() -> None:
    ctx = ctx_of(V2)
    admit(ctx, V1, "u1")
    admit(ctx, V2, "u2")
    assert run_session(ctx, T, S) is RunOutcome.RAN
    first, second = ctx.store.turn(T, S, "u1"), ctx.store.turn(T, S, "u2")
    assert first.state is TurnState.COMPLETED and second.state is TurnState.COMPLETED
    (change,) = changes(ctx, "u1")
    assert change.reason == "not_served" and change.from_version == "1"
    # the move is the attempt's first write: nothing ran on the old definition
    kinds = [e.type for e in events(ctx, "u1")]
    assert kinds[:3] == [
        EventType.TURN_ACCEPTED,
        EventType.TURN_STARTED,
        EventType.TURN_DEFINITION_CHANGED,
    ]
    assert changes(ctx, "u2") == []
    ctx.store.check_invariants()


def test_not_served_here_but_by_a_live_worker_the_session_is_handed_on_untouched() -> None:
    ctx = ctx_of(V2, fleet=({V1.definition_hash}, {"support"}))
    admit(ctx, V1)
    assert run_session(ctx, T, S) is RunOutcome.HANDED_ON
    assert ctx.handed_on == [(T, S, V1.definition_hash)]
    turn = ctx.store.turn(T, S, "u1")
    assert turn.state is TurnState.QUEUED and turn.attempt == 0 and turn.revision == 0
    assert [e.type for e in events(ctx)] == [EventType.TURN_ACCEPTED]


def test_a_pinned_turn_nobody_serves_is_held_then_cancellable_then_runs_when_served() -> None:
    ctx = ctx_of(V2)
    admit(ctx, V1_PINNED)
    assert run_session(ctx, T, S) is RunOutcome.HELD
    turn = ctx.store.turn(T, S, "u1")
    assert turn.state is TurnState.QUEUED and turn.attempt == 0
    assert ctx.enqueued == [] and ctx.handed_on == []
    # a worker serving it comes back: the same turn runs on its own definition
    back = redeployed(ctx, V1_PINNED, V2)
    assert run_session(back, T, S) is RunOutcome.RAN
    turn = back.store.turn(T, S, "u1")
    assert turn.state is TurnState.COMPLETED and turn.agent_hash == V1_PINNED.definition_hash
    assert changes(back) == []
    back.store.check_invariants()


def test_a_held_running_turn_asked_to_stop_is_cancelled_by_the_next_delivery() -> None:
    old = ctx_of(V1_PINNED)
    admit(old, V1_PINNED)
    old.store.crash_before("append", 1)
    with pytest.raises(Crash):
        run_session(old, T, S)
    assert old.store.turn(T, S, "u1").state is TurnState.RUNNING
    old.store.request_cancel(T, S, "u1")
    ctx = redeployed(old, V2)
    assert run_session(ctx, T, S) is RunOutcome.RAN
    assert ctx.store.turn(T, S, "u1").state is TurnState.CANCELLED
    ctx.store.check_invariants()


def test_an_agent_nobody_declares_fails_at_once_agent_removed() -> None:
    gone = AgentDefinition(
        name="gone",
        version="1",
        provider="demo",
        model="unit-deploy",
        instructions="x",
        tools=(_probe("1"),),
    )
    ctx = ctx_of(V2)
    admit(ctx, gone, "u1")
    admit(ctx, gone, "u2")
    assert run_session(ctx, T, S) is RunOutcome.RAN
    for turn_id in ("u1", "u2"):  # each at once, in lane order
        turn = ctx.store.turn(T, S, turn_id)
        assert turn.state is TurnState.FAILED and turn.attempt == 0
        assert turn.error is not None and turn.error["code"] == ErrorCode.AGENT_REMOVED
    ctx.store.check_invariants()


def test_a_move_the_newest_version_forbids_fails_at_once_agent_changed() -> None:
    ctx = ctx_of(agent("2", upgrades_from=("0",)))
    admit(ctx, V1)
    assert run_session(ctx, T, S) is RunOutcome.RAN
    turn = ctx.store.turn(T, S, "u1")
    assert turn.state is TurnState.FAILED and turn.attempt == 0
    assert turn.error is not None and turn.error["code"] == ErrorCode.AGENT_CHANGED
    assert "upgrades_from" in turn.error["message"]


def test_an_approval_bound_to_a_tool_that_changed_is_asked_again() -> None:
    gated1 = agent("1", probe=_probe("1", approval=True))
    gated2 = agent("2", probe=_probe("2", approval=True))
    old = ctx_of(gated1)
    admit(old, gated1)
    assert run_session(old, T, S) is RunOutcome.RAN
    turn = old.store.turn(T, S, "u1")
    assert turn.state is TurnState.WAITING and turn.pending_input is not None
    old.store.answer(T, S, "u1", turn.pending_input.request_id, {"approved": True})
    # v1 is gone from every worker: the turn moves, and the approval given for v1's
    # probe is not applied to v2's: it is asked again, bound to v2's
    new = redeployed(old, gated2)
    assert run_session(new, T, S) is RunOutcome.RAN
    turn = new.store.turn(T, S, "u1")
    assert turn.state is TurnState.WAITING and ran == []
    assert turn.pending_input is not None and turn.pending_input.tool["version"] == "2"
    new.store.answer(T, S, "u1", turn.pending_input.request_id, {"approved": True})
    assert run_session(new, T, S) is RunOutcome.RAN
    assert new.store.turn(T, S, "u1").state is TurnState.COMPLETED
    assert [v for v, _ in ran] == ["2"]
    new.store.check_invariants()


def test_a_rollback_moves_a_newer_upgrade_turn_back_once_no_worker_serves_it() -> None:
    # v2 turns after v2's build is rolled back: while a v2 worker lives they go to it,
    # once none does an upgrade turn moves to v1, a pinned one is held
    v2 = ctx_of(V1, V2)
    admit(v2, V2, "u1")
    admit(v2, V2, "u2")
    alive = redeployed(v2, V1, fleet=({V2.definition_hash}, {"support"}))
    assert run_session(alive, T, S) is RunOutcome.HANDED_ON
    back = redeployed(v2, V1)
    assert run_session(back, T, S) is RunOutcome.RAN
    for turn_id in ("u1", "u2"):
        turn = back.store.turn(T, S, turn_id)
        assert turn.state is TurnState.COMPLETED and turn.agent_version == "1"
        (change,) = changes(back, turn_id)
        assert (change.from_version, change.to_version, change.reason) == ("2", "1", "not_served")
        assert turn.result is not None and turn.result["text"].startswith("support v1")
    back.store.check_invariants()
