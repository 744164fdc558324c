"""Helpers of the deploy scenarios (test_rolling_deploy.py, test_deploy_points.py):
admission under a build's agents module, answers, and what a turn's journal says of
the definitions it ran on."""

from __future__ import annotations

import importlib
import uuid
from types import ModuleType
from typing import Any

from tests.chaos.conftest import Chaos
from turnkeep.runtime import admission
from turnkeep.runtime.admission import TurnInput
from turnkeep.runtime.agents.registry import load_agents
from turnkeep.runtime.payloads import DefinitionChanged
from turnkeep.runtime.states import EventType
from turnkeep.store.new_turn import NewTurn

BUILD_A = {"TURNKEEP_AGENTS": "tests.deploys.build_a"}
BUILD_B = {"TURNKEEP_AGENTS": "tests.deploys.build_b"}
BUILD_C = {"TURNKEEP_AGENTS": "tests.deploys.build_c"}


def definition_module(build: str) -> ModuleType:
    return importlib.import_module(f"tests.deploys.{build}")


def definition(build: str, agent: str, version: str | None = None) -> Any:
    return load_agents(f"tests.deploys.{build}").get(agent, version)


def admit(chaos: Chaos, build: str, sid: str, agent: str, text: str) -> str:
    """A turn of ``agent`` as an API process running ``build`` admits it (its latest
    version), then enqueued by ids."""
    a = definition(build, agent)
    tid = uuid.uuid4().hex
    turn_input = TurnInput([{"role": "user", "content": text}])
    chaos.store.turns.admit(
        NewTurn(
            tenant_id=chaos.tenant,
            session_id=sid,
            turn_id=tid,
            agent_name=a.name,
            agent_hash=a.definition_hash,
            input_hash=admission.identity_hash(
                turn_input, agent_hash=a.definition_hash, output_schema=None, budget=None
            ),
            input=turn_input.to_json(),
            submitted_by="chaos",
            agent_version=a.version,
            on_deploy=a.on_deploy.value,
        )
    )
    chaos.accepted.append((chaos.tenant, sid, tid))
    chaos.client.enqueue(chaos.tenant, sid)
    return tid


def answer(chaos: Chaos, sid: str, tid: str, response: dict[str, Any]) -> None:
    """Answer the turn's open request as its starter, and enqueue the session."""
    turn = chaos.store.reads.get_turn(chaos.tenant, sid, tid)
    assert turn.pending_input is not None, turn
    chaos.store.turns.resolve_input(
        chaos.tenant,
        sid,
        tid,
        turn.pending_input.request_id,
        response=response,
        subject="chaos",
    )
    chaos.client.enqueue(chaos.tenant, sid)


def moves(chaos: Chaos, sid: str, tid: str) -> list[tuple[DefinitionChanged, str]]:
    """Each ``turn.definition_changed`` of the turn, with the type of the step event
    after it (a safe point: a model call's outcome; a later attempt's turn.started in
    between, after a crash, is not a step)."""
    events = chaos.store.reads.turn_events(chaos.tenant, sid, tid)
    out = []
    for i, e in enumerate(events):
        if e.type == EventType.TURN_DEFINITION_CHANGED:
            later = [x.type for x in events[i + 1 :] if x.type != EventType.TURN_STARTED]
            out.append((DefinitionChanged.from_json(e.data), later[0] if later else ""))
    return out
