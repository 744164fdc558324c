"""The lane under max_running (worker/lane.py, docs/flow-control.md), against the
in-memory store: a head under no limit starts in the one ordinary statement; one under
its tenant's or its agent's limit is left out of it and started by ``start_limited``
(the locked count: Postgres's, stood in for here, held to it by
tests/integration/test_max_running.py); a refusal holds the session and writes
nothing; a limited turn that ends wakes its scopes; a taken-over running head is not
counted against itself."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.fakes import FakeResources
from turnkeep.runtime.agents.registry import AgentRegistry
from turnkeep.runtime.demo import AGENTS as DEMO_AGENTS
from turnkeep.runtime.settings import Settings
from turnkeep.runtime.states import TurnState
from turnkeep.store.records import LaneStarted
from turnkeep.worker.lane import RunOutcome, run_session

T, S = "t1", "s1"
DEMO = DEMO_AGENTS[0]
CAPPED = dataclasses.replace(DEMO, name="capped", max_running=1)


def resources(limit: int | None = None) -> FakeResources:
    registry = AgentRegistry([DEMO, CAPPED])
    return FakeResources(
        agents=registry,
        settings=Settings(worker={"max_attempts": 3}, limits={"max_running_per_tenant": limit}),
    )


def locked_start(
    ctx: FakeResources, held_by: str | None, room: bool = True
) -> tuple[list[dict[str, Any]], Callable[..., tuple[LaneStarted | None, str | None, bool]]]:
    """A ``start_limited`` that refuses with ``held_by``, or (None) starts the head as
    the locked statement would; every call's keywords recorded."""
    calls: list[dict[str, Any]] = []

    def start_limited(
        tenant_id: str, session_id: str, fence: int, **kw: Any
    ) -> tuple[LaneStarted | None, str | None, bool]:
        calls.append(kw)
        if held_by is not None:
            return None, held_by, False
        started = ctx.store.turns.start(
            tenant_id,
            session_id,
            fence,
            claim=False,
            agent_hashes=kw["agent_hashes"],
            max_attempts=kw["max_attempts"],
        )
        return started, None, room

    return calls, start_limited


def test_with_no_limit_the_head_starts_in_the_one_statement_and_wakes_nobody(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = resources()
    calls, fake = locked_start(ctx, None)
    monkeypatch.setattr(ctx.store.max_running, "start_limited", fake, raising=False)
    ctx.store.admit(T, S, "u1", DEMO, "Weather in Oslo?")
    assert run_session(ctx, T, S) is RunOutcome.RAN
    assert calls == [] and ctx.held_woken == [] and ctx.held == []
    # every served hash but the one an agent's limit covers
    assert ctx.store.start_calls[0]["agent_hashes"] == [DEMO.definition_hash]
    assert ctx.store.calls["start"] == 1
    assert ctx.store.reads.get_turn(T, S, "u1").state is TurnState.COMPLETED


def test_at_the_tenants_limit_the_session_is_held_and_nothing_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = resources(limit=2)
    calls, fake = locked_start(ctx, "tenant")
    monkeypatch.setattr(ctx.store.max_running, "start_limited", fake, raising=False)
    ctx.store.admit(T, S, "u1", DEMO, "Weather in Oslo?")
    assert run_session(ctx, T, S) is RunOutcome.LIMITED
    # the ordinary statement claimed the fence and started nothing: no hash was served
    assert ctx.store.start_calls[0]["agent_hashes"] == []
    assert [(c["tenant_max"], c["agent_max"], c["agent_name"]) for c in calls] == [
        (2, None, "demo")
    ]
    assert ctx.held == [(T, S, None)] and ctx.held_woken == [] and ctx.held_left == []
    assert ctx.store.reads.get_turn(T, S, "u1").state is TurnState.QUEUED
    assert ctx.store.calls["append"] == 0
    assert ctx.enqueued == []  # held, not sent again: no polling


def test_below_the_limit_the_turn_runs_and_its_end_wakes_its_scopes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = resources(limit=2)
    calls, fake = locked_start(ctx, None)
    monkeypatch.setattr(ctx.store.max_running, "start_limited", fake, raising=False)
    ctx.store.admit(T, S, "u1", DEMO, "Weather in Oslo?")
    assert run_session(ctx, T, S) is RunOutcome.RAN
    assert len(calls) == 1
    assert ctx.store.reads.get_turn(T, S, "u1").state is TurnState.COMPLETED
    assert ctx.held_woken == [(T, "demo")]
    # started: out of the held sets whichever path sent it, and the room left wakes on
    assert ctx.held_left == [(T, S, "demo", True)]


def test_an_agents_limit_leaves_only_its_hash_out_and_holds_in_its_scope(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = resources()
    calls, fake = locked_start(ctx, "agent")
    monkeypatch.setattr(ctx.store.max_running, "start_limited", fake, raising=False)
    ctx.store.admit(T, S, "u1", CAPPED, "Weather in Oslo?")
    assert run_session(ctx, T, S) is RunOutcome.LIMITED
    assert ctx.store.start_calls[0]["agent_hashes"] == [DEMO.definition_hash]
    assert [(c["tenant_max"], c["agent_max"]) for c in calls] == [(None, 1)]
    assert ctx.held == [(T, S, "capped")]


def test_a_running_head_taken_over_holds_its_slot_and_is_not_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx = resources(limit=1)
    calls, fake = locked_start(ctx, None)
    monkeypatch.setattr(ctx.store.max_running, "start_limited", fake, raising=False)
    ctx.store.admit(T, S, "u1", DEMO, "Weather in Oslo?")
    # an earlier holder started the turn and died with it running
    ctx.store.turns.start(T, S, 1, claim=True, agent_hashes=ctx.agents.hashes, max_attempts=3)
    ctx.leases.counter = 1
    assert run_session(ctx, T, S) is RunOutcome.RAN
    assert [(c["tenant_max"], c["agent_max"]) for c in calls] == [(None, None)]
    turn = ctx.store.reads.get_turn(T, S, "u1")
    assert (turn.state, turn.attempt) == (TurnState.COMPLETED, 2)
    assert ctx.held_woken == [(T, "demo")]
    assert ctx.held_left == []  # it held its slot all along: never held
